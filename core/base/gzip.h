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

// The largest decompressed input we accept by default: a quarter of memoryLimitBytes() (the parsed form takes
// several times the text), at least 64 MB.
size_t defaultInflateLimit();

}  // namespace fusionscope
