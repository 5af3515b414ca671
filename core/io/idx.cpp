#include "core/io/idx.h"

#include <zlib.h>

#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/base/file_util.h"
#include "core/base/gzip.h"

namespace fusionscope::core {
namespace {

constexpr size_t kChunk = 1 << 16;

Status error(std::string_view name, std::string_view what) {
  return Status::error(fmt::format("{}: error: {}", name, what));
}


std::optional<int64_t> checkedElementCount(const std::vector<int64_t>& dims, int elementBytes) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / elementBytes / d) return std::nullopt;
    count *= d;
  }
  return count;
}

StatusOr<IdxArray> parsePlainIdx(std::string_view bytes, std::string_view name) {
  auto byteAt = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if (bytes.size() < 4)
    return error(name, fmt::format("not an IDX file: {} bytes, too short for the magic", bytes.size()));
  if (byteAt(0) != 0 || byteAt(1) != 0) {
    return error(name, fmt::format("not an IDX file: magic {:02x}{:02x}{:02x}{:02x} does not start with 0000",
                                   byteAt(0), byteAt(1), byteAt(2), byteAt(3)));
  }
  IdxArray array;
  array.typeCode = byteAt(2);
  int elementBytes = idxElementBytes(array.typeCode);
  if (elementBytes == 0) return error(name, fmt::format("unknown IDX element type 0x{:02x}", array.typeCode));
  size_t rank = byteAt(3);
  size_t headerSize = 4 + 4 * rank;
  if (bytes.size() < headerSize) {
    return error(name, fmt::format("truncated IDX header: {} dimensions need {} bytes, file has {}", rank, headerSize,
                                   bytes.size()));
  }
  for (size_t i = 0; i < rank; ++i) {
    size_t at = 4 + 4 * i;
    uint32_t d = (uint32_t{byteAt(at)} << 24) | (uint32_t{byteAt(at + 1)} << 16) | (uint32_t{byteAt(at + 2)} << 8) |
                 uint32_t{byteAt(at + 3)};
    if (d > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
      return error(name, fmt::format("IDX dimension {} is negative ({})", i, static_cast<int32_t>(d)));
    }
    array.dims.push_back(d);
  }
  std::optional<int64_t> count = checkedElementCount(array.dims, elementBytes);
  if (!count) return error(name, fmt::format("IDX dimensions [{}] are too large", fmt::join(array.dims, ", ")));
  uint64_t expected = static_cast<uint64_t>(*count) * static_cast<uint64_t>(elementBytes);
  std::string_view data = bytes.substr(headerSize);
  if (data.size() != expected) {
    return error(name, fmt::format("data is {} bytes, header says {} (dimensions [{}], {} bytes per element)",
                                   data.size(), expected, fmt::join(array.dims, ", "), elementBytes));
  }
  array.data.assign(data.begin(), data.end());
  return array;
}

}  // namespace

int idxElementBytes(uint8_t typeCode) {
  switch (typeCode) {
    case kIdxUInt8:
    case kIdxInt8: return 1;
    case kIdxInt16: return 2;
    case kIdxInt32:
    case kIdxFloat32: return 4;
    case kIdxFloat64: return 8;
    default: return 0;
  }
}

int64_t IdxArray::elementCount() const {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}


StatusOr<std::string> gzipCompress(std::string_view bytes, std::string_view name) {
  z_stream stream{};
  if (deflateInit2(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return error(name, "cannot initialise zlib");
  }
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  int result = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) return error(name, "gzip compression failed");
  return out;
}

StatusOr<IdxArray> parseIdx(std::string_view bytes, std::string_view name) {
  if (!isGzip(bytes)) return parsePlainIdx(bytes, name);
  StatusOr<std::string> plain = gunzip(bytes, name, defaultInflateLimit(bytes.size()));
  if (!plain.ok()) return plain.status();
  return parsePlainIdx(*plain, name);
}

StatusOr<IdxArray> readIdx(const std::string& path) {
  StatusOr<std::string> content = readFile(path);
  if (!content.ok()) return content.status();
  return parseIdx(*content, path);
}

Status writeIdx(const std::string& path, const IdxArray& array, bool gzip) {
  int elementBytes = idxElementBytes(array.typeCode);
  if (elementBytes == 0) return error(path, fmt::format("unknown IDX element type 0x{:02x}", array.typeCode));
  if (array.dims.size() > 255)
    return error(path, fmt::format("IDX holds at most 255 dimensions, not {}", array.dims.size()));
  for (int64_t d : array.dims) {
    if (d < 0 || d > std::numeric_limits<int32_t>::max()) {
      return error(path, fmt::format("IDX dimension {} does not fit a non-negative int32", d));
    }
  }
  std::optional<int64_t> count = checkedElementCount(array.dims, elementBytes);
  uint64_t expected = count ? static_cast<uint64_t>(*count) * static_cast<uint64_t>(elementBytes) : 0;
  if (!count || array.data.size() != expected) {
    return error(path, fmt::format("data is {} bytes, dimensions [{}] need {}", array.data.size(),
                                   fmt::join(array.dims, ", "), expected));
  }
  std::string content;
  content.reserve(4 + 4 * array.dims.size() + array.data.size());
  content += '\0';
  content += '\0';
  content += static_cast<char>(array.typeCode);
  content += static_cast<char>(array.dims.size());
  for (int64_t d : array.dims) {
    for (int shift = 24; shift >= 0; shift -= 8) content += static_cast<char>((d >> shift) & 0xff);
  }
  content.append(reinterpret_cast<const char*>(array.data.data()), array.data.size());
  if (!gzip) return writeFileAtomic(path, content);
  StatusOr<std::string> compressed = gzipCompress(content, path);
  if (!compressed.ok()) return compressed.status();
  return writeFileAtomic(path, *compressed);
}

}  // namespace fusionscope::core
