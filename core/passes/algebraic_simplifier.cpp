#include "core/passes/algebraic_simplifier.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/eval/scalar_ops.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/shape_rules.h"
#include "core/passes/dce.h"

namespace fusionscope::core {
namespace {

// The literal of a constant whose values are decoded (not elided `{...}`, not raw text), else null.
const Literal* decodedLiteral(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kConstant || !inst.literal()) return nullptr;
  const Literal& literal = *inst.literal();
  if (literal.kind() != Literal::Kind::kFloat && literal.kind() != Literal::Kind::kInteger) return nullptr;
  if (!inst.shape().isArray() || isComplex(inst.shape().elementType())) return nullptr;
  if (literal.valueCount() != inst.shape().elementCount()) return nullptr;
  return &literal;
}

// A splat constant equal to `value`, or a broadcast of a scalar constant equal to it.
bool isSplatOf(const HloInstruction& inst, double value) {
  const HloInstruction* constant = &inst;
  if (inst.opcode() == HloOpcode::kBroadcast && inst.operandCount() == 1 && inst.operand(0)->shape().isScalar()) {
    constant = inst.operand(0);
  }
  const Literal* literal = decodedLiteral(*constant);
  return literal && literal->valueCount() > 0 && literal->isSplat() && literal->asDouble(0) == value;
}

bool isIdentityPermutation(const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Constant folding. Elements are evaluated in the element type's own arithmetic: integers wrap around at
// their width, f32 is computed in float and f64 in double. Types without such an evaluation here (f16, bf16,
// f8, complex) are not folded, nor is anything whose float inputs or results are not finite (NaN and inf
// have no portable text and their propagation differs between ops), nor integer division by zero.

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

std::optional<Literal> foldElementwise(const HloInstruction& inst) {
  const Shape& out = inst.shape();
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

// ---------------------------------------------------------------------------------------------------------

// Runs the rewrites on one computation from a worklist. Nothing is removed until the worklist is empty, so
// every queued pointer stays valid; then the instructions the rewrites left unused go, with any operand
// that loses its last user that way.
class ComputationSimplifier {
 public:
  ComputationSimplifier(HloComputation& computation, SideEffectAnalysis& sideEffects, bool reciprocals)
      : m_computation(computation), m_sideEffects(sideEffects), m_reciprocals(reciprocals) {}

  StatusOr<bool> run() {
    StatusOr<std::vector<HloInstruction*>> order = m_computation.postOrder();
    if (!order.ok()) return Status::error(fmt::format("simplify: {}", order.message()));
    for (HloInstruction* inst : *order) push(inst);
    while (!m_queue.empty()) {
      HloInstruction* inst = m_queue.front();
      m_queue.pop_front();
      m_queued.erase(inst);
      visit(inst);
    }
    if (!m_changed) return false;
    removeUnused();
    if (Status s = m_computation.sortInPostOrder(); !s.ok()) {
      return Status::error(fmt::format("simplify: {}", s.message()));
    }
    return true;
  }

 private:
  void push(HloInstruction* inst) {
    if (m_queued.insert(inst).second) m_queue.push_back(inst);
  }

  void visit(HloInstruction* inst) {
    // Unused instructions are left for removal; rewriting them would change nothing anyone reads.
    if (inst->users().empty() && inst != m_computation.root()) return;
    if (HloInstruction* replacement = identityReplacement(*inst)) {
      replace(inst, replacement);
      return;
    }
    if (rewriteInPlace(inst)) return;
    if (mergeReduceOfReduce(inst)) return;
    if (reduceOfSizeOneDimensions(inst)) return;
    if (m_reciprocals && rewriteDivideByBroadcast(inst)) return;
    if (transposeOfDot(inst)) return;
    if (foldConvolutionInputPad(inst)) return;
    if (clampFromMinMax(inst)) return;
    std::optional<Literal> folded = fold(*inst);
    if (!folded) return;
    HloInstruction* constant = m_computation.addInstruction(foldedName(*inst), HloOpcode::kConstant, inst->shape());
    constant->setLiteral(std::move(*folded));
    replace(inst, constant);
  }

  // max(lo, min(x, hi)) and min(hi, max(x, lo)), in either operand order, with lo and hi broadcast scalar
  // constants and lo < hi => clamp(lo, x, hi), as XLA's simplifier does (jnp.clip, ReLU6): one op that reads x
  // once. Returns whether `inst` was replaced.
  bool clampFromMinMax(HloInstruction* inst) {
    const HloOpcode outer = inst->opcode();
    if ((outer != HloOpcode::kMaximum && outer != HloOpcode::kMinimum) || inst->operandCount() != 2 ||
        !inst->shape().isArray()) {
      return false;
    }
    const HloOpcode inner = outer == HloOpcode::kMaximum ? HloOpcode::kMinimum : HloOpcode::kMaximum;
    for (int i = 0; i < 2; ++i) {
      HloInstruction* bound = inst->operand(i);
      HloInstruction* other = inst->operand(1 - i);
      if (!scalarConstant(*bound) || other->opcode() != inner || other->operandCount() != 2) continue;
      for (int j = 0; j < 2; ++j) {
        HloInstruction* innerBound = other->operand(j);
        HloInstruction* x = other->operand(1 - j);
        if (!scalarConstant(*innerBound) || x->shape() != inst->shape()) continue;
        HloInstruction* lo = outer == HloOpcode::kMaximum ? bound : innerBound;
        HloInstruction* hi = outer == HloOpcode::kMaximum ? innerBound : bound;
        if (!(*scalarConstant(*lo) < *scalarConstant(*hi))) continue;
        HloInstruction* clamp =
            m_computation.addInstruction(inst->name(), HloOpcode::kClamp, inst->shape(), {lo, x, hi});
        clamp->mutableAttributes().metadata = inst->attributes().metadata;
        replace(inst, clamp);
        push(clamp);
        return true;
      }
    }
    return false;
  }

  // The value of a broadcast of a one-element constant of `inst`'s shape (a real number; integers exactly up to
  // 2^53), else nullopt.
  static std::optional<double> scalarConstant(const HloInstruction& inst) {
    if (inst.opcode() != HloOpcode::kBroadcast || inst.operandCount() != 1) return std::nullopt;
    const Literal* literal = decodedLiteral(*inst.operand(0));
    if (!literal || literal->valueCount() != 1) return std::nullopt;
    return literal->asDouble(0);
  }

  // convolution(pad(x, 0), k) => convolution(x, k) with the pad's edges added to the window's padding, as XLA's
  // simplifier does (a causal 1-D convolution pads its input on the left): one op instead of a pad that writes the
  // padded copy and a convolution that reads it. Only zero padding of the spatial dimensions, without interior
  // padding and without negative edges, into a window without base dilation. Returns whether `inst` changed.
  bool foldConvolutionInputPad(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kConvolution || inst->operandCount() != 2) return false;
    HloInstruction* pad = inst->operand(0);
    if (pad->opcode() != HloOpcode::kPad || pad->operandCount() != 2 || !pad->attributes().padding ||
        !isSplatOf(*pad->operand(1), 0) || m_sideEffects.hasSideEffect(*inst)) {
      return false;
    }
    StatusOr<ConvolutionDims> dims = convolutionDims(*inst);
    if (!dims.ok()) return false;
    const std::vector<PaddingDim>& padding = *pad->attributes().padding;
    if (static_cast<int>(padding.size()) != pad->shape().rank()) return false;
    auto unpadded = [&](int64_t d) {
      const PaddingDim& p = padding[static_cast<size_t>(d)];
      return p.low == 0 && p.high == 0 && p.interior == 0;
    };
    if (!unpadded(dims->lhsBatch) || !unpadded(dims->lhsFeature)) return false;
    Window window = dims->window;
    if (window.dims.size() != dims->lhsSpatial.size()) return false;
    for (size_t i = 0; i < window.dims.size(); ++i) {
      const PaddingDim& p = padding[static_cast<size_t>(dims->lhsSpatial[i])];
      WindowDim& w = window.dims[i];
      if (p.interior != 0 || p.low < 0 || p.high < 0 || w.baseDilation != 1) return false;
      w.padLow += p.low;
      w.padHigh += p.high;
    }
    inst->replaceOperand(0, pad->operand(0));
    inst->mutableAttributes().window = std::move(window);
    m_unusedCandidates.push_back(pad);
    m_changed = true;
    push(inst);
    return true;
  }

  // transpose(dot(a, b)) => dot(b, a) for a matrix product (no batch dimensions, rank-2 operands and result) whose
  // only user is the transpose: the product computed in the transposed order, as XLA's simplifier does (a
  // gradient's dW^T is one dot, not a dot and a transpose). Returns whether `inst` was replaced.
  bool transposeOfDot(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kTranspose || inst->operandCount() != 1) return false;
    HloInstruction* dot = inst->operand(0);
    const auto& perm = inst->attributes().dimensions;
    const auto& numbers = dot->attributes().dot;
    if (dot->opcode() != HloOpcode::kDot || dot->users().size() != 1 || dot == m_computation.root() ||
        !numbers || !numbers->lhsBatch.empty() || !numbers->rhsBatch.empty() || numbers->lhsContracting.size() != 1 ||
        numbers->rhsContracting.size() != 1 || dot->operandCount() != 2 || !dot->shape().isArray() ||
        dot->shape().rank() != 2 || dot->operand(0)->shape().rank() != 2 || dot->operand(1)->shape().rank() != 2 ||
        !perm || *perm != std::vector<int64_t>{1, 0} || !hasRowMajorLayout(dot->shape()) ||
        m_sideEffects.hasSideEffect(*dot) || !dot->controlSuccessors().empty() ||
        !dot->controlPredecessors().empty() || inst == m_computation.root()) {
      return false;
    }
    // The product in row-major order: a transpose JAX wrote with layout {0,1} (its operand's memory order) reads
    // the same values from it.
    Shape shape = inst->shape();
    if (!hasRowMajorLayout(shape)) shape.setLayout(Layout{{1, 0}, {}});
    HloInstruction* swapped =
        m_computation.addInstruction(dot->name(), HloOpcode::kDot, shape, {dot->operand(1), dot->operand(0)});
    swapped->mutableAttributes() = dot->attributes();
    swapped->mutableAttributes().dot = DotDimensionNumbers{{}, {}, numbers->rhsContracting, numbers->lhsContracting};
    swapped->mutableAttributes().metadata = inst->attributes().metadata;
    replace(inst, swapped);
    push(swapped);
    return true;
  }

  // a / broadcast(b) => a * broadcast(1 / b) for floating-point a when b has fewer elements: one division per
  // element of b instead of per element of a, as XLA CPU's simplifier does (a softmax's division by the row sums
  // becomes a multiplication by their reciprocals; a division by a constant, by the folded reciprocal). Only
  // for the cpu backend, where XLA's dumps show it.
  bool rewriteDivideByBroadcast(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kDivide || inst->operandCount() != 2 || !inst->shape().isArray() ||
        !isFloatingPoint(inst->shape().elementType())) {
      return false;
    }
    HloInstruction* broadcast = inst->operand(1);
    if (broadcast->opcode() != HloOpcode::kBroadcast || broadcast->operandCount() != 1 ||
        !broadcast->attributes().dimensions) {
      return false;
    }
    HloInstruction* divisor = broadcast->operand(0);
    if (!divisor->shape().isArray() || divisor->shape().elementType() != inst->shape().elementType() ||
        divisor->shape().elementCount() >= inst->shape().elementCount()) {
      return false;
    }
    const PrimitiveType type = inst->shape().elementType();
    HloInstruction* one = m_computation.addInstruction("constant", HloOpcode::kConstant, Shape::scalar(type));
    one->setLiteral(Literal::floats(Shape::scalar(type), {1.0}));
    HloInstruction* ones = m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, divisor->shape(), {one});
    ones->mutableAttributes().dimensions = std::vector<int64_t>{};
    HloInstruction* reciprocal =
        m_computation.addInstruction("divide", HloOpcode::kDivide, divisor->shape(), {ones, divisor});
    HloInstruction* spread =
        m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, broadcast->shape(), {reciprocal});
    spread->mutableAttributes().dimensions = broadcast->attributes().dimensions;
    HloInstruction* product =
        m_computation.addInstruction("multiply", HloOpcode::kMultiply, inst->shape(), {inst->operand(0), spread});
    for (HloInstruction* created : {ones, reciprocal, spread, product}) {
      created->mutableAttributes().metadata = inst->attributes().metadata;
    }
    replace(inst, product);
    for (HloInstruction* created : {ones, reciprocal, spread, product}) push(created);
    return true;
  }

  // `constant.N` for a folded `op.N`: XLA numbers instructions module-wide, so the name is usually free, and
  // it tells which instruction the value replaced.
  static std::string foldedName(const HloInstruction& inst) {
    const std::string& name = inst.name();
    size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot + 1 == name.size() ||
        !std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dot) + 1, name.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return "constant";
    }
    return "constant" + name.substr(dot);
  }

  // Whether every element of `inst` is >= 0 (NaN excluded: a NaN makes none of these rules apply to it, and
  // abs(NaN) is NaN like the NaN itself): an abs, a square x * x, a maximum with a non-negative operand, a broadcast
  // of one, or constants that are all >= 0 (-0 included: abs(-0) = 0 compares equal).
  static bool isNonNegative(const HloInstruction& inst, int depth = 0) {
    if (depth > 8) return false;
    switch (inst.opcode()) {
      case HloOpcode::kAbs: return true;
      case HloOpcode::kMultiply: return inst.operandCount() == 2 && inst.operand(0) == inst.operand(1);
      case HloOpcode::kMaximum:
        return inst.operandCount() == 2 &&
               (isNonNegative(*inst.operand(0), depth + 1) || isNonNegative(*inst.operand(1), depth + 1));
      case HloOpcode::kBroadcast: return inst.operandCount() == 1 && isNonNegative(*inst.operand(0), depth + 1);
      case HloOpcode::kConstant: {
        const Literal* literal = decodedLiteral(inst);
        if (!literal || literal->valueCount() == 0) return false;
        for (int64_t i = 0; i < literal->valueCount(); ++i) {
          if (!(literal->asDouble(i) >= 0)) return false;
        }
        return true;
      }
      default: return false;
    }
  }

  // The operand (or zero constant) that `inst` equals, when it has exactly the same shape, layout included.
  static HloInstruction* identityReplacement(const HloInstruction& inst) {
    auto same = [&](HloInstruction* candidate) { return candidate->shape() == inst.shape() ? candidate : nullptr; };
    const InstructionAttributes& attributes = inst.attributes();
    PrimitiveType type = inst.shape().elementType();
    bool arithmetic = inst.shape().isArray() && (isInteger(type) || isFloatingPoint(type));
    switch (inst.opcode()) {
      case HloOpcode::kAdd:
        if (!arithmetic || inst.operandCount() != 2) return nullptr;
        if (isSplatOf(*inst.operand(1), 0)) return same(inst.operand(0));
        if (isSplatOf(*inst.operand(0), 0)) return same(inst.operand(1));
        return nullptr;
      case HloOpcode::kSubtract:
        if (!arithmetic || inst.operandCount() != 2) return nullptr;
        return isSplatOf(*inst.operand(1), 0) ? same(inst.operand(0)) : nullptr;
      case HloOpcode::kMultiply: {
        if (!arithmetic || inst.operandCount() != 2) return nullptr;
        if (isSplatOf(*inst.operand(1), 1)) return same(inst.operand(0));
        if (isSplatOf(*inst.operand(0), 1)) return same(inst.operand(1));
        // x * 0 is not 0 for floats when x is NaN or infinite.
        if (!isInteger(type)) return nullptr;
        if (isSplatOf(*inst.operand(1), 0)) return same(inst.operand(1));
        if (isSplatOf(*inst.operand(0), 0)) return same(inst.operand(0));
        return nullptr;
      }
      case HloOpcode::kDivide:
        if (!arithmetic || inst.operandCount() != 2) return nullptr;
        return isSplatOf(*inst.operand(1), 1) ? same(inst.operand(0)) : nullptr;
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum: {
        // max(x, -inf) and min(x, +inf) are x, NaN included (both propagate NaN).
        if (!arithmetic || !isFloatingPoint(type) || inst.operandCount() != 2) return nullptr;
        const double neutral =
            (inst.opcode() == HloOpcode::kMaximum ? -1 : 1) * std::numeric_limits<double>::infinity();
        if (isSplatOf(*inst.operand(1), neutral)) return same(inst.operand(0));
        if (isSplatOf(*inst.operand(0), neutral)) return same(inst.operand(1));
        return nullptr;
      }
      case HloOpcode::kSelect: {
        // select(true, a, b) is a and select(false, a, b) is b, for a predicate that is one constant everywhere
        // (jnp.var's `where(n - ddof > 0, var, nan)` once n and ddof are folded), as in XLA's simplifier.
        if (inst.operandCount() != 3 || !inst.operand(0)->shape().isArray()) return nullptr;
        if (isSplatOf(*inst.operand(0), 1)) return same(inst.operand(1));
        if (isSplatOf(*inst.operand(0), 0)) return same(inst.operand(2));
        return nullptr;
      }
      case HloOpcode::kAbs:
        // abs(x) is x when x is never negative (a ReLU's output, a square, an abs), as in XLA's simplifier.
        if (!arithmetic || isComplex(type) || inst.operandCount() != 1 || !isNonNegative(*inst.operand(0))) {
          return nullptr;
        }
        return same(inst.operand(0));
      case HloOpcode::kReshape:
      case HloOpcode::kConvert:
      case HloOpcode::kCopy:
      case HloOpcode::kBitcast:
        // Shape equality includes the layout, so a copy or bitcast that changes the layout stays.
        return inst.operandCount() == 1 ? same(inst.operand(0)) : nullptr;
      case HloOpcode::kTranspose:
        if (inst.operandCount() != 1 || !attributes.dimensions || !isIdentityPermutation(*attributes.dimensions)) {
          return nullptr;
        }
        return same(inst.operand(0));
      case HloOpcode::kBroadcast: {
        if (inst.operandCount() != 1 || inst.operand(0)->shape().rank() != inst.shape().rank()) return nullptr;
        const std::vector<int64_t> none;
        const std::vector<int64_t>& dims = attributes.dimensions ? *attributes.dimensions : none;
        if (static_cast<int>(dims.size()) != inst.shape().rank() || !isIdentityPermutation(dims)) return nullptr;
        return same(inst.operand(0));
      }
      case HloOpcode::kSlice: {
        if (inst.operandCount() != 1 || !attributes.slice) return nullptr;
        const Shape& in = inst.operand(0)->shape();
        if (!in.isArray() || static_cast<int>(attributes.slice->size()) != in.rank()) return nullptr;
        for (int d = 0; d < in.rank(); ++d) {
          const SliceDim& s = (*attributes.slice)[static_cast<size_t>(d)];
          if (s.start != 0 || s.limit != in.dimension(d) || s.stride != 1) return nullptr;
        }
        return same(inst.operand(0));
      }
      default: return nullptr;
    }
  }

  // transpose(transpose(x)) and reshape(reshape(x)) read x directly. Returns whether `inst` changed.
  bool rewriteInPlace(HloInstruction* inst) {
    if (inst->operandCount() != 1 || inst->operand(0)->opcode() != inst->opcode()) return false;
    HloInstruction* inner = inst->operand(0);
    if (inner->operandCount() != 1) return false;
    HloInstruction* source = inner->operand(0);
    if (inst->opcode() == HloOpcode::kReshape) {
      inst->replaceOperand(0, source);
    } else if (inst->opcode() == HloOpcode::kTranspose) {
      const auto& outer = inst->attributes().dimensions;
      const auto& first = inner->attributes().dimensions;
      if (!outer || !first || outer->size() != first->size()) return false;
      // result dim i = inner dim outer[i] = source dim first[outer[i]].
      std::vector<int64_t> composed;
      composed.reserve(outer->size());
      for (int64_t d : *outer) {
        if (d < 0 || d >= static_cast<int64_t>(first->size())) return false;
        composed.push_back((*first)[static_cast<size_t>(d)]);
      }
      if (isIdentityPermutation(composed) && source->shape() == inst->shape()) {
        replace(inst, source);
        return true;
      }
      inst->mutableAttributes().dimensions = std::move(composed);
      inst->replaceOperand(0, source);
    } else {
      return false;
    }
    m_unusedCandidates.push_back(inner);
    m_changed = true;
    push(inst);
    return true;
  }

  // The binary op a reducer applies to its two parameters (add, multiply, maximum, ...), or nullopt when it does
  // something else.
  static std::optional<HloOpcode> reducerOp(const HloComputation* reducer) {
    if (reducer == nullptr || reducer->root() == nullptr) return std::nullopt;
    const HloInstruction* root = reducer->root();
    std::vector<HloInstruction*> parameters = reducer->parameters();
    if (parameters.size() != 2 || root->operandCount() != 2 || !isElementwise(root->opcode())) return std::nullopt;
    const bool onParameters = (root->operand(0) == parameters[0] && root->operand(1) == parameters[1]) ||
                              (root->operand(0) == parameters[1] && root->operand(1) == parameters[0]);
    if (!onParameters) return std::nullopt;
    return root->opcode();
  }

  static bool equalScalarConstants(const HloInstruction& a, const HloInstruction& b) {
    const Literal* x = decodedLiteral(a);
    const Literal* y = decodedLiteral(b);
    return x && y && a.shape() == b.shape() && x->valueCount() == 1 && y->valueCount() == 1 &&
           x->asDouble(0) == y->asDouble(0);
  }

  // Whether `value` leaves every x unchanged under `op` (x + 0, x * 1, max(x, -inf), ...).
  static bool isIdentityOf(HloOpcode op, const HloInstruction& value) {
    switch (op) {
      case HloOpcode::kAdd:
      case HloOpcode::kOr:
      case HloOpcode::kXor: return isSplatOf(value, 0);
      case HloOpcode::kMultiply:
      case HloOpcode::kAnd: return isSplatOf(value, 1);
      case HloOpcode::kMaximum: return isSplatOf(value, -std::numeric_limits<double>::infinity());
      case HloOpcode::kMinimum: return isSplatOf(value, std::numeric_limits<double>::infinity());
      default: return false;
    }
  }

  // A reduce over dimensions of size 1 from its op's identity only drops those dimensions: a reshape, as in XLA's
  // simplifier (JAX's gradient of a broadcast [1,n] reduces over the 1).
  bool reduceOfSizeOneDimensions(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kReduce || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
    HloInstruction* input = inst->operand(0);
    if (!input->shape().isArray() || input->shape().elementCount() != inst->shape().elementCount() ||
        input->shape().elementType() != inst->shape().elementType()) {
      return false;
    }
    const std::optional<HloOpcode> op = reducerOp(inst->toApply());
    if (!op || !isIdentityOf(*op, *inst->operand(1))) return false;
    // pred's "or" with false and "and" with true; integers and floats as their values.
    if (input->shape().elementType() == PrimitiveType::kPred && *op != HloOpcode::kOr && *op != HloOpcode::kAnd) {
      return false;
    }
    HloInstruction* reshape = m_computation.addInstruction("reshape", HloOpcode::kReshape, inst->shape(), {input});
    reshape->mutableAttributes().metadata = inst->attributes().metadata;
    replace(inst, reshape);
    push(reshape);
    return true;
  }

  // reduce(reduce(a, D1), D2) => reduce(a, D1 and D2 in a's dimensions) when both apply the same binary op and
  // start from equal constants and nothing else reads the inner one, as XLA's simplifier does: one reduction
  // instead of two kernels (a mean over the per-row sums of a loss). HLO leaves the order of a reduction
  // unspecified, so floating-point sums may round differently.
  bool mergeReduceOfReduce(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kReduce || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
    HloInstruction* inner = inst->operand(0);
    if (inner->opcode() != HloOpcode::kReduce || inner->operandCount() != 2 || !inner->shape().isArray() ||
        inner->users().size() != 1 || inner == m_computation.root() || !inner->controlSuccessors().empty() ||
        inner->shape().elementType() != inst->shape().elementType()) {
      return false;
    }
    const std::optional<HloOpcode> op = reducerOp(inst->toApply());
    if (!op || op != reducerOp(inner->toApply()) || !equalScalarConstants(*inst->operand(1), *inner->operand(1))) {
      return false;
    }
    const std::vector<int64_t> innerDims = inner->attributes().dimensions.value_or(std::vector<int64_t>{});
    const std::vector<int64_t> outerDims = inst->attributes().dimensions.value_or(std::vector<int64_t>{});
    const int rank = inner->operand(0)->shape().rank();
    std::vector<int64_t> kept;  // the source's dimensions the inner reduce keeps, in order
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(innerDims.begin(), innerDims.end(), d) == innerDims.end()) kept.push_back(d);
    }
    std::vector<int64_t> merged = innerDims;
    for (int64_t d : outerDims) {
      if (d < 0 || d >= static_cast<int64_t>(kept.size())) return false;
      merged.push_back(kept[static_cast<size_t>(d)]);
    }
    std::sort(merged.begin(), merged.end());
    inst->replaceOperand(0, inner->operand(0));
    inst->mutableAttributes().dimensions = std::move(merged);
    m_unusedCandidates.push_back(inner);
    m_changed = true;
    push(inst);
    return true;
  }

  static std::optional<Literal> fold(const HloInstruction& inst) {
    if (inst.operandCount() == 0) return std::nullopt;
    switch (inst.opcode()) {
      case HloOpcode::kBroadcast:
      case HloOpcode::kReshape:
      case HloOpcode::kTranspose: return foldDataMovement(inst);
      default: return isElementwise(inst.opcode()) ? foldElementwise(inst) : std::nullopt;
    }
  }

  void replace(HloInstruction* inst, HloInstruction* replacement) {
    std::vector<HloInstruction*> users = inst->users();
    inst->replaceAllUsesWith(replacement);
    m_unusedCandidates.push_back(inst);
    for (HloInstruction* user : users) push(user);
    m_changed = true;
  }

  void removeUnused() {
    std::unordered_set<const HloInstruction*> removed;
    std::vector<HloInstruction*> work = std::move(m_unusedCandidates);
    std::vector<HloInstruction*> predecessors;
    while (!work.empty()) {
      HloInstruction* inst = work.back();
      work.pop_back();
      // A pointer in `removed` was freed: it is never dereferenced (nothing is allocated here that could
      // reuse its address for an instruction).
      if (removed.count(inst) || !inst->users().empty() || inst == m_computation.root() ||
          inst->opcode() == HloOpcode::kParameter || !inst->controlSuccessors().empty() ||
          m_sideEffects.hasSideEffect(*inst)) {
        continue;
      }
      predecessors = inst->operands();
      predecessors.insert(predecessors.end(), inst->controlPredecessors().begin(), inst->controlPredecessors().end());
      if (!m_computation.removeInstruction(inst).ok()) continue;
      removed.insert(inst);
      work.insert(work.end(), predecessors.begin(), predecessors.end());
    }
  }

  HloComputation& m_computation;
  SideEffectAnalysis& m_sideEffects;
  bool m_reciprocals = false;
  std::deque<HloInstruction*> m_queue;
  std::unordered_set<HloInstruction*> m_queued;
  std::vector<HloInstruction*> m_unusedCandidates;
  bool m_changed = false;
};

}  // namespace

StatusOr<bool> AlgebraicSimplifier::run(HloModule& module, PassContext& context) {
  const bool reciprocals = context.fusionConfig().backend == Backend::kCpu;
  SideEffectAnalysis sideEffects;
  bool changed = false;
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) continue;
    StatusOr<bool> result = ComputationSimplifier(*computation, sideEffects, reciprocals).run();
    if (!result.ok()) return result.status();
    changed = changed || *result;
  }
  return changed;
}

}  // namespace fusionscope::core
