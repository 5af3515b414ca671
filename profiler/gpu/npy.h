#pragma once

// NumPy .npy files for the GPU runner's inputs and outputs, through the project's one codec
// (core/base/npy_format.h): bundle dtypes map to NumPy descriptors (f32 -> "<f4", bf16 -> "<V2" since NumPy has
// no bfloat16, pred -> "|b1").
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/npy_format.h"
#include "core/base/status.h"

namespace fusionscope::profiler::gpu {

// The .npy descriptor of a bundle dtype; empty when unknown.
std::string npyDescriptor(const std::string& dtype);

// The whole .npy file for `data` (which must hold exactly product(dims) elements of `dtype`).
StatusOr<std::string> encodeNpy(const std::string& dtype, const std::vector<int64_t>& dims, std::string_view data);

// Parses a .npy file (format 1.x, 2.x or 3.x, C order, little-endian); errors name `name`.
inline StatusOr<NpyFile> decodeNpy(std::string_view bytes, const std::string& name) {
  return decodeNpyFile(bytes, name);
}

}  // namespace fusionscope::profiler::gpu
