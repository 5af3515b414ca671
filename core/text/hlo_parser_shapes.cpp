#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "core/base/memory_limit.h"
#include "core/text/hlo_parser_state.h"
#include "core/text/literal_text.h"

namespace fusionscope::core::text_internal {

bool Parser::parseShape(Shape& shape, int depth) {
  m_cursor.skipSpace();
  const char* at = m_cursor.pos();
  if (depth > kMaxTupleNesting) {
    return fail(at, fmt::format("tuple shape nested deeper than {} levels", kMaxTupleNesting));
  }
  if (m_cursor.consume('(')) {
    std::vector<Shape> elements;
    if (!m_cursor.consume(')')) {
      do {
        Shape element;
        if (!parseShape(element, depth + 1)) return false;
        elements.push_back(std::move(element));
      } while (m_cursor.consume(','));
      if (!expect(')', "to close tuple shape")) return false;
    }
    shape = Shape::tuple(std::move(elements));
    return true;
  }
  std::string_view typeName = m_cursor.readName();
  if (typeName.empty()) {
    return fail(m_cursor.missingTokenPosition(),
                fmt::format("expected a shape such as f32[2,3], found {}", m_cursor.describeNext()));
  }
  PrimitiveType type = parsePrimitiveType(typeName);
  if (type == PrimitiveType::kInvalid) return fail(at, fmt::format("unknown element type '{}'", typeName));
  if (m_cursor.rawPeek() != '[') {
    const char* after = m_cursor.pos();
    return fail(after,
                fmt::format("expected '[' right after element type '{}', found {}", typeName, m_cursor.describeNext()));
  }
  m_cursor.setPos(m_cursor.pos() + 1);
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  if (!m_cursor.consume(']')) {
    do {
      m_cursor.skipSpace();
      const char* dimAt = m_cursor.pos();
      bool isDynamic = false;
      int64_t d = 0;
      if (m_cursor.consume('?')) {
        d = -1;
      } else {
        if (m_cursor.consume('<')) {
          if (!expect('=', "in dynamic dimension '<=N'")) return false;
          isDynamic = true;
        }
        m_cursor.skipSpace();
        const char sign = m_cursor.rawPeek();
        if (!m_cursor.readInt(d)) {
          return fail(dimAt, fmt::format("expected a dimension size, found {}", m_cursor.describeNext()));
        }
        if (d < 0) return fail(dimAt, fmt::format("negative dimension size {}", d));
        // `-0` and `+4` read as integers but are no dimension size XLA writes.
        if (sign == '-' || sign == '+') return fail(dimAt, "a dimension size is written as digits, without a sign");
      }
      dims.push_back(d);
      if (isDynamic) {
        dynamic.resize(dims.size());
        dynamic.back() = true;
      }
    } while (m_cursor.consume(','));
    if (!expect(']', "to close dimensions")) return false;
  }
  // A shape with a zero dimension holds nothing, whatever the others say.
  int64_t elements = std::find(dims.begin(), dims.end(), 0) != dims.end() ? 0 : 1;
  for (int64_t d : dims) {
    if (elements > 0 && __builtin_mul_overflow(elements, d, &elements)) {
      return fail(at, fmt::format("shape {}[{}] has more than 2^63 elements", typeName, fmt::join(dims, ",")));
    }
  }
  // Sizes in bytes must fit too, with room to add a few (buffer plans sum them): 2^60 bytes, one-byte types
  // included (s8[2^63-1] is 2^63 bytes).
  if (const int64_t width = (primitiveTypeBitWidth(type) + 7) / 8; width >= 1 && elements > (int64_t{1} << 60) / width) {
    return fail(at, fmt::format("shape {}[{}] has more than 2^60 bytes", typeName, fmt::join(dims, ",")));
  }
  shape = Shape(type, std::move(dims));
  for (size_t i = 0; i < dynamic.size(); ++i) {
    if (dynamic[i]) shape.setDynamicDimension(static_cast<int>(i), true);
  }
  if (m_cursor.rawPeek() == '{') return parseLayout(shape);
  return true;
}

bool Parser::skipShape() {
  m_cursor.skipSpace();
  const char* start = m_cursor.pos();
  if (skipSimpleShape()) return true;
  m_cursor.setPos(start);
  Shape ignored;
  return parseShape(ignored);
}

bool Parser::skipSimpleShape(int depth) {
  const char* p = m_cursor.pos();
  const char* end = m_cursor.end();
  if (depth > kMaxTupleNesting) return false;  // parseShape reports it
  if (p < end && *p == '(') {
    m_cursor.setPos(p + 1);
    if (m_cursor.consume(')')) return true;
    do {
      m_cursor.skipSpace();
      if (!skipSimpleShape(depth + 1)) return false;
    } while (m_cursor.consume(','));
    return m_cursor.consume(')');
  }
  const char* typeStart = p;
  while (p < end && TextCursor::isNameChar(*p)) ++p;
  if (p == typeStart || p >= end || *p != '[') return false;
  if (parsePrimitiveType(std::string_view(typeStart, static_cast<size_t>(p - typeStart))) == PrimitiveType::kInvalid) {
    return false;
  }
  ++p;  // '['
  int rank = 0;
  if (p < end && *p != ']') {
    while (true) {
      if (p >= end || *p < '0' || *p > '9') return false;
      while (p < end && *p >= '0' && *p <= '9') ++p;
      ++rank;
      if (p < end && *p == ',') {
        ++p;
        continue;
      }
      break;
    }
  }
  if (p >= end || *p != ']') return false;
  ++p;
  if (p < end && *p == '{') {
    ++p;
    int layoutRank = 0;
    if (p < end && *p != '}') {
      while (true) {
        if (p >= end || *p < '0' || *p > '9') return false;
        while (p < end && *p >= '0' && *p <= '9') ++p;
        ++layoutRank;
        if (p < end && *p == ',') {
          ++p;
          continue;
        }
        break;
      }
    }
    if (p >= end || *p != '}' || (layoutRank != 0 && layoutRank != rank)) return false;
    ++p;
  }
  m_cursor.setPos(p);
  return true;
}

bool Parser::parseLayout(Shape& shape) {
  const char* at = m_cursor.pos();
  m_cursor.setPos(at + 1);
  Layout layout;
  if (m_cursor.peek() != '}' && m_cursor.peek() != ':') {
    do {
      int64_t d = 0;
      const char* dimAt = m_cursor.pos();
      if (!m_cursor.readInt(d)) return fail(dimAt, "expected a dimension number in layout");
      layout.minorToMajor.push_back(d);
    } while (m_cursor.consume(','));
  }
  if (m_cursor.consume(':')) {
    const char* start = m_cursor.pos();
    const char* p = start;
    int depth = 0;
    while (p < m_cursor.end() && !(depth == 0 && *p == '}')) {
      if (*p == '(') ++depth;
      if (*p == ')') --depth;
      if (*p == '\n') break;
      ++p;
    }
    layout.annotations.assign(start, p);
    m_cursor.setPos(p);
  }
  if (!expect('}', "to close layout")) return false;
  if (shape.rank() != static_cast<int>(layout.minorToMajor.size()) && !layout.minorToMajor.empty()) {
    return fail(at, fmt::format("layout {{{}}} has {} dimension(s) but the shape has rank {}",
                                fmt::join(layout.minorToMajor, ","), layout.minorToMajor.size(), shape.rank()));
  }
  // minor_to_major must name every dimension once: anything else has no meaning for the evaluator, codegen
  // or the printer.
  std::vector<bool> seen(layout.minorToMajor.size(), false);
  for (int64_t d : layout.minorToMajor) {
    if (d < 0 || d >= static_cast<int64_t>(seen.size()) || seen[static_cast<size_t>(d)]) {
      return fail(at, fmt::format("layout {{{}}} is not a permutation of the dimensions 0..{}",
                                  fmt::join(layout.minorToMajor, ","), shape.rank() - 1));
    }
    seen[static_cast<size_t>(d)] = true;
  }
  shape.setLayout(std::move(layout));
  return true;
}

}  // namespace fusionscope::core::text_internal
