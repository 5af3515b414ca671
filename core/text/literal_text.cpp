#include "core/text/literal_text.h"

#include <bit>
#include <charconv>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fusionscope::core {
namespace {

// An f64 NaN: every exponent bit set; the 52 mantissa bits are the payload XLA's text writes as `nan(0x...)`.
constexpr uint64_t kNanExponentBits = 0x7ff0000000000000;
constexpr uint64_t kNanPayloadMask = (uint64_t{1} << 52) - 1;

class LiteralReader {
 public:
  LiteralReader(TextCursor& cursor, const Shape& shape) : m_cursor(cursor), m_shape(shape) {}

  AttributeResult read(Literal& out) {
    m_cursor.skipSpace();
    const char* start = m_cursor.pos();
    // `{...}`: XLA elided a large constant's values.
    TextCursor probe = m_cursor;
    if (probe.consume('{') && probe.consume('.') && probe.consume('.') && probe.consume('.') && probe.consume('}')) {
      m_cursor = probe;
      out = Literal::elided(m_shape);
      return std::nullopt;
    }
    if (!m_shape.isArray()) {
      // Tuple constants and other rare forms are kept as text.
      int depth = 0;
      const char* p = start;
      while (p < m_cursor.end() && !(depth == 0 && *p == ')')) {
        if (*p == '(' || *p == '{') ++depth;
        if (*p == ')' || *p == '}') --depth;
        ++p;
      }
      out = Literal::raw(m_shape, std::string(start, p));
      m_cursor.setPos(p);
      return std::nullopt;
    }
    bool floating = isFloatingPoint(m_shape.elementType()) || isComplex(m_shape.elementType());
    if (!values(0, floating)) return m_error;
    int64_t count = floating ? static_cast<int64_t>(m_floats.size()) : static_cast<int64_t>(m_ints.size());
    if (isComplex(m_shape.elementType())) count /= 2;
    if (count != m_shape.elementCount()) {
      fail(start, fmt::format("constant of shape {} needs {} value(s), found {}", m_shape.toString(false),
                              m_shape.elementCount(), count));
      return m_error;
    }
    out = floating ? Literal::floats(m_shape, std::move(m_floats)) : Literal::integers(m_shape, std::move(m_ints));
    return std::nullopt;
  }

 private:
  bool fail(const char* at, std::string message) {
    if (!m_error) m_error = AttributeError{at, std::move(message)};
    return false;
  }

  bool expect(char c, std::string_view context) {
    if (m_cursor.consume(c)) return true;
    return fail(m_cursor.missingTokenPosition(),
                fmt::format("expected '{}' {}, found {}", c, context, m_cursor.describeNext()));
  }

  // Nested `{ {1, 2}, {3, 4} }` for arrays (nesting depth = rank), a bare value for scalars.
  bool values(int dim, bool floating) {
    if (dim == m_shape.rank()) return scalar(m_shape.elementType(), floating);
    if (!m_cursor.consume('{') &&
        !expect('{', fmt::format("to open dimension {} of the {} constant", dim, m_shape.toString(false)))) {
      return false;
    }
    if (m_cursor.consume('}')) return true;
    do {
      if (!values(dim + 1, floating)) return false;
    } while (m_cursor.consume(','));
    return m_cursor.consume('}') || expect('}', fmt::format("to close dimension {} of the constant", dim));
  }

  bool scalar(PrimitiveType type, bool floating) {
    if (isComplex(type)) {
      if (!expect('(', "to open a complex value (re, im)")) return false;
      if (!scalar(PrimitiveType::kF64, true)) return false;
      if (!expect(',', "between the parts of a complex value")) return false;
      if (!scalar(PrimitiveType::kF64, true)) return false;
      return expect(')', "to close a complex value");
    }
    m_cursor.skipSpace();
    const char* start = m_cursor.pos();
    const char* p = start;
    while (p < m_cursor.end() && (TextCursor::isNameChar(*p) || *p == '+')) ++p;
    std::string_view token(start, static_cast<size_t>(p - start));
    if (token.empty()) return fail(start, fmt::format("expected a {} value", primitiveTypeName(type)));
    std::string_view digits = token.front() == '+' ? token.substr(1) : token;
    if (floating) {
      double v = 0;
      bool negative = !digits.empty() && digits.front() == '-';
      std::string_view body = negative ? digits.substr(1) : digits;
      if (body == "inf") {
        v = std::numeric_limits<double>::infinity();
      } else if (body == "nan" && p < m_cursor.end() && *p == '(') {
        // `nan(0x1f)`: XLA prints a NaN's payload (its mantissa bits) when it is not the plain quiet NaN.
        const char* close = p;
        while (close < m_cursor.end() && *close != ')' && *close != '\n') ++close;
        uint64_t payload = 0;
        bool valid = close < m_cursor.end() && *close == ')' && close - p > 3 && std::string_view(p, 3) == "(0x";
        if (valid) {
          auto [ptr, ec] = std::from_chars(p + 3, close, payload, 16);
          valid = ec == std::errc() && ptr == close && payload != 0 && payload <= kNanPayloadMask;
        }
        if (!valid) {
          const char* shownEnd = close < m_cursor.end() && *close == ')' ? close + 1 : close;
          return fail(start,
                      fmt::format("invalid NaN payload in '{}' (expected nan(0x1) .. nan(0x{:x}))",
                                  std::string_view(start, static_cast<size_t>(shownEnd - start)), kNanPayloadMask));
        }
        v = std::bit_cast<double>(kNanExponentBits | payload);
        p = close + 1;
      } else if (body == "nan") {
        v = std::numeric_limits<double>::quiet_NaN();
      } else {
        auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (ec != std::errc() || ptr != digits.data() + digits.size()) {
          return fail(start, fmt::format("invalid {} value '{}'", primitiveTypeName(type), token));
        }
      }
      m_floats.push_back(negative && (body == "inf" || body == "nan") ? -v : v);
    } else if (type == PrimitiveType::kPred) {
      if (token == "true" || token == "1") {
        m_ints.push_back(1);
      } else if (token == "false" || token == "0") {
        m_ints.push_back(0);
      } else {
        return fail(start, fmt::format("invalid pred value '{}' (expected true or false)", token));
      }
    } else {
      int64_t v = 0;
      std::from_chars_result r{};
      if (type == PrimitiveType::kU64) {
        uint64_t u = 0;
        r = std::from_chars(digits.data(), digits.data() + digits.size(), u);
        v = static_cast<int64_t>(u);
      } else {
        r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      }
      if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
        return fail(start, fmt::format("invalid {} value '{}'", primitiveTypeName(type), token));
      }
      const int bits = primitiveTypeBitWidth(type);
      if (bits > 0 && bits < 64) {
        const int64_t lo = isSignedInteger(type) ? -(int64_t{1} << (bits - 1)) : 0;
        const int64_t hi = isSignedInteger(type) ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
        if (v < lo || v > hi) {
          return fail(start, fmt::format("{} value {} is out of range [{}, {}]", primitiveTypeName(type), token, lo,
                                         hi));
        }
      }
      m_ints.push_back(v);
    }
    m_cursor.setPos(p);
    return true;
  }

  TextCursor& m_cursor;
  const Shape& m_shape;
  std::vector<double> m_floats;
  std::vector<int64_t> m_ints;
  AttributeResult m_error;
};

}  // namespace

AttributeResult readLiteral(TextCursor& cursor, const Shape& shape, Literal& out) {
  return LiteralReader(cursor, shape).read(out);
}

}  // namespace fusionscope::core
