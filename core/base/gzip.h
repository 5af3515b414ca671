#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace fusionscope {

// True when `bytes` start with gzip's magic number.
bool isGzip(std::string_view bytes);

// Inflates every member of a gzip stream (`cat a.gz b.gz` is a valid file). Stops and refuses as soon as the
// output would pass `maxBytes` (a gzip bomb never gets allocated); `extraCapacity` bytes are reserved past the end
// for parsers that read ahead. Errors read `NAME: error: ...`.
StatusOr<std::string> gunzip(std::string_view compressed, std::string_view name, size_t maxBytes,
                             size_t extraCapacity = 0);

// The first `bytes` bytes of the decompressed stream (fewer when it is shorter), for a look at what it holds before
// inflating it all.
StatusOr<std::string> gunzipPrefix(std::string_view compressed, std::string_view name, size_t bytes);

// `bytes` as one gzip member (zlib's default level), as pprof and other readers of .gz expect.
StatusOr<std::string> gzipCompress(std::string_view bytes);

// The largest decompressed size we accept for `compressedBytes` of gzip: a quarter of memoryLimitBytes() (the
// parsed form takes several times the text), and no more than 100 times the compressed size once past 256 MB (real
// traces compress 5-30 times; a bomb of zeros 1000 times).
size_t defaultInflateLimit(size_t compressedBytes);

}  // namespace fusionscope
