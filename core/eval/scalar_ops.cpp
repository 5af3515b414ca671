#include "core/eval/scalar_ops.h"

#include <bit>
#include <cmath>
#include <limits>

namespace fusionscope::core::eval {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Exponent fields and largest finite values from the formats' definitions (IEEE 754 for f16/bf16/f32/f64
// and the OCP / "fnuz" 8-bit formats as ml_dtypes defines them).
constexpr FloatFormat kF16{5, 10, -14, 15, 65504.0, true, true};
constexpr FloatFormat kBF16{8, 7, -126, 127, 3.3895313892515355e38, true, true};
constexpr FloatFormat kF32{8, 23, -126, 127, 3.4028234663852886e38, true, true};
constexpr FloatFormat kF64{11, 52, -1022, 1023, std::numeric_limits<double>::max(), true, true};
constexpr FloatFormat kF8E5M2{5, 2, -14, 15, 57344.0, true, true};
constexpr FloatFormat kF8E4M3{4, 3, -6, 7, 240.0, true, true};
constexpr FloatFormat kF8E3M4{3, 4, -2, 3, 15.5, true, true};
constexpr FloatFormat kF8E4M3FN{4, 3, -6, 8, 448.0, false, true};
constexpr FloatFormat kF8E4M3FNUZ{4, 3, -7, 7, 240.0, false, false};
constexpr FloatFormat kF8E5M2FNUZ{5, 2, -15, 15, 57344.0, false, false};
constexpr FloatFormat kF8E4M3B11FNUZ{4, 3, -10, 4, 30.0, false, false};

int bitWidth(PrimitiveType type) {
  return primitiveTypeBitWidth(type);
}

uint64_t widthMask(int width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

uint64_t bitsOf(PrimitiveType type, int64_t x) {
  return static_cast<uint64_t>(x) & widthMask(bitWidth(type));
}

// The element's bits read as a signed number of the type's width.
int64_t signedView(PrimitiveType type, int64_t x) {
  int w = bitWidth(type);
  uint64_t u = bitsOf(type, x);
  if (w < 64 && ((u >> (w - 1)) & 1)) u |= ~widthMask(w);
  return static_cast<int64_t>(u);
}

bool lessInteger(PrimitiveType type, int64_t x, int64_t y) {
  if (isUnsignedInteger(type)) return static_cast<uint64_t>(x) < static_cast<uint64_t>(y);
  return x < y;
}

int64_t integerPower(PrimitiveType type, int64_t base, int64_t exponent) {
  if (isSignedInteger(type) && exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1;
  uint64_t b = static_cast<uint64_t>(base);
  uint64_t e = static_cast<uint64_t>(exponent);
  while (e != 0) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return wrapInteger(type, static_cast<int64_t>(result));
}

// IEEE-style encoding of a value exactly representable in a format with the given field widths.
uint64_t encodeIeee(double x, int exponentBits, int mantissaBits) {
  uint64_t sign = std::signbit(x) ? 1 : 0;
  uint64_t expAll = (uint64_t{1} << exponentBits) - 1;
  uint64_t out = sign << (exponentBits + mantissaBits);
  double a = std::fabs(x);
  if (std::isnan(x)) return out | (expAll << mantissaBits) | (uint64_t{1} << (mantissaBits - 1));
  if (std::isinf(x)) return out | (expAll << mantissaBits);
  if (a == 0) return out;
  int bias = (1 << (exponentBits - 1)) - 1;
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1;
  if (exponent < 1 - bias) {
    auto mantissa = static_cast<uint64_t>(std::ldexp(a, bias - 1 + mantissaBits));
    return out | mantissa;
  }
  auto mantissa = static_cast<uint64_t>(std::ldexp(a, mantissaBits - exponent)) & widthMask(mantissaBits);
  return out | (static_cast<uint64_t>(exponent + bias) << mantissaBits) | mantissa;
}

double decodeIeee(uint64_t bits, int exponentBits, int mantissaBits) {
  uint64_t expAll = (uint64_t{1} << exponentBits) - 1;
  bool negative = (bits >> (exponentBits + mantissaBits)) & 1;
  uint64_t exponent = (bits >> mantissaBits) & expAll;
  uint64_t mantissa = bits & widthMask(mantissaBits);
  int bias = (1 << (exponentBits - 1)) - 1;
  double v = 0;
  if (exponent == expAll) {
    v = mantissa != 0 ? kNaN : kInf;
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissaBits);
  } else {
    v = std::ldexp(static_cast<double>(mantissa | (uint64_t{1} << mantissaBits)),
                   static_cast<int>(exponent) - bias - mantissaBits);
  }
  return negative ? -v : v;
}

// The 8-bit formats (every f8 type): the sign in bit 7, the exponent field biased by 1 - minExponent. NaN is 0x80 in
// the formats without a negative zero (fnuz), S.1111.111 in e4m3fn (no infinities), and an all-ones exponent with a
// nonzero mantissa in the IEEE-like ones (an all-ones exponent with a zero mantissa is their infinity). `x` is already
// rounded to the format.
bool isByteFormat(const FloatFormat& f) {
  return f.exponentBits + f.mantissaBits == 7;
}

uint64_t byteNan(const FloatFormat& f) {
  if (!f.hasNegativeZero) return 0x80;
  const uint64_t expAll = (uint64_t{1} << f.exponentBits) - 1;
  return f.hasInfinity ? (expAll << f.mantissaBits) | (uint64_t{1} << (f.mantissaBits - 1)) : 0x7f;
}

uint64_t encodeByteFloat(double x, const FloatFormat& f) {
  const int m = f.mantissaBits;
  const uint64_t expAll = (uint64_t{1} << f.exponentBits) - 1;
  if (std::isnan(x) || (std::isinf(x) && !f.hasInfinity)) return byteNan(f);
  const uint64_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isinf(x)) return sign | (expAll << m);
  const double a = std::fabs(x);
  if (a == 0) return f.hasNegativeZero ? sign : 0;
  int e = 0;
  std::frexp(a, &e);
  const int exponent = e - 1;
  if (exponent < f.minExponent) return sign | static_cast<uint64_t>(std::ldexp(a, m - f.minExponent));
  return sign | (static_cast<uint64_t>(exponent + 1 - f.minExponent) << m) |
         (static_cast<uint64_t>(std::ldexp(a, m - exponent)) & widthMask(m));
}

double decodeByteFloat(uint64_t bits, const FloatFormat& f) {
  bits &= 0xff;
  const int m = f.mantissaBits;
  const uint64_t expAll = (uint64_t{1} << f.exponentBits) - 1;
  const bool nan = !f.hasNegativeZero ? bits == 0x80
                   : f.hasInfinity    ? ((bits >> m) & expAll) == expAll && (bits & widthMask(m)) != 0
                                      : (bits & 0x7f) == 0x7f;
  if (nan) return kNaN;
  const bool negative = (bits & 0x80) != 0;
  const uint64_t exponent = (bits >> m) & expAll;
  const uint64_t mantissa = bits & widthMask(m);
  double v = 0;
  if (f.hasInfinity && exponent == expAll) {
    v = kInf;
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), f.minExponent - m);
  } else {
    v = std::ldexp(static_cast<double>(mantissa | (uint64_t{1} << m)),
                   static_cast<int>(exponent) - (1 - f.minExponent) - m);
  }
  return negative ? -v : v;
}

}  // namespace

