#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fusionscope::profiler {

// Appends `text` as a quoted JSON string, escaping quotes, backslashes and control characters; well-formed UTF-8
// passes through and each byte that does not start a well-formed sequence becomes U+FFFD.
void appendJsonString(std::string& out, std::string_view text);

// Parses a decimal microsecond value ("123", "123.4567", "-5", "1.5e3") into nanoseconds, rounding half away from
// zero. Plain decimals are parsed digit by digit rather than through a double: Kineto timestamps are ~1.7e15 µs,
// where a double cannot hold nanoseconds. Returns nullopt for anything that is not a number or overflows.
std::optional<int64_t> parseMicrosToNanos(std::string_view text);

// Appends nanoseconds as microseconds with ns precision ("1234.567", "1234" when whole, "-0.5"), the form Kineto
// writes and parseMicrosToNanos reads back exactly.
void appendNanosAsMicros(std::string& out, int64_t ns);

}  // namespace fusionscope::profiler
