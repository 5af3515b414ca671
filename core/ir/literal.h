#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/shape.h"

namespace fusionscope::core {

// The value of a `constant` instruction. Array literals are stored typed and flattened in row-major
// (logical) order: floating-point and complex values as doubles (complex interleaved re, im), integers and
// predicates as int64 (u64 keeps its bit pattern). Forms we do not decode (tuple constants) keep their text
// so nothing is lost on printing; `{...}` (XLA's elision of large constants) is remembered as elided.
class Literal {
 public:
  enum class Kind : uint8_t { kFloat, kInteger, kElided, kRaw };

  Literal() = default;
  static Literal floats(Shape shape, std::vector<double> values);
  static Literal integers(Shape shape, std::vector<int64_t> values);
  static Literal elided(Shape shape);
  static Literal raw(Shape shape, std::string text);

  Kind kind() const { return m_kind; }
  const Shape& shape() const { return m_shape; }
  const std::vector<double>& floatValues() const { return m_floats; }
  const std::vector<int64_t>& integerValues() const { return m_ints; }
  const std::string& rawText() const { return m_raw; }
  int64_t valueCount() const;

  // True when every element has the same value (a "splat"), e.g. broadcastable scalar constants.
  bool isSplat() const;
  // Element i as a double (complex: the real part); 0 for elided/raw literals.
  double asDouble(int64_t i) const;

  // XLA text of the literal as it appears inside `constant(...)`: `1.5`, `{1, 2}`, `{ {1, 2}, {3, 4} }`,
  // `{...}` for elided values. `maxElements` > 0 abbreviates long arrays (for labels, not round trips).
  std::string toString(int64_t maxElements = 0) const;

  bool operator==(const Literal& other) const;

 private:
  Kind m_kind = Kind::kRaw;
  Shape m_shape;
  std::vector<double> m_floats;
  std::vector<int64_t> m_ints;
  std::string m_raw;
};

}  // namespace fusionscope::core
