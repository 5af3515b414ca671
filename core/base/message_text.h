#pragma once

#include <string>
#include <string_view>

namespace fusionscope {

// A name or number from input as it goes into a message: whole when it is at most `maxLength` characters, else
// its start, an ellipsis and its length (`xxxx… (30000 characters)`), so that one message stays one readable line.
std::string shortenedForMessage(std::string_view text, size_t maxLength = 80);

// The same applied to every space-separated word of a message longer than `maxLength`.
std::string withLongWordsShortened(std::string_view message, size_t maxLength = 120);

// The offset of the first byte that does not begin a well-formed UTF-8 sequence (overlong forms, surrogates and
// code points past U+10FFFF included), or std::string_view::npos when all of `text` is UTF-8. Parsers that only say
// "invalid UTF-8" use it to put the line and column on the byte.
size_t firstInvalidUtf8(std::string_view text);

}  // namespace fusionscope