const FloatFormat* floatFormat(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF16: return &kF16;
    case PrimitiveType::kBF16: return &kBF16;
    case PrimitiveType::kF32: return &kF32;
    case PrimitiveType::kF64: return &kF64;
    case PrimitiveType::kF8E5M2: return &kF8E5M2;
    case PrimitiveType::kF8E4M3: return &kF8E4M3;
    case PrimitiveType::kF8E3M4: return &kF8E3M4;
    case PrimitiveType::kF8E4M3FN: return &kF8E4M3FN;
    case PrimitiveType::kF8E4M3FNUZ: return &kF8E4M3FNUZ;
    case PrimitiveType::kF8E5M2FNUZ: return &kF8E5M2FNUZ;
    case PrimitiveType::kF8E4M3B11FNUZ: return &kF8E4M3B11FNUZ;
    default: return nullptr;
  }
}

double roundToFormat(double x, const FloatFormat& format) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return format.hasInfinity ? x : kNaN;
  if (x == 0) return format.hasNegativeZero ? x : 0.0;
  int e = 0;
  std::frexp(x, &e);
  // Spacing of the format's numbers around x: fixed below the smallest normal (subnormals).
  int quantum = std::max(e - 1, format.minExponent) - format.mantissaBits;
  // nearbyint rounds to nearest-even in the default floating-point environment; the scaling is exact.
  double r = std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
  if (std::fabs(r) > format.maxFinite) return format.hasInfinity ? std::copysign(kInf, x) : kNaN;
  if (r == 0 && !format.hasNegativeZero) return 0.0;
  return r;
}

