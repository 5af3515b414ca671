#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

class Literal;

// A runtime value of the reference evaluator: an array (element type, dimensions, elements in row-major
// logical order), a tuple of values, or a token. Floating-point elements are held as doubles that are
// exactly representable in the element type (an f32 element is exactly a float, a bf16 one exactly a
// bfloat16); integers and pred as int64 normalised to the type (sign-extended for signed types,
// zero-extended for unsigned ones, u64 as its bit pattern, pred 0 or 1). The constructors establish that
// invariant by rounding or wrapping what they are given. Array data is immutable and shared, so copies
// are cheap and a reshape shares the elements of its operand. Layouts are dropped: only logical order
// matters. Complex elements (c64, c128) are two arrays of doubles, the real parts (floatData) and the imaginary
// parts (imagData), each exactly a number of the part type (f32 for c64, f64 for c128).
class Value {
 public:
  Value() = default;  // the empty tuple

  static Value floats(Shape shape, std::vector<double> values);     // rounds to the element type
  static Value integers(Shape shape, std::vector<int64_t> values);  // wraps to the element type
  // A c64 or c128 array from its real and imaginary parts (each rounded to the part type).
  static Value complex(Shape shape, std::vector<double> real, std::vector<double> imag);
  // Element values given as doubles, converted as `convert` would (works for every array type).
  static Value fromDoubles(Shape shape, const std::vector<double>& values);
  static Value scalar(PrimitiveType type, double value);
  static Value zeros(const Shape& shape);  // tuples and tokens recursively
  static Value tuple(std::vector<Value> elements);
  static Value token();
  // The value of a decoded literal; an error for elided (`{...}`) or undecoded literals.
  static StatusOr<Value> fromLiteral(const Literal& literal);

  const Shape& shape() const { return m_shape; }
  PrimitiveType elementType() const { return m_shape.elementType(); }
  bool isTuple() const { return m_shape.isTuple(); }
  bool isToken() const { return m_shape.isToken(); }
  bool isArray() const { return m_shape.isArray(); }

  int tupleSize() const { return static_cast<int>(m_elements.size()); }
  const std::vector<Value>& tupleElements() const { return m_elements; }
  const Value& tupleElement(int i) const { return m_elements[static_cast<size_t>(i)]; }

  int64_t elementCount() const;
  // True when the elements are held as doubles (floating-point element types).
  bool holdsFloats() const { return m_floats != nullptr; }
  std::span<const double> floatData() const;  // empty unless holdsFloats(); complex: the real parts
  // True for complex arrays (holdsFloats() is true too); imagData() is then the imaginary parts, else empty.
  bool holdsComplex() const { return m_imag != nullptr; }
  std::span<const double> imagData() const;
  std::span<const int64_t> intData() const;   // empty for floating-point and non-array values
  // Element `linear` (row-major) of an array as a double or an int64 (floats truncate toward zero,
  // saturating; NaN reads as 0). Out-of-range indices read 0.
  double doubleAt(int64_t linear) const;
  int64_t int64At(int64_t linear) const;
  // Row-major linear index of a multi-dimensional index (no bounds check beyond rank).
  int64_t linearIndex(std::span<const int64_t> index) const;
  double at(std::initializer_list<int64_t> index) const {
    return doubleAt(linearIndex(std::span<const int64_t>(index.begin(), index.size())));
  }

  // The same elements under another array shape with the same element type and count.
  Value withShape(Shape shape) const;

  // `f32[2,2] {{1, 2}, {3, 4}}`, `(f32[] 1, s32[2] {1, 2})`; arrays longer than `maxElements` are cut
  // with `...` (0 = no limit).
  std::string toString(int64_t maxElements = 16) const;

 private:
  Shape m_shape;
  std::shared_ptr<const std::vector<double>> m_floats;
  std::shared_ptr<const std::vector<int64_t>> m_ints;
  std::shared_ptr<const std::vector<double>> m_imag;  // complex arrays only
  std::vector<Value> m_elements;
};

// Element types the evaluator can hold: pred, every integer width, f16, bf16, f32, f64 and the IEEE-like
// or "fn"/"fnuz" 8-bit floats, c64 and c128. 4-bit and e8m0 floats are not.
bool isEvaluableElementType(PrimitiveType type);

// The type of a complex type's parts: f32 for c64, f64 for c128 (the type itself for any other).
PrimitiveType complexPartType(PrimitiveType type);

// `value` rounded to nearest-even in `type` (identity for f64, overflow to infinity or, for formats
// without infinities, NaN). Only for floating-point types.
double roundToFloatType(PrimitiveType type, double value);
// `value` wrapped to the integer type's width (two's complement); pred becomes 0 or 1.
int64_t wrapToIntegerType(PrimitiveType type, int64_t value);

}  // namespace fusionscope::core
