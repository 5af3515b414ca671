#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace fusionscope::core {

// IDX element type codes (the third magic byte), as in the MNIST files.
inline constexpr uint8_t kIdxUInt8 = 0x08;
inline constexpr uint8_t kIdxInt8 = 0x09;
inline constexpr uint8_t kIdxInt16 = 0x0B;
inline constexpr uint8_t kIdxInt32 = 0x0C;
inline constexpr uint8_t kIdxFloat32 = 0x0D;
inline constexpr uint8_t kIdxFloat64 = 0x0E;

// Bytes per element for an IDX type code; 0 for an unknown code.
int idxElementBytes(uint8_t typeCode);

// One IDX array: the element type code, the dimensions (outermost first, at most 255 of them) and the
// element bytes exactly as stored in the file, i.e. big-endian for the multi-byte types. Invariant after
// readIdx/parseIdx: data.size() == product(dims) * idxElementBytes(typeCode); writeIdx checks the same.
struct IdxArray {
  uint8_t typeCode = kIdxUInt8;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;

  int64_t elementCount() const;
};

// Parses IDX bytes, gzip-compressed or not (recognised by the gzip magic, not the file name). `name` only
// labels errors, which read `NAME: error: WHAT`.
StatusOr<IdxArray> parseIdx(std::string_view bytes, std::string_view name);
StatusOr<IdxArray> readIdx(const std::string& path);

// Writes atomically (writeFileAtomic), gzip-compressed when `gzip` is set.
Status writeIdx(const std::string& path, const IdxArray& array, bool gzip);

// gzip-compresses a whole buffer (zlib); fusionscope::gunzip (core/base/gzip.h) reads it back. `name` labels errors.
StatusOr<std::string> gzipCompress(std::string_view bytes, std::string_view name);

}  // namespace fusionscope::core
