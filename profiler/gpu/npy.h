#pragma once

// NumPy .npy (format 1.0) for the GPU runner's inputs and outputs: little-endian, C order. Bundle dtypes map to
// NumPy descriptors (f32 -> "<f4", bf16 -> "<V2" since NumPy has no bfloat16, pred -> "|b1").
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace fusionscope::profiler::gpu {

// The .npy descriptor of a bundle dtype; empty when unknown.
std::string npyDescriptor(const std::string& dtype);

// The whole .npy file for `data` (which must hold exactly product(dims) elements of `dtype`).
StatusOr<std::string> encodeNpy(const std::string& dtype, const std::vector<int64_t>& dims, std::string_view data);

struct NpyArray {
  std::string descriptor;
  std::vector<int64_t> dims;
  std::string data;
};

// Parses a .npy file (format 1.x or 2.x, C order); errors name `name`.
StatusOr<NpyArray> decodeNpy(std::string_view bytes, const std::string& name);

}  // namespace fusionscope::profiler::gpu
