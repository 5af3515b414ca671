// Elementwise kernels: unary and binary arithmetic, compare, select, clamp, convert, bitcast-convert and
// reduce-precision. Each loops over the elements with the element kernels of scalar_ops.h; the Value
// constructors round or wrap the results to the element type.

#include <cmath>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/eval/scalar_ops.h"

namespace fusionscope::core::eval {
namespace {

std::string_view typeName(PrimitiveType type) {
  return primitiveTypeName(type);
}

// Operand i must hold `n` elements, or one when `scalarAllowed` (implicitly broadcast).
Status checkOperandCount(const Value& v, int64_t n, int i, bool scalarAllowed) {
  if (!v.isArray()) return Status::error(fmt::format("operand {} is not an array", i));
  if (v.elementCount() == n || (scalarAllowed && v.elementCount() == 1 && v.shape().rank() == 0)) return okStatus();
  return Status::error(
      fmt::format("operand {} has shape {} but the result has {} element(s)", i, v.shape().toString(false), n));
}

Status checkType(const Value& v, PrimitiveType type, int i) {
  if (v.elementType() == type) return okStatus();
  return Status::error(
      fmt::format("operand {} is {} where {} is expected", i, typeName(v.elementType()), typeName(type)));
}

StatusOr<Value> unary(const HloInstruction& inst, const Value& x) {
  HloOpcode op = inst.opcode();
  const Shape& shape = inst.shape();
  auto n = static_cast<size_t>(shape.elementCount());
  PrimitiveType in = x.elementType();
  if (op == HloOpcode::kIsFinite) {
    if (!x.holdsFloats())
      return Status::error(fmt::format("is-finite needs a floating-point operand, got {}", typeName(in)));
    if (shape.elementType() != PrimitiveType::kPred) return Status::error("is-finite must produce pred");
    std::vector<int64_t> out(n);
    const double* a = x.floatData().data();
    for (size_t i = 0; i < n; ++i) out[i] = std::isfinite(a[i]) ? 1 : 0;
    return Value::integers(shape, std::move(out));
  }
  FS_RETURN_IF_ERROR(checkType(x, shape.elementType(), 0));
  if (x.holdsFloats()) {
    if (!isFloatUnaryOp(op))
      return Status::error(fmt::format("{} is not defined for {}", inst.opcodeString(), typeName(in)));
    std::vector<double> out(n);
    const double* a = x.floatData().data();
    for (size_t i = 0; i < n; ++i) out[i] = floatUnary(op, a[i]);
    return Value::floats(shape, std::move(out));
  }
  if (!isIntegerUnaryOp(op) || (in == PrimitiveType::kPred && !isPredAllowedOp(op))) {
    return Status::error(fmt::format("{} is not defined for {}", inst.opcodeString(), typeName(in)));
  }
  std::vector<int64_t> out(n);
  const int64_t* a = x.intData().data();
  for (size_t i = 0; i < n; ++i) out[i] = integerUnary(op, in, a[i]);
  return Value::integers(shape, std::move(out));
}

StatusOr<Value> compare(const HloInstruction& inst, const Value& x, const Value& y) {
  const Shape& shape = inst.shape();
  if (!inst.attributes().direction) return Status::error("compare without a direction");
  if (shape.elementType() != PrimitiveType::kPred) return Status::error("compare must produce pred");
  FS_RETURN_IF_ERROR(checkType(y, x.elementType(), 1));
  ComparisonDirection direction = *inst.attributes().direction;
  std::optional<std::string_view> type = rawAttribute(inst, "type");
  bool totalOrder = type && *type == "TOTALORDER";
  auto n = static_cast<size_t>(shape.elementCount());
  std::vector<int64_t> out(n);
  if (x.holdsFloats()) {
    const double* a = x.floatData().data();
    const double* b = y.floatData().data();
    for (size_t i = 0; i < n; ++i) out[i] = compareFloats(direction, totalOrder, a[i], b[i]) ? 1 : 0;
  } else {
    PrimitiveType t = x.elementType();
    const int64_t* a = x.intData().data();
    const int64_t* b = y.intData().data();
    for (size_t i = 0; i < n; ++i) out[i] = compareIntegers(direction, t, a[i], b[i]) ? 1 : 0;
  }
  return Value::integers(shape, std::move(out));
}

StatusOr<Value> binary(const HloInstruction& inst, const Value& x, const Value& y) {
  HloOpcode op = inst.opcode();
  if (op == HloOpcode::kCompare) return compare(inst, x, y);
  const Shape& shape = inst.shape();
  PrimitiveType type = shape.elementType();
  FS_RETURN_IF_ERROR(checkType(x, type, 0));
  FS_RETURN_IF_ERROR(checkType(y, type, 1));
  auto n = static_cast<size_t>(shape.elementCount());
  if (x.holdsFloats()) {
    if (!isFloatBinaryOp(op))
      return Status::error(fmt::format("{} is not defined for {}", inst.opcodeString(), typeName(type)));
    std::vector<double> out(n);
    const double* a = x.floatData().data();
    const double* b = y.floatData().data();
    for (size_t i = 0; i < n; ++i) out[i] = floatBinary(op, a[i], b[i]);
    return Value::floats(shape, std::move(out));
  }
  if (!isIntegerBinaryOp(op) || (type == PrimitiveType::kPred && !isPredAllowedOp(op))) {
    return Status::error(fmt::format("{} is not defined for {}", inst.opcodeString(), typeName(type)));
  }
  std::vector<int64_t> out(n);
  const int64_t* a = x.intData().data();
  const int64_t* b = y.intData().data();
  for (size_t i = 0; i < n; ++i) out[i] = integerBinary(op, type, a[i], b[i]);
  return Value::integers(shape, std::move(out));
}

StatusOr<Value> select(const HloInstruction& inst, const Value& p, const Value& x, const Value& y) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(checkType(p, PrimitiveType::kPred, 0));
  FS_RETURN_IF_ERROR(checkType(x, shape.elementType(), 1));
  FS_RETURN_IF_ERROR(checkType(y, shape.elementType(), 2));
  auto n = static_cast<size_t>(shape.elementCount());
  const int64_t* pred = p.intData().data();
  const size_t predStep = p.elementCount() == 1 ? 0 : 1;
  return moveData(x, shape, [&](const auto* a, auto* out) {
    const auto* b = dataOf<std::remove_cv_t<std::remove_pointer_t<decltype(a)>>>(y);
    for (size_t i = 0; i < n; ++i) out[i] = pred[i * predStep] ? a[i] : b[i];
  });
}

StatusOr<Value> clamp(const HloInstruction& inst, const Value& lo, const Value& x, const Value& hi) {
  const Shape& shape = inst.shape();
  PrimitiveType type = shape.elementType();
  for (int i = 0; i < 3; ++i) {
    const Value& v = i == 0 ? lo : (i == 1 ? x : hi);
    FS_RETURN_IF_ERROR(checkType(v, type, i));
  }
  auto n = static_cast<size_t>(shape.elementCount());
  const size_t loStep = lo.elementCount() == 1 ? 0 : 1;
  const size_t hiStep = hi.elementCount() == 1 ? 0 : 1;
  if (x.holdsFloats()) {
    std::vector<double> out(n);
    const double* l = lo.floatData().data();
    const double* a = x.floatData().data();
    const double* h = hi.floatData().data();
    for (size_t i = 0; i < n; ++i) {
      out[i] = floatBinary(HloOpcode::kMinimum, floatBinary(HloOpcode::kMaximum, a[i], l[i * loStep]), h[i * hiStep]);
    }
    return Value::floats(shape, std::move(out));
  }
  std::vector<int64_t> out(n);
  const int64_t* l = lo.intData().data();
  const int64_t* a = x.intData().data();
  const int64_t* h = hi.intData().data();
  for (size_t i = 0; i < n; ++i) {
    out[i] = integerBinary(HloOpcode::kMinimum, type, integerBinary(HloOpcode::kMaximum, type, a[i], l[i * loStep]),
                           h[i * hiStep]);
  }
  return Value::integers(shape, std::move(out));
}

}  // namespace

