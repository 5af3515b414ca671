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

}  // namespace fusionscope
