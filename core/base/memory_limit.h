#pragma once

#include <cstdint>
#include <string>

namespace fusionscope {

// The memory this process may use: physical memory, or the address-space limit (`ulimit -v`) when that is lower.
// Work whose size comes from input (evaluator buffers, decompressed traces) is refused beyond a share of it with
// a message, instead of failing an allocation and aborting.
double memoryLimitBytes();

// "12.0 GB": decimal units, one decimal, for messages.
std::string humanBytes(double bytes);

}  // namespace fusionscope
