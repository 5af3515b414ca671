#pragma once

#include <cstdint>
#include <string_view>

#include "core/ir/attributes.h"
#include "core/ir/opcode.h"
#include "core/ir/shape.h"

// Element-level semantics of the evaluator, shared by the array kernels and the scalar programs that run
// reducers and comparators. Floating-point operations compute in double and the caller rounds the result to
// the element type (exact for + - * / and sqrt, which round once; for transcendental functions it is the
// correctly rounded double result rounded again, at most half an ulp of the narrow type off). Integer
// operations work on values normalised by wrapInteger and return normalised values.
namespace fusionscope::core::eval {

// An IEEE-like binary floating-point format: precision, exponent range and what it does at the edges.
struct FloatFormat {
  int exponentBits;
  int mantissaBits;  // explicit fraction bits
  int minExponent;   // exponent of the smallest normal number
  int maxExponent;   // exponent of the largest finite number
  double maxFinite;
  bool hasInfinity;      // overflow gives infinity (else NaN)
  bool hasNegativeZero;  // else -0 becomes +0
};
// The format of a floating-point element type; null for types we do not hold.
const FloatFormat* floatFormat(PrimitiveType type);
double roundToFormat(double value, const FloatFormat& format);
double roundFloat(PrimitiveType type, double value);
int64_t wrapInteger(PrimitiveType type, int64_t value);

// Conversions with XLA's `convert` semantics: float to integer truncates toward zero and saturates, NaN
// becomes 0; to pred is `!= 0`.
int64_t floatToInteger(PrimitiveType to, double value);
double integerToDouble(PrimitiveType from, int64_t value);
// Converts an element between any two held types; the result is already rounded or wrapped.
double convertToFloat(PrimitiveType from, double floatValue, int64_t intValue, PrimitiveType to);
int64_t convertToInteger(PrimitiveType from, double floatValue, int64_t intValue, PrimitiveType to);

// Raw bits of an element (for bitcast-convert); false when the type has no bit encoding here.
bool floatToBits(PrimitiveType type, double value, uint64_t& bits);
bool bitsToFloat(PrimitiveType type, uint64_t bits, double& value);

// Which elementwise opcodes have an element kernel for floating-point and for integer/pred operands.
bool isFloatUnaryOp(HloOpcode op);
bool isIntegerUnaryOp(HloOpcode op);
bool isFloatBinaryOp(HloOpcode op);
bool isIntegerBinaryOp(HloOpcode op);
bool isPredAllowedOp(HloOpcode op);

double floatUnary(HloOpcode op, double x);
int64_t integerUnary(HloOpcode op, PrimitiveType type, int64_t x);
double floatBinary(HloOpcode op, double x, double y);
int64_t integerBinary(HloOpcode op, PrimitiveType type, int64_t x, int64_t y);
bool compareFloats(ComparisonDirection direction, bool totalOrder, double x, double y);
bool compareIntegers(ComparisonDirection direction, PrimitiveType type, int64_t x, int64_t y);

// reduce-precision of an element of `type`: rounds the mantissa to `mantissaBits` (nearest even) when that is
// fewer than the type has; when `exponentBits` is fewer, overflows to infinity and flushes values below the
// smallest normal of the reduced format to zero, as XLA does. NaN stays NaN.
double reducePrecision(PrimitiveType type, double value, int exponentBits, int mantissaBits);

}  // namespace fusionscope::core::eval
