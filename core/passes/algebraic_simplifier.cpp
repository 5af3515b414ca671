#include "core/passes/algebraic_simplifier.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/permutation.h"
#include "core/ir/shape_rules.h"
#include "core/passes/constant_folding.h"
#include "core/passes/dce.h"

namespace fusionscope::core {
namespace {

// A splat constant equal to `value`, or a broadcast of a scalar constant equal to it.
// The scalar 0 of `type` (integer, real or complex).
Literal zeroOf(PrimitiveType type) {
  if (isInteger(type)) return Literal::integers(Shape::scalar(type), {0});
  return Literal::floats(Shape::scalar(type), std::vector<double>(isComplex(type) ? 2 : 1, 0.0));
}

bool isSplatOf(const HloInstruction& inst, double value) {
  const HloInstruction* constant = &inst;
  if (inst.opcode() == HloOpcode::kBroadcast && inst.operandCount() == 1 && inst.operand(0)->shape().isScalar()) {
    constant = inst.operand(0);
  }
  const Literal* literal = decodedLiteral(*constant);
  return literal && literal->valueCount() > 0 && literal->isSplat() && literal->asDouble(0) == value;
}

// Runs the rewrites on one computation from a worklist. Nothing is removed until the worklist is empty, so
// every queued pointer stays valid; then the instructions the rewrites left unused go, with any operand
// that loses its last user that way.
class ComputationSimplifier {
 public:
  ComputationSimplifier(HloModule& module, HloComputation& computation, SideEffectAnalysis& sideEffects,
                        std::map<PrimitiveType, HloComputation*>& addReducers, bool reciprocals)
      : m_module(module),
        m_computation(computation),
        m_sideEffects(sideEffects),
        m_addReducers(addReducers),
        m_reciprocals(reciprocals) {}

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
    if (negateOutOfSum(inst)) return;
    if (mergeConstantFactors(inst)) return;
    if (multiplyByPredicate(inst)) return;
    if (broadcastOfIota(inst)) return;
    if (reduceOfSizeOneDimensions(inst)) return;
    if (m_reciprocals && rewriteDivideByBroadcast(inst)) return;
    if (m_reciprocals && divideByExp(inst)) return;
    if (divideOfDivide(inst)) return;
    if (transposeOfDot(inst)) return;
    if (dotOfVectors(inst)) return;
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