double roundFloat(PrimitiveType type, double value) {
  switch (type) {
    case PrimitiveType::kF64: return value;
    case PrimitiveType::kF32: return static_cast<double>(static_cast<float>(value));
    default: {
      const FloatFormat* format = floatFormat(type);
      return format ? roundToFormat(value, *format) : value;
    }
  }
}

int64_t wrapInteger(PrimitiveType type, int64_t value) {
  if (type == PrimitiveType::kPred) return value != 0 ? 1 : 0;
  int w = bitWidth(type);
  if (w >= 64 || w <= 0) return value;
  uint64_t mask = widthMask(w);
  uint64_t u = static_cast<uint64_t>(value) & mask;
  if (isSignedInteger(type) && ((u >> (w - 1)) & 1)) u |= ~mask;
  return static_cast<int64_t>(u);
}

int64_t floatToInteger(PrimitiveType to, double value) {
  if (to == PrimitiveType::kPred) return value != 0 ? 1 : 0;
  if (std::isnan(value)) return 0;
  double t = std::trunc(value);
  int w = bitWidth(to);
  if (isUnsignedInteger(to)) {
    if (t <= 0) return 0;
    if (w >= 64) {
      if (t >= 18446744073709551616.0) return static_cast<int64_t>(~uint64_t{0});
      return static_cast<int64_t>(static_cast<uint64_t>(t));
    }
    auto hi = static_cast<double>(widthMask(w));
    if (t >= hi) return static_cast<int64_t>(widthMask(w));
    return static_cast<int64_t>(t);
  }
  if (w >= 64) {
    if (t >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
    if (t <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(t);
  }
  auto lo = -std::ldexp(1.0, w - 1);
  double hi = std::ldexp(1.0, w - 1) - 1;
  if (t <= lo) return static_cast<int64_t>(lo);
  if (t >= hi) return static_cast<int64_t>(hi);
  return static_cast<int64_t>(t);
}

double integerToDouble(PrimitiveType from, int64_t value) {
  if (from == PrimitiveType::kU64) return static_cast<double>(static_cast<uint64_t>(value));
  return static_cast<double>(value);
}

double convertToFloat(PrimitiveType from, double floatValue, int64_t intValue, PrimitiveType to) {
  if (isFloatingPoint(from)) return roundFloat(to, floatValue);
  if (to == PrimitiveType::kF32) {
    // One rounding straight from the integer (a detour through double could round twice for 64-bit values).
    if (from == PrimitiveType::kU64) return static_cast<float>(static_cast<uint64_t>(intValue));
    return static_cast<float>(intValue);
  }
  return roundFloat(to, integerToDouble(from, intValue));
}

int64_t convertToInteger(PrimitiveType from, double floatValue, int64_t intValue, PrimitiveType to) {
  if (isFloatingPoint(from)) return floatToInteger(to, floatValue);
  return wrapInteger(to, intValue);
}

bool floatToBits(PrimitiveType type, double value, uint64_t& bits) {
  switch (type) {
    case PrimitiveType::kF64: bits = std::bit_cast<uint64_t>(value); return true;
    case PrimitiveType::kF32: bits = std::bit_cast<uint32_t>(static_cast<float>(value)); return true;
    case PrimitiveType::kBF16:
      // A bf16 value is a float whose low 16 bits are zero.
      bits = std::bit_cast<uint32_t>(static_cast<float>(value)) >> 16;
      return true;
    case PrimitiveType::kF16: bits = encodeIeee(value, 5, 10); return true;
    default: {
      const FloatFormat* format = floatFormat(type);
      if (format == nullptr || !isByteFormat(*format)) return false;
      bits = encodeByteFloat(value, *format);
      return true;
    }
  }
}

bool bitsToFloat(PrimitiveType type, uint64_t bits, double& value) {
  switch (type) {
    case PrimitiveType::kF64: value = std::bit_cast<double>(bits); return true;
    case PrimitiveType::kF32: value = std::bit_cast<float>(static_cast<uint32_t>(bits)); return true;
    case PrimitiveType::kBF16: value = std::bit_cast<float>(static_cast<uint32_t>((bits & 0xffff) << 16)); return true;
    case PrimitiveType::kF16: value = decodeIeee(bits & 0xffff, 5, 10); return true;
    default: {
      const FloatFormat* format = floatFormat(type);
      if (format == nullptr || !isByteFormat(*format)) return false;
      value = decodeByteFloat(bits, *format);
      return true;
    }
  }
}

bool isFloatUnaryOp(HloOpcode op) {
  if (isTranscendental(op)) return true;
  switch (op) {
    case HloOpcode::kAbs:
    case HloOpcode::kNegate:
    case HloOpcode::kFloor:
    case HloOpcode::kCeil:
    case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven:
    case HloOpcode::kSign:
    case HloOpcode::kCopy: return true;
    default: return false;
  }
}

bool isIntegerUnaryOp(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAbs:
    case HloOpcode::kNegate:
    case HloOpcode::kSign:
    case HloOpcode::kNot:
    case HloOpcode::kPopulationCount:
    case HloOpcode::kClz:
    case HloOpcode::kCopy: return true;
    default: return false;
  }
}

bool isFloatBinaryOp(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kPower:
    case HloOpcode::kAtan2: return true;
    default: return false;
  }
}

