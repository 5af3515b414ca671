#include "profiler/trace/json_text.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace fusionscope::profiler {

namespace {

// The length of the well-formed UTF-8 sequence that starts at text[i] (Unicode's table 3-7), 0 when there is none.
size_t utf8SequenceLength(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const unsigned c = at(0);
  const auto continuation = [&](size_t k, unsigned low = 0x80, unsigned high = 0xbf) {
    return at(k) >= low && at(k) <= high;
  };
  if (c >= 0xc2 && c <= 0xdf) return continuation(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const bool second = c == 0xe0 ? continuation(1, 0xa0) : c == 0xed ? continuation(1, 0x80, 0x9f) : continuation(1);
    return second && continuation(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const bool second = c == 0xf0 ? continuation(1, 0x90) : c == 0xf4 ? continuation(1, 0x80, 0x8f) : continuation(1);
    return second && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t plainStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      // Names come from input as bytes: a byte that does not start well-formed UTF-8 becomes U+FFFD, so the file
      // written is JSON that every reader accepts.
      const size_t length = utf8SequenceLength(text, i);
      if (length > 0) {
        i += length - 1;
        continue;
      }
      out.append(text, plainStart, i - plainStart);
      out += "\xef\xbf\xbd";
      plainStart = i + 1;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text, plainStart, i - plainStart);
    plainStart = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(text, plainStart, text.size() - plainStart);
  out += '"';
}

namespace {

// Exponent forms ("1.5e3") are rare, so they go through a double; plain decimals never do.
std::optional<int64_t> parseExponentMicros(std::string_view text) {
  double micros = 0;
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), micros);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  double ns = std::round(micros * 1000.0);
  if (!(std::fabs(ns) < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(ns);
}

}  // namespace

std::optional<int64_t> parseMicrosToNanos(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (text[i] == '-' || text[i] == '+') negative = text[i++] == '-';
  constexpr int64_t kMaxMicros = std::numeric_limits<int64_t>::max() / 1000 - 1;
  int64_t micros = 0;
  size_t digits = 0;
  bool overflow = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
    micros = micros * 10 + (text[i] - '0');
    if (micros > kMaxMicros) {
      overflow = true;
      break;
    }
  }
  if (overflow) {
    // Too large for the exact path; only an exponent form with a small value (e.g. "1000000e-3") can still fit.
    return text.find_first_of("eE") != std::string_view::npos ? parseExponentMicros(text) : std::nullopt;
  }
  int64_t fraction = 0;
  int fractionDigits = 0;
  bool roundUp = false;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      if (fractionDigits < 3) {
        fraction = fraction * 10 + (text[i] - '0');
        ++fractionDigits;
      } else if (fractionDigits == 3) {
        roundUp = text[i] >= '5';
        ++fractionDigits;
      }
    }
  }
  if (digits > 0 && i < text.size() && (text[i] == 'e' || text[i] == 'E')) return parseExponentMicros(text);
  if (digits == 0 || i != text.size()) return std::nullopt;
  for (; fractionDigits < 3; ++fractionDigits) fraction *= 10;
  int64_t ns = micros * 1000 + fraction + (roundUp ? 1 : 0);
  return negative ? -ns : ns;
}

void appendNanosAsMicros(std::string& out, int64_t ns) {
  char buffer[32];
  char* p = buffer;
  uint64_t magnitude = ns < 0 ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) *p++ = '-';
  p = std::to_chars(p, buffer + sizeof buffer, magnitude / 1000).ptr;
  auto fraction = static_cast<unsigned>(magnitude % 1000);
  if (fraction != 0) {
    *p++ = '.';
    *p++ = static_cast<char>('0' + fraction / 100);
    *p++ = static_cast<char>('0' + fraction / 10 % 10);
    *p++ = static_cast<char>('0' + fraction % 10);
  }
  out.append(buffer, p);
}

}  // namespace fusionscope::profiler
