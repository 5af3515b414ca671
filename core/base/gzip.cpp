#include "core/base/gzip.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/base/memory_limit.h"

namespace fusionscope {

bool isGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

size_t defaultInflateLimit(size_t compressedBytes) {
  const double byRatio = std::max(256e6, 100.0 * static_cast<double>(compressedBytes));
  return static_cast<size_t>(std::max(64e6, std::min(memoryLimitBytes() / 4, byRatio)));
}

namespace {

// Inflates up to maxBytes; past that, `truncate` returns what fits and otherwise it is an error.
StatusOr<std::string> inflateUpTo(std::string_view compressed, std::string_view name, size_t maxBytes,
                                  size_t extraCapacity, bool truncate) {
  auto error = [&](std::string_view message) { return Status::error(fmt::format("{}: error: {}", name, message)); };
  z_stream stream{};
  // 16 + MAX_WBITS: the gzip wrapper only (a zlib or raw deflate stream is not what a .gz file holds).
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return error("cannot initialise zlib");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(std::min<size_t>(compressed.size(), UINT32_MAX));
  std::string out;
  out.reserve(std::min(maxBytes, compressed.size() * 8) + extraCapacity);
  constexpr size_t kChunk = size_t{1} << 16;
  char buffer[kChunk];
  int result = Z_OK;
  bool tooLarge = false;
  while (true) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = kChunk;
    result = inflate(&stream, Z_NO_FLUSH);
    const size_t produced = kChunk - stream.avail_out;
    if (out.size() + produced > maxBytes) {
      if (truncate) out.append(buffer, maxBytes - out.size());
      tooLarge = true;
      break;
    }
    out.append(buffer, produced);
    if (result == Z_STREAM_END) {
      if (stream.avail_in == 0) break;
      if (inflateReset(&stream) != Z_OK) break;
      continue;
    }
    if (result == Z_BUF_ERROR && stream.avail_in == 0) break;  // input ended inside a member
    if (result != Z_OK) break;
  }
  const std::string message = stream.msg ? stream.msg : "";
  inflateEnd(&stream);
  if (tooLarge && truncate) return out;
  if (tooLarge) {
    return error(
        fmt::format("decompresses to more than {} ({} compressed), the most accepted (100 times the "
                    "compressed size, at most a quarter of the {} memory limit); decompress it yourself if "
                    "it is real data",
                    humanBytes(static_cast<double>(maxBytes)), humanBytes(static_cast<double>(compressed.size())),
                    humanBytes(memoryLimitBytes())));
  }
  if (result == Z_STREAM_END) return out;
  if (result == Z_BUF_ERROR) return error("truncated gzip data");
  return error(fmt::format("corrupt gzip data{}{}", message.empty() ? "" : ": ", message));
}

}  // namespace

StatusOr<std::string> gunzip(std::string_view compressed, std::string_view name, size_t maxBytes,
                             size_t extraCapacity) {
  return inflateUpTo(compressed, name, maxBytes, extraCapacity, false);
}

StatusOr<std::string> gunzipPrefix(std::string_view compressed, std::string_view name, size_t bytes) {
  return inflateUpTo(compressed, name, bytes, 0, true);
}

StatusOr<std::string> gzipCompress(std::string_view bytes) {
  if (bytes.size() > (size_t{1} << 31)) return Status::failedWork("gzip: more than 2 GB to compress at once");
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::failedWork("gzip: cannot initialise zlib");
  }
  std::string out(deflateBound(&stream, static_cast<uLong>(bytes.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  const size_t written = out.size() - stream.avail_out;
  deflateEnd(&stream);
  if (result != Z_STREAM_END) return Status::failedWork("gzip: cannot compress");
  out.resize(written);
  return out;
}

}  // namespace fusionscope