bool isIntegerBinaryOp(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kPower:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical: return true;
    default: return false;
  }
}

bool isPredAllowedOp(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
    case HloOpcode::kNot:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kCopy: return true;
    default: return false;
  }
}

double floatUnary(HloOpcode op, double x) {
  switch (op) {
    case HloOpcode::kAbs: return std::fabs(x);
    case HloOpcode::kNegate: return -x;
    case HloOpcode::kExp: return std::exp(x);
    case HloOpcode::kExpm1: return std::expm1(x);
    case HloOpcode::kLog: return std::log(x);
    case HloOpcode::kLog1p: return std::log1p(x);
    case HloOpcode::kLogistic: return 1.0 / (1.0 + std::exp(-x));
    case HloOpcode::kSqrt: return std::sqrt(x);
    case HloOpcode::kRsqrt: return 1.0 / std::sqrt(x);
    case HloOpcode::kCbrt: return std::cbrt(x);
    case HloOpcode::kTanh: return std::tanh(x);
    case HloOpcode::kSin: return std::sin(x);
    case HloOpcode::kCos: return std::cos(x);
    case HloOpcode::kTan: return std::tan(x);
    case HloOpcode::kErf: return std::erf(x);
    case HloOpcode::kFloor: return std::floor(x);
    case HloOpcode::kCeil: return std::ceil(x);
    case HloOpcode::kRoundNearestAfz: return std::round(x);
    case HloOpcode::kRoundNearestEven: return std::nearbyint(x);
    case HloOpcode::kSign:
      if (std::isnan(x)) return x;
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);
    default: return x;
  }
}

int64_t integerUnary(HloOpcode op, PrimitiveType type, int64_t x) {
  int w = bitWidth(type);
  switch (op) {
    case HloOpcode::kAbs:
      if (isUnsignedInteger(type) || x >= 0) return x;
      return wrapInteger(type, static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(x)));
    case HloOpcode::kNegate: return wrapInteger(type, static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(x)));
    case HloOpcode::kSign:
      if (isUnsignedInteger(type)) return x != 0 ? 1 : 0;
      return (x > 0) - (x < 0);
    case HloOpcode::kNot:
      if (type == PrimitiveType::kPred) return x ? 0 : 1;
      return wrapInteger(type, ~x);
    case HloOpcode::kPopulationCount: return std::popcount(bitsOf(type, x));
    case HloOpcode::kClz: return w - static_cast<int>(std::bit_width(bitsOf(type, x)));
    default: return x;
  }
}

double floatBinary(HloOpcode op, double x, double y) {
  switch (op) {
    case HloOpcode::kAdd: return x + y;
    case HloOpcode::kSubtract: return x - y;
    case HloOpcode::kMultiply: return x * y;
    case HloOpcode::kDivide: return x / y;
    case HloOpcode::kRemainder: return std::fmod(x, y);
    case HloOpcode::kMaximum:
      if (std::isnan(x) || std::isnan(y)) return kNaN;
      return x > y ? x : y;
    case HloOpcode::kMinimum:
      if (std::isnan(x) || std::isnan(y)) return kNaN;
      return x < y ? x : y;
    case HloOpcode::kPower: return std::pow(x, y);
    case HloOpcode::kAtan2: return std::atan2(x, y);
    default: return kNaN;
  }
}