  // dot(a, b) where neither operand has a dimension of its own (each dimension of each is a batch or a contracting
  // dimension: a batched inner product, einsum 'bi,bi->b', jnp.dot of two vectors) => reduce(multiply(a, b)) over
  // the contracting dimensions, as XLA's simplifier does on both backends (such a dot is no matrix product for a
  // GEMM; as a reduction it fuses with what makes its operands). b is transposed into a's dimension order when the
  // two differ; both are converted to the accumulation type (the result's, f32 for a narrower float result, which
  // is converted back after the sum); the sum's batch dimensions are transposed into the dot's order when a lists
  // them out of order. Row-major operands and result only. Returns whether `inst` was replaced.
  bool dotOfVectors(HloInstruction* inst) {
    const auto& numbers = inst->attributes().dot;
    if (inst->opcode() != HloOpcode::kDot || inst->operandCount() != 2 || !numbers || !inst->shape().isArray() ||
        m_sideEffects.hasSideEffect(*inst) || !inst->controlSuccessors().empty() ||
        !inst->controlPredecessors().empty()) {
      return false;
    }
    // A dot that names its algorithm (dot_bf16_bf16_f32, ...) rounds its operands its own way: XLA's simplifier
    // keeps those it cannot write as a multiply of that precision; here, all of them.
    for (const auto& [key, value] : inst->attributes().raw) {
      if (key == "algorithm") return false;
    }
    HloInstruction* lhs = inst->operand(0);
    HloInstruction* rhs = inst->operand(1);
    const Shape& lhsShape = lhs->shape();
    const Shape& rhsShape = rhs->shape();
    const size_t rank = numbers->lhsBatch.size() + numbers->lhsContracting.size();
    const PrimitiveType resultType = inst->shape().elementType();
    if (!lhsShape.isArray() || !rhsShape.isArray() || static_cast<size_t>(lhsShape.rank()) != rank ||
        static_cast<size_t>(rhsShape.rank()) != rank || numbers->rhsBatch.size() != numbers->lhsBatch.size() ||
        numbers->rhsContracting.size() != numbers->lhsContracting.size() || !hasRowMajorLayout(lhsShape) ||
        !hasRowMajorLayout(rhsShape) || !hasRowMajorLayout(inst->shape()) || resultType == PrimitiveType::kPred ||
        !(isFloatingPoint(resultType) || isComplex(resultType) || isInteger(resultType))) {
      return false;
    }
    // rhsOrder[d]: the dimension of b that lines up with dimension d of a.
    std::vector<int64_t> rhsOrder(rank, -1);
    for (size_t k = 0; k < numbers->lhsBatch.size(); ++k) {
      rhsOrder[static_cast<size_t>(numbers->lhsBatch[k])] = numbers->rhsBatch[k];
    }
    for (size_t k = 0; k < numbers->lhsContracting.size(); ++k) {
      rhsOrder[static_cast<size_t>(numbers->lhsContracting[k])] = numbers->rhsContracting[k];
    }
    if (std::find(rhsOrder.begin(), rhsOrder.end(), -1) != rhsOrder.end()) return false;
    for (size_t d = 0; d < rank; ++d) {
      if (rhsShape.dimension(static_cast<int>(rhsOrder[d])) != lhsShape.dimension(static_cast<int>(d))) return false;
    }

    const PrimitiveType accumulation =
        isFloatingPoint(resultType) && primitiveTypeBitWidth(resultType) < 32 ? PrimitiveType::kF32 : resultType;
    std::vector<HloInstruction*> created;
    auto make = [&](std::string_view name, HloOpcode opcode, Shape shape, std::vector<HloInstruction*> operands) {
      HloInstruction* made = m_computation.addInstruction(std::string(name), opcode, std::move(shape), operands);
      made->mutableAttributes().metadata = inst->attributes().metadata;
      created.push_back(made);
      return made;
    };
    auto convert = [&](HloInstruction* value, PrimitiveType type) {
      if (value->shape().elementType() == type) return value;
      return make("convert", HloOpcode::kConvert, Shape(type, value->shape().dimensions()), {value});
    };
    HloInstruction* rhsAligned = rhs;
    bool identity = true;
    for (size_t d = 0; d < rank; ++d) identity = identity && rhsOrder[d] == static_cast<int64_t>(d);
    if (!identity) {
      rhsAligned =
          make("transpose", HloOpcode::kTranspose, Shape(rhsShape.elementType(), lhsShape.dimensions()), {rhs});
      rhsAligned->mutableAttributes().dimensions = rhsOrder;
    }
    HloInstruction* product = make("multiply", HloOpcode::kMultiply, Shape(accumulation, lhsShape.dimensions()),
                                   {convert(lhs, accumulation), convert(rhsAligned, accumulation)});
    // The sum keeps a's batch dimensions in a's order.
    std::vector<int64_t> contracting = numbers->lhsContracting;
    std::sort(contracting.begin(), contracting.end());
    std::vector<int64_t> keptDims;  // a's batch dimensions, ascending
    std::vector<int64_t> keptSizes;
    for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
      if (std::binary_search(contracting.begin(), contracting.end(), d)) continue;
      keptDims.push_back(d);
      keptSizes.push_back(lhsShape.dimension(static_cast<int>(d)));
    }
    HloInstruction* zero = make("constant", HloOpcode::kConstant, Shape::scalar(accumulation), {});
    zero->setLiteral(zeroOf(accumulation));
    HloInstruction* sum = make("reduce", HloOpcode::kReduce, Shape(accumulation, keptSizes), {product, zero});
    sum->mutableAttributes().dimensions = contracting;
    HloComputation*& reducer = m_addReducers[accumulation];
    if (reducer == nullptr) reducer = addScalarAddComputation(m_module, accumulation);
    sum->mutableCalledComputationRefs().push_back({"to_apply", {reducer}, false});
    // The dot's dimension k is a's batch dimension lhsBatch[k]: at position index-of(lhsBatch[k]) in the sum.
    std::vector<int64_t> toDotOrder;
    for (int64_t d : numbers->lhsBatch) {
      toDotOrder.push_back(std::lower_bound(keptDims.begin(), keptDims.end(), d) - keptDims.begin());
    }
    HloInstruction* result = sum;
    if (!isIdentityPermutation(toDotOrder)) {
      result = make("transpose", HloOpcode::kTranspose, Shape(accumulation, inst->shape().dimensions()), {sum});
      result->mutableAttributes().dimensions = toDotOrder;
    }
    result = convert(result, resultType);
    result->mutableShape().setLayout(inst->shape().layout());
    replace(inst, result);
    for (HloInstruction* made : created) push(made);
    return true;
  }