StatusOr<Value> evalElementwise(const HloInstruction& inst, Operands operands) {
  const Shape& shape = inst.shape();
  int64_t n = shape.elementCount();
  HloOpcode op = inst.opcode();
  bool isSelect = op == HloOpcode::kSelect;
  bool isClamp = op == HloOpcode::kClamp;
  size_t expected = (isSelect || isClamp)                                                         ? 3
                    : (op == HloOpcode::kCompare || isFloatBinaryOp(op) || isIntegerBinaryOp(op)) ? 2
                                                                                                  : 1;
  if (operands.size() != expected) {
    return Status::error(fmt::format("{} takes {} operand(s), got {}", inst.opcodeString(), expected, operands.size()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    bool scalarAllowed = (isSelect && i == 0) || (isClamp && i != 1);
    FS_RETURN_IF_ERROR(checkOperandCount(*operands[i], n, static_cast<int>(i), scalarAllowed));
  }
  if (isSelect) return select(inst, *operands[0], *operands[1], *operands[2]);
  if (isClamp) return clamp(inst, *operands[0], *operands[1], *operands[2]);
  if (expected == 2) return binary(inst, *operands[0], *operands[1]);
  return unary(inst, *operands[0]);
}

StatusOr<Value> evalConvert(const HloInstruction& inst, const Value& operand) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(checkOperandCount(operand, shape.elementCount(), 0, false));
  PrimitiveType from = operand.elementType();
  PrimitiveType to = shape.elementType();
  auto n = static_cast<size_t>(shape.elementCount());
  if (isFloatingPoint(to)) {
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) {
      Scalar s = scalarAt(operand, static_cast<int64_t>(i));
      out[i] = convertToFloat(from, s.f, s.i, to);
    }
    return Value::floats(shape, std::move(out));
  }
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    Scalar s = scalarAt(operand, static_cast<int64_t>(i));
    out[i] = convertToInteger(from, s.f, s.i, to);
  }
  return Value::integers(shape, std::move(out));
}