int64_t integerBinary(HloOpcode op, PrimitiveType type, int64_t x, int64_t y) {
  auto ux = static_cast<uint64_t>(x);
  auto uy = static_cast<uint64_t>(y);
  int w = bitWidth(type);
  bool isSigned = isSignedInteger(type);
  switch (op) {
    case HloOpcode::kAdd: return wrapInteger(type, static_cast<int64_t>(ux + uy));
    case HloOpcode::kSubtract: return wrapInteger(type, static_cast<int64_t>(ux - uy));
    case HloOpcode::kMultiply: return wrapInteger(type, static_cast<int64_t>(ux * uy));
    case HloOpcode::kDivide:
      // XLA: x / 0 is -1 (all bits set), INT_MIN / -1 is INT_MIN.
      if (y == 0) return wrapInteger(type, -1);
      if (isSigned) {
        if (y == -1) return wrapInteger(type, static_cast<int64_t>(uint64_t{0} - ux));
        return wrapInteger(type, x / y);
      }
      return wrapInteger(type, static_cast<int64_t>(ux / uy));
    case HloOpcode::kRemainder:
      // XLA: x % 0 is x, INT_MIN % -1 is 0.
      if (y == 0) return x;
      if (isSigned) return y == -1 ? 0 : x % y;
      return wrapInteger(type, static_cast<int64_t>(ux % uy));
    case HloOpcode::kMaximum: return lessInteger(type, x, y) ? y : x;
    case HloOpcode::kMinimum: return lessInteger(type, y, x) ? y : x;
    case HloOpcode::kPower: return integerPower(type, x, y);
    case HloOpcode::kAnd: return x & y;
    case HloOpcode::kOr: return x | y;
    case HloOpcode::kXor: return x ^ y;
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical: {
      // The shift amount is read as unsigned; amounts of the bit width or more shift everything out.
      uint64_t amount = bitsOf(type, y);
      if (amount >= static_cast<uint64_t>(w)) {
        if (op != HloOpcode::kShiftRightArithmetic) return 0;
        return wrapInteger(type, signedView(type, x) < 0 ? -1 : 0);
      }
      if (op == HloOpcode::kShiftLeft) return wrapInteger(type, static_cast<int64_t>(ux << amount));
      if (op == HloOpcode::kShiftRightLogical)
        return wrapInteger(type, static_cast<int64_t>(bitsOf(type, x) >> amount));
      return wrapInteger(type, signedView(type, x) >> amount);
    }
    default: return 0;
  }
}

bool compareFloats(ComparisonDirection direction, bool totalOrder, double x, double y) {
  if (totalOrder) {
    // -NaN < -inf < ... < -0 < +0 < ... < inf < NaN: order the bit patterns as sign-magnitude integers.
    auto key = [](double v) {
      auto k = std::bit_cast<int64_t>(v);
      return k < 0 ? k ^ std::numeric_limits<int64_t>::max() : k;
    };
    int64_t a = key(x);
    int64_t b = key(y);
    switch (direction) {
      case ComparisonDirection::kEq: return a == b;
      case ComparisonDirection::kNe: return a != b;
      case ComparisonDirection::kGe: return a >= b;
      case ComparisonDirection::kGt: return a > b;
      case ComparisonDirection::kLe: return a <= b;
      case ComparisonDirection::kLt: return a < b;
    }
    return false;
  }
  switch (direction) {
    case ComparisonDirection::kEq: return x == y;
    case ComparisonDirection::kNe: return x != y;
    case ComparisonDirection::kGe: return x >= y;
    case ComparisonDirection::kGt: return x > y;
    case ComparisonDirection::kLe: return x <= y;
    case ComparisonDirection::kLt: return x < y;
  }
  return false;
}

bool compareIntegers(ComparisonDirection direction, PrimitiveType type, int64_t x, int64_t y) {
  switch (direction) {
    case ComparisonDirection::kEq: return x == y;
    case ComparisonDirection::kNe: return x != y;
    case ComparisonDirection::kGe: return !lessInteger(type, x, y);
    case ComparisonDirection::kGt: return lessInteger(type, y, x);
    case ComparisonDirection::kLe: return !lessInteger(type, y, x);
    case ComparisonDirection::kLt: return lessInteger(type, x, y);
  }
  return false;
}

double reducePrecision(PrimitiveType type, double value, int exponentBits, int mantissaBits) {
  const FloatFormat* format = floatFormat(type);
  if (!format || std::isnan(value) || std::isinf(value) || value == 0) return value;
  if (mantissaBits < format->mantissaBits) {
    int e = 0;
    std::frexp(value, &e);
    int quantum = e - 1 - mantissaBits;
    value = std::ldexp(std::nearbyint(std::ldexp(value, -quantum)), quantum);
  }
  if (exponentBits < format->exponentBits) {
    int bias = (1 << (exponentBits - 1)) - 1;
    int e = 0;
    std::frexp(value, &e);
    if (e - 1 > bias) return std::copysign(kInf, value);
    if (e - 1 < 1 - bias) return std::copysign(0.0, value);
  }
  return roundFloat(type, value);
}

}  // namespace fusionscope::core::eval
