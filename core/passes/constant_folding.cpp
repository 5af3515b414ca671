#include "core/passes/constant_folding.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "core/eval/scalar_ops.h"
#include "core/ir/hlo_instruction.h"
#include "core/passes/algebraic_simplifier.h"

namespace fusionscope::core {

const Literal* decodedLiteral(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kConstant || !inst.literal()) return nullptr;
  const Literal& literal = *inst.literal();
  if (literal.kind() != Literal::Kind::kFloat && literal.kind() != Literal::Kind::kInteger) return nullptr;
  if (!inst.shape().isArray() || isComplex(inst.shape().elementType())) return nullptr;
  if (literal.valueCount() != inst.shape().elementCount()) return nullptr;
  return &literal;
}

namespace {

// NaN and inf are not folded: they have no portable text and their propagation differs between ops.

enum class Domain : uint8_t { kPred, kSigned, kUnsigned, kF32, kF64 };

std::optional<Domain> domainOf(PrimitiveType type) {
  if (type == PrimitiveType::kPred) return Domain::kPred;
  if (isSignedInteger(type)) return Domain::kSigned;
  if (isUnsignedInteger(type)) return Domain::kUnsigned;
  if (type == PrimitiveType::kF32) return Domain::kF32;
  if (type == PrimitiveType::kF64) return Domain::kF64;
  return std::nullopt;
}

bool isFloatDomain(Domain domain) {
  return domain == Domain::kF32 || domain == Domain::kF64;
}

// One element: integers and pred in `i` (sign- or zero-extended from their width; u64 keeps its bits),
// floats in `f` (already rounded to the type's precision).
struct Element {
  int64_t i = 0;
  double f = 0;
};

// Truncates `bits` to the width of `type` and extends it back to 64 bits the way the type reads it.
int64_t wrapTo(uint64_t bits, PrimitiveType type) {
  if (type == PrimitiveType::kPred) return bits != 0 ? 1 : 0;
  int width = primitiveTypeBitWidth(type);
  if (width <= 0 || width >= 64) return static_cast<int64_t>(bits);
  uint64_t mask = (uint64_t{1} << width) - 1;
  bits &= mask;
  if (isSignedInteger(type) && ((bits >> (width - 1)) & 1) != 0) bits |= ~mask;
  return static_cast<int64_t>(bits);
}

double roundTo(double value, Domain domain) {
  return domain == Domain::kF32 ? static_cast<double>(static_cast<float>(value)) : value;
}

Element readElement(const Literal& literal, int64_t index, PrimitiveType type, Domain domain) {
  Element e;
  if (isFloatDomain(domain)) {
    e.f = roundTo(literal.floatValues()[static_cast<size_t>(index)], domain);
  } else {
    e.i = wrapTo(static_cast<uint64_t>(literal.integerValues()[static_cast<size_t>(index)]), type);
  }
  return e;
}

bool lessThan(const Element& a, const Element& b, Domain domain) {
  switch (domain) {
    case Domain::kF32:
    case Domain::kF64: return a.f < b.f;
    case Domain::kSigned: return a.i < b.i;
    default: return static_cast<uint64_t>(a.i) < static_cast<uint64_t>(b.i);
  }
}

bool equalTo(const Element& a, const Element& b, Domain domain) {
  return isFloatDomain(domain) ? a.f == b.f : a.i == b.i;
}

// Folding computes as the reference evaluator does (core/eval/scalar_ops), so a folded constant holds what running
// the instruction would give (INT_MIN / -1 included).
std::optional<Element> binary(HloOpcode opcode, const Element& a, const Element& b, PrimitiveType type, Domain domain) {
  Element r;
  if (isFloatDomain(domain)) {
    if (!eval::isFloatBinaryOp(opcode)) return std::nullopt;
    r.f = roundTo(eval::floatBinary(opcode, a.f, b.f), domain);
  } else {
    if (domain == Domain::kPred ? !eval::isPredAllowedOp(opcode) : !eval::isIntegerBinaryOp(opcode)) {
      return std::nullopt;
    }
    // Integer division by zero is left in the module, where the verifier's evaluation and the viewer show it.
    if ((opcode == HloOpcode::kDivide || opcode == HloOpcode::kRemainder) && b.i == 0) return std::nullopt;
    r.i = wrapTo(static_cast<uint64_t>(eval::integerBinary(opcode, type, a.i, b.i)), type);
  }
  return r;
}

std::optional<Element> unary(HloOpcode opcode, const Element& a, PrimitiveType type, Domain domain) {
  // Only the exact ones: transcendental functions are left to the run time's math library.
  if (opcode != HloOpcode::kNegate && opcode != HloOpcode::kAbs && opcode != HloOpcode::kNot) return std::nullopt;
  Element r;
  if (isFloatDomain(domain)) {
    if (opcode == HloOpcode::kNot) return std::nullopt;
    r.f = eval::floatUnary(opcode, a.f);
  } else if (domain == Domain::kPred) {
    if (opcode != HloOpcode::kNot) return std::nullopt;
    r.i = a.i == 0 ? 1 : 0;
  } else {
    r.i = wrapTo(static_cast<uint64_t>(eval::integerUnary(opcode, type, a.i)), type);
  }
  return r;
}

std::optional<Element> convert(const Element& a, Domain from, PrimitiveType to, Domain toDomain) {
  Element r;
  if (!isFloatDomain(from)) {
    if (isFloatDomain(toDomain)) {
      double v = from == Domain::kSigned ? static_cast<double>(a.i) : static_cast<double>(static_cast<uint64_t>(a.i));
      // Integer to f32 rounds once, straight to float.
      r.f = toDomain == Domain::kF32
                ? static_cast<double>(from == Domain::kSigned ? static_cast<float>(a.i)
                                                              : static_cast<float>(static_cast<uint64_t>(a.i)))
                : v;
    } else {
      r.i = wrapTo(static_cast<uint64_t>(a.i), to);
    }
    return r;
  }
  if (isFloatDomain(toDomain)) {
    r.f = roundTo(a.f, toDomain);
    return r;
  }
  if (toDomain == Domain::kPred) {
    r.i = a.f != 0 ? 1 : 0;
    return r;
  }
  // Float to integer truncates toward zero; out-of-range values have no agreed result and are not folded.
  double t = std::trunc(a.f);
  int width = primitiveTypeBitWidth(to);
  double low = toDomain == Domain::kSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double high = toDomain == Domain::kSigned ? std::ldexp(1.0, width - 1) : std::ldexp(1.0, width);
  if (!(t >= low && t < high)) return std::nullopt;
  r.i = toDomain == Domain::kSigned ? wrapTo(static_cast<uint64_t>(static_cast<int64_t>(t)), to)
                                    : wrapTo(static_cast<uint64_t>(t), to);
  return r;
}

std::optional<bool> compare(ComparisonDirection direction, const Element& a, const Element& b, Domain domain) {
  if (isFloatDomain(domain)) return eval::compareFloats(direction, /*totalOrder=*/false, a.f, b.f);
  switch (direction) {
    case ComparisonDirection::kEq: return equalTo(a, b, domain);
    case ComparisonDirection::kNe: return !equalTo(a, b, domain);
    case ComparisonDirection::kLt: return lessThan(a, b, domain);
    case ComparisonDirection::kGt: return lessThan(b, a, domain);
    case ComparisonDirection::kLe: return !lessThan(b, a, domain);
    case ComparisonDirection::kGe: return !lessThan(a, b, domain);
  }
  return std::nullopt;
}

// A static array shape with 1..kMaxFoldElements elements.
bool foldableSize(const Shape& shape) {
  if (!shape.isArray() || !shape.dynamicDimensions().empty()) return false;
  for (int64_t d : shape.dimensions()) {
    if (d <= 0) return false;
  }
  return shape.elementCount() <= AlgebraicSimplifier::kMaxFoldElements;
}

struct FoldOperand {
  const Literal* literal;
  PrimitiveType type;
  Domain domain;
  bool scalar;  // select and clamp may take scalar operands next to arrays
};

std::optional<Element> evaluateElement(const HloInstruction& inst, const std::vector<FoldOperand>& operands,
                                       int64_t index, PrimitiveType outType, Domain outDomain) {
  std::vector<Element> args;
  args.reserve(operands.size());
  for (const FoldOperand& operand : operands) {
    Element e = readElement(*operand.literal, operand.scalar ? 0 : index, operand.type, operand.domain);
    if (isFloatDomain(operand.domain) && !std::isfinite(e.f)) return std::nullopt;
    args.push_back(e);
  }
  auto sameDomains = [&](size_t first) {
    for (size_t i = first; i < operands.size(); ++i) {
      if (operands[i].type != outType) return false;
    }
    return true;
  };
  switch (inst.opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
      if (args.size() != 2 || !sameDomains(0)) return std::nullopt;
      return binary(inst.opcode(), args[0], args[1], outType, outDomain);
    case HloOpcode::kNegate:
    case HloOpcode::kAbs:
    case HloOpcode::kNot:
      if (args.size() != 1 || !sameDomains(0)) return std::nullopt;
      return unary(inst.opcode(), args[0], outType, outDomain);
    case HloOpcode::kConvert:
      if (args.size() != 1) return std::nullopt;
      return convert(args[0], operands[0].domain, outType, outDomain);
    case HloOpcode::kCompare: {
      const std::string* order = inst.attributes().findRaw("type");
      if (args.size() != 2 || operands[0].type != operands[1].type || outDomain != Domain::kPred ||
          !inst.attributes().direction || (order && *order == "TOTALORDER")) {
        return std::nullopt;
      }
      std::optional<bool> v = compare(*inst.attributes().direction, args[0], args[1], operands[0].domain);
      if (!v) return std::nullopt;
      return Element{*v ? 1 : 0, 0};
    }
    case HloOpcode::kSelect:
      if (args.size() != 3 || operands[0].domain != Domain::kPred || !sameDomains(1)) return std::nullopt;
      return args[0].i != 0 ? args[1] : args[2];
    case HloOpcode::kClamp: {
      if (args.size() != 3 || !sameDomains(0)) return std::nullopt;
      const Element& low = args[0];
      const Element& high = args[2];
      Element v = lessThan(args[1], low, outDomain) ? low : args[1];
      return lessThan(high, v, outDomain) ? high : v;
    }
    default: return std::nullopt;
  }
}

}  // namespace

