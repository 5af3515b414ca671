#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

// One array of a NumPy .npy file: element type, dimensions (C order, row-major) and the raw little-endian
// element bytes. Invariant after readNpy/parseNpy: bytes.size() == product(dims) * element size; a
// zero-dimensional array (dims empty) holds one element. writeNpy checks the same before writing.
struct NpyArray {
  PrimitiveType type = PrimitiveType::kInvalid;
  std::vector<int64_t> dims;
  std::string bytes;

  int64_t elementCount() const;
};

// The .npy dtype string for `type` ("<f4" for kF32, "|u1" for kU8, "|b1" for kPred), or empty when .npy
// cannot hold it. Supported: pred, s8/s16/s32/s64, u8/u16/u32/u64, f16, f32, f64, c64, c128.
std::string_view npyDescr(PrimitiveType type);

// Parses the bytes of a .npy file (format 1.0, 2.0 or 3.0). `name` only labels errors, which read
// `NAME: error: WHAT` ("x.npy: error: unsupported dtype '>f4' (big-endian)"). Fortran-order arrays,
// big-endian dtypes, object/structured dtypes and data that does not match the header are rejected.
StatusOr<NpyArray> parseNpy(std::string_view bytes, std::string_view name);
StatusOr<NpyArray> readNpy(const std::string& path);

// The bytes of a .npy file for `array`: format 1.0, or 2.0 when the header does not fit 1.0's 16-bit
// length; the header is padded so that the data starts at a multiple of 64 bytes, as NumPy does.
StatusOr<std::string> serializeNpy(const NpyArray& array, std::string_view name);
// Writes atomically (writeFileAtomic): a reader never sees half a file.
Status writeNpy(const std::string& path, const NpyArray& array);

}  // namespace fusionscope::core
