#include "core/base/message_text.h"

#include <fmt/format.h>

namespace fusionscope {

std::string shortenedForMessage(std::string_view text, size_t maxLength) {
  if (text.size() <= maxLength) return std::string(text);
  return fmt::format("{}… ({} characters)", text.substr(0, maxLength), text.size());
}

std::string withLongWordsShortened(std::string_view message, size_t maxLength) {
  std::string out;
  out.reserve(std::min(message.size(), size_t{1024}));
  size_t at = 0;
  while (at < message.size()) {
    size_t end = message.find_first_of(" \n", at);
    if (end == std::string_view::npos) end = message.size();
    out += shortenedForMessage(message.substr(at, end - at), maxLength);
    if (end < message.size()) out += message[end];
    at = end + 1;
  }
  return out;
}

size_t firstInvalidUtf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = bytes[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // no overlong forms
      if (c == 0xED) high = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;   // no overlong forms
      if (c == 0xF4) high = 0x8F;  // nothing past U+10FFFF
    } else {
      return i;
    }
    if (i + length > n || bytes[i + 1] < low || bytes[i + 1] > high) return i;
    for (size_t k = 2; k < length; ++k) {
      if (bytes[i + k] < 0x80 || bytes[i + k] > 0xBF) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace fusionscope