namespace {

// `value` rounded to bf16 (to nearest, ties to even), as a double; nullopt when it is not finite there.
std::optional<double> roundToBf16(double value) {
  const float single = static_cast<float>(value);
  if (!std::isfinite(single)) return std::nullopt;
  uint32_t bits = 0;
  std::memcpy(&bits, &single, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  float rounded = 0;
  std::memcpy(&rounded, &bits, sizeof rounded);
  if (!std::isfinite(rounded)) return std::nullopt;
  return rounded;
}

std::optional<Literal> foldHalfConvert(const HloInstruction& inst) {
  const Shape& out = inst.shape();
  if (inst.opcode() != HloOpcode::kConvert || inst.operandCount() != 1 || !out.isArray() || !foldableSize(out)) {
    return std::nullopt;
  }
  const PrimitiveType from = inst.operand(0)->shape().elementType();
  const PrimitiveType to = out.elementType();
  const Literal* literal = decodedLiteral(*inst.operand(0));
  if (!literal || literal->kind() != Literal::Kind::kFloat || literal->valueCount() != out.elementCount()) {
    return std::nullopt;
  }
  const bool wide = [](PrimitiveType t) { return t == PrimitiveType::kF32 || t == PrimitiveType::kF64; }(to);
  const bool widening = (from == PrimitiveType::kBF16 || from == PrimitiveType::kF16) && wide;
  const bool toBf16 = (from == PrimitiveType::kF32 || from == PrimitiveType::kF64) && to == PrimitiveType::kBF16;
  if (!widening && !toBf16) return std::nullopt;
  std::vector<double> values;
  for (int64_t i = 0; i < literal->valueCount(); ++i) {
    const double v = literal->asDouble(i);
    if (!std::isfinite(v)) return std::nullopt;
    if (toBf16) {
      std::optional<double> rounded = roundToBf16(v);
      if (!rounded) return std::nullopt;
      values.push_back(*rounded);
    } else {
      values.push_back(v);
    }
  }
  return Literal::floats(out, std::move(values));
}

}  // namespace

std::optional<Literal> foldElementwise(const HloInstruction& inst) {
  const Shape& out = inst.shape();
  // Converts of float constants to and from bf16 (XLA folds those its float normalization puts around bf16
  // constants): a bf16 or f16 value is exact in f32 and f64; f32 or f64 to bf16 rounds to nearest even.
  if (std::optional<Literal> converted = foldHalfConvert(inst)) return converted;
  std::optional<Domain> outDomain = domainOf(out.elementType());
  if (!out.isArray() || !outDomain || inst.operandCount() == 0) return std::nullopt;
  int64_t count = out.elementCount();
  if (!foldableSize(out)) return std::nullopt;
  std::vector<FoldOperand> operands;
  for (const HloInstruction* operand : inst.operands()) {
    const Literal* literal = decodedLiteral(*operand);
    if (!literal) return std::nullopt;
    PrimitiveType type = operand->shape().elementType();
    std::optional<Domain> domain = domainOf(type);
    if (!domain || isFloatDomain(*domain) != (literal->kind() == Literal::Kind::kFloat)) return std::nullopt;
    int64_t n = operand->shape().elementCount();
    if (n != count && n != 1) return std::nullopt;
    operands.push_back({literal, type, *domain, n != count});
  }
  std::vector<int64_t> ints;
  std::vector<double> floats;
  for (int64_t i = 0; i < count; ++i) {
    std::optional<Element> e = evaluateElement(inst, operands, i, out.elementType(), *outDomain);
    if (!e) return std::nullopt;
    if (isFloatDomain(*outDomain)) {
      double v = roundTo(e->f, *outDomain);
      if (!std::isfinite(v)) return std::nullopt;
      floats.push_back(v);
    } else {
      ints.push_back(e->i);
    }
  }
  if (isFloatDomain(*outDomain)) return Literal::floats(out, std::move(floats));
  return Literal::integers(out, std::move(ints));
}

// broadcast, reshape and transpose of a constant: the same values moved, so any decoded type works.
std::optional<Literal> foldDataMovement(const HloInstruction& inst) {
  if (inst.operandCount() != 1) return std::nullopt;
  const HloInstruction& operand = *inst.operand(0);
  const Literal* literal = decodedLiteral(operand);
  const Shape& in = operand.shape();
  const Shape& out = inst.shape();
  if (!literal || !out.isArray() || out.elementType() != in.elementType()) return std::nullopt;
  int64_t count = out.elementCount();
  if (!foldableSize(out) || !in.dynamicDimensions().empty()) return std::nullopt;

  std::vector<int64_t> source(static_cast<size_t>(count));
  std::vector<int64_t> outStrides = rowMajorStrides(out.dimensions());
  std::vector<int64_t> inStrides = rowMajorStrides(in.dimensions());
  // For each result dimension, the stride of the operand index it advances (0: broadcast along it).
  std::vector<int64_t> step(static_cast<size_t>(out.rank()), 0);
  switch (inst.opcode()) {
    case HloOpcode::kReshape:
      if (in.elementCount() != count) return std::nullopt;
      for (int64_t i = 0; i < count; ++i) source[static_cast<size_t>(i)] = i;
      break;
    case HloOpcode::kBroadcast: {
      if (in.isScalar()) return std::nullopt;
      const std::vector<int64_t> none;
      const std::vector<int64_t>& dims = inst.attributes().dimensions ? *inst.attributes().dimensions : none;
      if (static_cast<int>(dims.size()) != in.rank()) return std::nullopt;
      for (int k = 0; k < in.rank(); ++k) {
        int64_t d = dims[static_cast<size_t>(k)];
        if (d < 0 || d >= out.rank() || out.dimension(static_cast<int>(d)) != in.dimension(k)) return std::nullopt;
        step[static_cast<size_t>(d)] = inStrides[static_cast<size_t>(k)];
      }
      break;
    }
    case HloOpcode::kTranspose: {
      if (!inst.attributes().dimensions || in.rank() != out.rank()) return std::nullopt;
      const std::vector<int64_t>& perm = *inst.attributes().dimensions;
      if (static_cast<int>(perm.size()) != out.rank()) return std::nullopt;
      for (int j = 0; j < out.rank(); ++j) {
        int64_t p = perm[static_cast<size_t>(j)];
        if (p < 0 || p >= in.rank() || in.dimension(static_cast<int>(p)) != out.dimension(j)) return std::nullopt;
        step[static_cast<size_t>(j)] = inStrides[static_cast<size_t>(p)];
      }
      break;
    }
    default: return std::nullopt;
  }
  if (inst.opcode() != HloOpcode::kReshape) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t rest = i;
      int64_t from = 0;
      for (int d = 0; d < out.rank(); ++d) {
        int64_t index = rest / outStrides[static_cast<size_t>(d)];
        rest %= outStrides[static_cast<size_t>(d)];
        from += index * step[static_cast<size_t>(d)];
      }
      source[static_cast<size_t>(i)] = from;
    }
  }
  if (literal->kind() == Literal::Kind::kFloat) {
    std::vector<double> values;
    values.reserve(source.size());
    for (int64_t from : source) values.push_back(literal->floatValues()[static_cast<size_t>(from)]);
    return Literal::floats(out, std::move(values));
  }
  std::vector<int64_t> values;
  values.reserve(source.size());
  for (int64_t from : source) values.push_back(literal->integerValues()[static_cast<size_t>(from)]);
  return Literal::integers(out, std::move(values));
}

}  // namespace fusionscope::core