  // a / broadcast(b) => a * broadcast(1 / b) for floating-point a when b has fewer elements and the broadcast is
  // b's only user: one division per element of b instead of per element of a, as XLA CPU's simplifier does (a
  // softmax's division by the row sums becomes a multiplication by their reciprocals; a division by a constant, by
  // the folded reciprocal, however many read it). A computed b that others read too stays as it is, as in XLA
  // (gp_regression's kernel matrix divides by exp(2 log_scale) twice: once where the gradient reads that exp again,
  // which keeps its division, and once where nothing else does). Only for the cpu backend, where XLA's dumps show it.
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
        divisor->shape().elementCount() >= inst->shape().elementCount() ||
        (divisor->opcode() != HloOpcode::kConstant && !usedOnlyBy(*divisor, *broadcast))) {
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

  // a / exp(b) => a * exp(-b) for real floating-point values, as XLA CPU's simplifier does (its fast math allows
  // it): a multiplication where a division was, and 1 / exp(b), as the rule above writes a reciprocal, becomes
  // exp(-b) once the product with one goes. Only for the cpu backend, with the rule above.
  bool divideByExp(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kDivide || inst->operandCount() != 2 || !inst->shape().isArray() ||
        !isFloatingPoint(inst->shape().elementType()) || isComplex(inst->shape().elementType())) {
      return false;
    }
    HloInstruction* exp = inst->operand(1);
    if (exp->opcode() != HloOpcode::kExp || exp->operandCount() != 1 || exp->shape() != inst->shape()) return false;
    HloInstruction* negate =
        m_computation.addInstruction("negate", HloOpcode::kNegate, exp->operand(0)->shape(), {exp->operand(0)});
    HloInstruction* newExp = m_computation.addInstruction("exponential", HloOpcode::kExp, exp->shape(), {negate});
    HloInstruction* product =
        m_computation.addInstruction("multiply", HloOpcode::kMultiply, inst->shape(), {inst->operand(0), newExp});
    for (HloInstruction* created : {negate, newExp, product}) {
      created->mutableAttributes().metadata = inst->attributes().metadata;
    }
    replace(inst, product);
    for (HloInstruction* created : {negate, newExp, product}) push(created);
    return true;
  }