StatusOr<Value> reinterpretBits(const Value& operand, const Shape& shape) {
  PrimitiveType from = operand.elementType();
  PrimitiveType to = shape.elementType();
  const int fromWidth = primitiveTypeBitWidth(from);
  const int toWidth = primitiveTypeBitWidth(to);
  const auto inCount = static_cast<size_t>(operand.elementCount());
  const auto n = static_cast<size_t>(shape.elementCount());
  // XLA's rule for a width change: a k times narrower type splits each element into k (a new last dimension),
  // least significant part first; a k times wider one joins the operand's last dimension of k parts.
  const bool widthsDivide = fromWidth > 0 && toWidth > 0 &&
                            (fromWidth >= toWidth ? fromWidth % toWidth == 0 : toWidth % fromWidth == 0);
  if (!widthsDivide || inCount * static_cast<size_t>(fromWidth) != n * static_cast<size_t>(toWidth)) {
    return Status::error(fmt::format("reinterpreting {} {} as {} does not keep the bits", typeName(from),
                                     operand.shape().toString(false), shape.toString(false)));
  }
  auto maskOf = [](int width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; };
  std::vector<uint64_t> in(inCount);
  for (size_t i = 0; i < inCount; ++i) {
    if (operand.holdsFloats()) {
      if (!floatToBits(from, operand.floatData()[i], in[i])) {
        return Status::error(fmt::format("reinterpreting the bits of {} is not supported", typeName(from)));
      }
    } else {
      in[i] = static_cast<uint64_t>(operand.intData()[i]) & maskOf(fromWidth);
    }
  }
  std::vector<uint64_t> bits(n, 0);
  if (fromWidth >= toWidth) {
    const size_t parts = static_cast<size_t>(fromWidth / toWidth);
    for (size_t i = 0; i < n; ++i) {
      bits[i] = (in[i / parts] >> ((i % parts) * static_cast<size_t>(toWidth))) & maskOf(toWidth);
    }
  } else {
    const size_t parts = static_cast<size_t>(toWidth / fromWidth);
    for (size_t i = 0; i < inCount; ++i) bits[i / parts] |= in[i] << ((i % parts) * static_cast<size_t>(fromWidth));
  }
  if (isFloatingPoint(to)) {
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) {
      if (!bitsToFloat(to, bits[i], out[i])) {
        return Status::error(fmt::format("reinterpreting bits as {} is not supported", typeName(to)));
      }
    }
    return Value::floats(shape, std::move(out));
  }
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = wrapInteger(to, static_cast<int64_t>(bits[i]));
  return Value::integers(shape, std::move(out));
}

StatusOr<Value> evalBitcastConvert(const HloInstruction& inst, const Value& operand) {
  return reinterpretBits(operand, inst.shape());
}

StatusOr<Value> evalReducePrecision(const HloInstruction& inst, const Value& operand) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(checkOperandCount(operand, shape.elementCount(), 0, false));
  if (!operand.holdsFloats() || operand.elementType() != shape.elementType()) {
    return Status::error("reduce-precision needs a floating-point operand of the result type");
  }
  StatusOr<int64_t> exponentBits = rawInt(inst, "exponent_bits", std::nullopt);
  if (!exponentBits.ok()) return exponentBits.status();
  StatusOr<int64_t> mantissaBits = rawInt(inst, "mantissa_bits", std::nullopt);
  if (!mantissaBits.ok()) return mantissaBits.status();
  if (*exponentBits < 1 || *exponentBits > 30 || *mantissaBits < 0 || *mantissaBits > 52) {
    return Status::error(
        fmt::format("invalid reduce-precision bits exponent_bits={} mantissa_bits={}", *exponentBits, *mantissaBits));
  }
  auto n = static_cast<size_t>(shape.elementCount());
  std::vector<double> out(n);
  const double* a = operand.floatData().data();
  for (size_t i = 0; i < n; ++i) {
    out[i] =
        reducePrecision(shape.elementType(), a[i], static_cast<int>(*exponentBits), static_cast<int>(*mantissaBits));
  }
  return Value::floats(shape, std::move(out));
}

}  // namespace fusionscope::core::eval