  // Quotients of quotients become one division, as XLA's simplifier writes them on both backends (not for integers,
  // whose divisions truncate): (a / b) / (c / d) => (a * d) / (b * c), (a / b) / c => a / (b * c) and
  // a / (b / c) => (a * c) / b. AdamW's m / (1 - b1^t) / (sqrt(v_hat) + eps) is one division by a product. The
  // inner quotient stays for its other readers. Floating-point results may round differently.
  bool divideOfDivide(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kDivide || inst->operandCount() != 2 || !inst->shape().isArray() ||
        !isFloatingPoint(inst->shape().elementType())) {
      return false;
    }
    auto isQuotient = [&](const HloInstruction* value) {
      return value->opcode() == HloOpcode::kDivide && value->operandCount() == 2 && value->shape() == inst->shape();
    };
    HloInstruction* numerator = inst->operand(0);
    HloInstruction* denominator = inst->operand(1);
    const bool outerTop = isQuotient(numerator);
    const bool outerBottom = isQuotient(denominator);
    if (!outerTop && !outerBottom) return false;
    auto multiply = [&](HloInstruction* a, HloInstruction* b) {
      HloInstruction* product = m_computation.addInstruction("multiply", HloOpcode::kMultiply, inst->shape(), {a, b});
      product->mutableAttributes().metadata = inst->attributes().metadata;
      return product;
    };
    HloInstruction* top = nullptr;
    HloInstruction* bottom = nullptr;
    if (outerTop && outerBottom) {
      top = multiply(numerator->operand(0), denominator->operand(1));
      bottom = multiply(numerator->operand(1), denominator->operand(0));
    } else if (outerTop) {
      top = numerator->operand(0);
      bottom = multiply(numerator->operand(1), denominator);
    } else {
      top = multiply(numerator, denominator->operand(1));
      bottom = denominator->operand(0);
    }
    HloInstruction* quotient = m_computation.addInstruction("divide", HloOpcode::kDivide, inst->shape(), {top, bottom});
    quotient->mutableAttributes().metadata = inst->attributes().metadata;
    replace(inst, quotient);
    for (HloInstruction* created : {top, bottom, quotient}) push(created);
    return true;
  }

  // Whether `user` is the only reader of `value` (the computation's result is read by its caller), and reads it once.
  bool usedOnlyBy(const HloInstruction& value, const HloInstruction& user) const {
    return &value != m_computation.root() && value.users().size() == 1 && value.users().front() == &user &&
           std::count(user.operands().begin(), user.operands().end(), &value) == 1;
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
      case HloOpcode::kCompare: {
        // Of predicates: x != false and x == true are x, either side, as in XLA's simplifier (jnp.remainder's sign
        // test against a divisor folded to a constant).
        if (inst.operandCount() != 2 || !attributes.direction || type != PrimitiveType::kPred ||
            inst.operand(0)->shape().elementType() != PrimitiveType::kPred ||
            inst.operand(1)->shape().elementType() != PrimitiveType::kPred) {
          return nullptr;
        }
        const double neutral = *attributes.direction == ComparisonDirection::kNe   ? 0
                               : *attributes.direction == ComparisonDirection::kEq ? 1
                                                                                   : -1;
        if (neutral < 0) return nullptr;
        if (isSplatOf(*inst.operand(1), neutral)) return same(inst.operand(0));
        if (isSplatOf(*inst.operand(0), neutral)) return same(inst.operand(1));
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

  // transpose(transpose(x)), reshape(reshape(x)) and slice(slice(x)) read x directly, as in XLA's simplifier.
  // Returns whether `inst` changed.
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
    } else if (inst->opcode() == HloOpcode::kSlice) {
      // Element j of the outer slice is element start2 + j * stride2 of the inner one, which is element
      // start1 + (start2 + j * stride2) * stride1 of the source (a top-k's first column of its first k).
      const auto& outer = inst->attributes().slice;
      const auto& first = inner->attributes().slice;
      const int rank = inst->shape().rank();
      if (!outer || !first || static_cast<int>(outer->size()) != rank || static_cast<int>(first->size()) != rank) {
        return false;
      }
      std::vector<SliceDim> composed;
      for (int d = 0; d < rank; ++d) {
        const SliceDim& a = (*first)[static_cast<size_t>(d)];
        const SliceDim& b = (*outer)[static_cast<size_t>(d)];
        const int64_t count = inst->shape().dimension(d);
        SliceDim c;
        c.start = a.start + b.start * a.stride;
        c.stride = a.stride * b.stride;
        c.limit = count == 0 ? c.start : c.start + (count - 1) * c.stride + 1;
        composed.push_back(c);
      }
      inst->mutableAttributes().slice = std::move(composed);
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

  // reduce(negate(x), 0, add) => negate(reduce(x, 0, add)) when nothing else reads the negate, as XLA's simplifier
  // does (JAX's gradient of a subtraction sums a negated tensor): the negation runs once per sum, not once per
  // element, and the sum reads x itself.
  bool negateOutOfSum(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kReduce || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
    HloInstruction* negate = inst->operand(0);
    const PrimitiveType type = inst->shape().elementType();
    if (negate->opcode() != HloOpcode::kNegate || negate->users().size() != 1 || negate == m_computation.root() ||
        !negate->controlSuccessors().empty() || negate->shape().elementType() != type ||
        !(isFloatingPoint(type) || isSignedInteger(type))) {
      return false;
    }
    if (reducerOp(inst->toApply()) != HloOpcode::kAdd || !isSplatOf(*inst->operand(1), 0)) return false;
    HloInstruction* sum = m_computation.addInstruction(inst->name(), HloOpcode::kReduce, inst->shape(),
                                                       {negate->operand(0), inst->operand(1)});
    sum->mutableAttributes() = inst->attributes();
    sum->mutableCalledComputationRefs() = inst->calledComputationRefs();
    HloInstruction* negated = m_computation.addInstruction("negate", HloOpcode::kNegate, inst->shape(), {sum});
    negated->mutableAttributes().metadata = negate->attributes().metadata;
    replace(inst, negated);
    // Unlinked now, so that x's users are the ones that stay (a reduce of the new sum merges with it this run).
    inst->dropAllOperands();
    negate->dropAllOperands();
    m_unusedCandidates.push_back(negate);
    push(sum);
    push(negated);
    return true;
  }

  // broadcast(iota) => an iota of the broadcast's shape along the dimension the iota's lands on, as XLA's simplifier
  // does (jax.nn.one_hot's `iota == labels` over a batch): one op that CSE can share with other iotas of that shape.
  bool broadcastOfIota(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kBroadcast || inst->operandCount() != 1 || !inst->shape().isArray()) return false;
    const HloInstruction* iota = inst->operand(0);
    const auto& dims = inst->attributes().dimensions;
    if (iota->opcode() != HloOpcode::kIota || !iota->attributes().iotaDimension || !dims ||
        static_cast<int>(dims->size()) != iota->shape().rank()) {
      return false;
    }
    const int64_t along = *iota->attributes().iotaDimension;
    if (along < 0 || along >= static_cast<int64_t>(dims->size())) return false;
    HloInstruction* spread = m_computation.addInstruction("iota", HloOpcode::kIota, inst->shape(), {});
    spread->mutableAttributes().iotaDimension = (*dims)[static_cast<size_t>(along)];
    spread->mutableAttributes().metadata = iota->attributes().metadata;
    replace(inst, spread);
    push(spread);
    return true;
  }

  // (a * c1) * c2 => a * (c1 * c2), in either operand order, for a that is not a constant and c1, c2 both constants
  // or both broadcasts of scalar constants, as XLA's simplifier does (a running statistic's momentum times a mean's
  // 1/n): the constants fold into one, one multiply per element instead of two. Floating-point products may round
  // differently.
  bool mergeConstantFactors(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kMultiply || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
    auto isConstant = [](const HloInstruction* value) { return value->opcode() == HloOpcode::kConstant; };
    auto isScalarSplat = [&](const HloInstruction* value) {
      return value->opcode() == HloOpcode::kBroadcast && value->operandCount() == 1 && isConstant(value->operand(0)) &&
             value->operand(0)->shape().isScalar();
    };
    for (int i = 0; i < 2; ++i) {
      HloInstruction* c2 = inst->operand(i);
      HloInstruction* inner = inst->operand(1 - i);
      if (inner->opcode() != HloOpcode::kMultiply || inner->operandCount() != 2 || inner->shape() != inst->shape()) {
        continue;
      }
      for (int j = 0; j < 2; ++j) {
        HloInstruction* c1 = inner->operand(j);
        HloInstruction* a = inner->operand(1 - j);
        if (isConstant(a)) continue;
        HloInstruction* factor = nullptr;
        if (isConstant(c1) && isConstant(c2) && c1->shape() == c2->shape()) {
          factor = m_computation.addInstruction("multiply", HloOpcode::kMultiply, c1->shape(), {c1, c2});
          push(factor);
        } else if (isScalarSplat(c1) && isScalarSplat(c2) && c1->operand(0)->shape() == c2->operand(0)->shape()) {
          HloInstruction* product = m_computation.addInstruction(
              "multiply", HloOpcode::kMultiply, c1->operand(0)->shape(), {c1->operand(0), c2->operand(0)});
          factor = m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, inst->shape(), {product});
          factor->mutableAttributes().dimensions = std::vector<int64_t>{};
          push(product);
          push(factor);
        } else {
          continue;
        }
        HloInstruction* product =
            m_computation.addInstruction(inst->name(), HloOpcode::kMultiply, inst->shape(), {a, factor});
        product->mutableAttributes().metadata = inst->attributes().metadata;
        replace(inst, product);
        push(product);
        return true;
      }
    }
    return false;
  }

  // x * convert(p) and convert(p) * x, with p a predicate of the product's dimensions => select(p, x, 0), as XLA's
  // simplifier does (JAX's jnp.eye is a convert of `iota == iota`, and the gradient of a product with it multiplies by
  // that convert again): the mask stays a predicate, one select instead of a convert and a multiply. Where p is
  // false and x is inf or NaN, the select gives 0 and the product NaN; XLA's rewrite accepts that too. Not for
  // complex products.
  bool multiplyByPredicate(HloInstruction* inst) {
    if (inst->opcode() != HloOpcode::kMultiply || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
    const PrimitiveType type = inst->shape().elementType();
    if (isComplex(type) || type == PrimitiveType::kPred) return false;
    for (int i = 0; i < 2; ++i) {
      HloInstruction* convert = inst->operand(i);
      if (convert->opcode() != HloOpcode::kConvert || convert->operandCount() != 1) continue;
      HloInstruction* predicate = convert->operand(0);
      if (!predicate->shape().isArray() || predicate->shape().elementType() != PrimitiveType::kPred ||
          predicate->shape().dimensions() != inst->shape().dimensions()) {
        continue;
      }
      HloInstruction* zero = m_computation.addInstruction("constant", HloOpcode::kConstant, Shape::scalar(type));
      zero->setLiteral(zeroOf(type));
      HloInstruction* zeros = m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, inst->shape(), {zero});
      zeros->mutableAttributes().dimensions = std::vector<int64_t>{};
      HloInstruction* select = m_computation.addInstruction("select", HloOpcode::kSelect, inst->shape(),
                                                            {predicate, inst->operand(1 - i), zeros});
      for (HloInstruction* created : {zeros, select})
        created->mutableAttributes().metadata = inst->attributes().metadata;
      replace(inst, select);
      for (HloInstruction* created : {zero, zeros, select}) push(created);
      return true;
    }
    return false;
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

  HloModule& m_module;
  HloComputation& m_computation;
  SideEffectAnalysis& m_sideEffects;
  std::map<PrimitiveType, HloComputation*>& m_addReducers;
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
  std::map<PrimitiveType, HloComputation*> addReducers;
  bool changed = false;
  // A snapshot: a rewrite may add a reducer computation.
  std::vector<HloComputation*> computations;
  for (const auto& computation : module.computations()) computations.push_back(computation.get());
  for (HloComputation* computation : computations) {
    if (computation->isFusionComputation()) continue;
    StatusOr<bool> result = ComputationSimplifier(module, *computation, sideEffects, addReducers, reciprocals).run();
    if (!result.ok()) return result.status();
    changed = changed || *result;
  }
  return changed;
}

}  // namespace fusionscope::core
