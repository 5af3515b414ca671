// The simplifier's rewrites of reductions (merged, size-one, negated sums) and of broadcast iotas, as XLA's.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/ir/permutation.h"
#include "core/ir/shape_rules.h"
#include "core/passes/computation_simplifier.h"
#include "core/passes/constant_folding.h"

namespace fusionscope::core::simplifier {

// The binary op a reducer applies to its two parameters (add, multiply, maximum, ...), or nullopt when it does
// something else.
std::optional<HloOpcode> ComputationSimplifier::reducerOp(const HloComputation* reducer) {
  if (reducer == nullptr || reducer->root() == nullptr) return std::nullopt;
  const HloInstruction* root = reducer->root();
  std::vector<HloInstruction*> parameters = reducer->parameters();
  if (parameters.size() != 2 || root->operandCount() != 2 || !isElementwise(root->opcode())) return std::nullopt;
  const bool onParameters = (root->operand(0) == parameters[0] && root->operand(1) == parameters[1]) ||
                            (root->operand(0) == parameters[1] && root->operand(1) == parameters[0]);
  if (!onParameters) return std::nullopt;
  return root->opcode();
}

bool ComputationSimplifier::equalScalarConstants(const HloInstruction& a, const HloInstruction& b) {
  const Literal* x = decodedLiteral(a);
  const Literal* y = decodedLiteral(b);
  return x && y && a.shape() == b.shape() && x->valueCount() == 1 && y->valueCount() == 1 &&
         x->asDouble(0) == y->asDouble(0);
}

// Whether `value` leaves every x unchanged under `op` (x + 0, x * 1, max(x, -inf), ...).
bool ComputationSimplifier::isIdentityOf(HloOpcode op, const HloInstruction& value) {
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
bool ComputationSimplifier::reduceOfSizeOneDimensions(HloInstruction* inst) {
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

// add(x, scatter(zeros, indices, updates)) => scatter(x, indices, updates) when the scatter adds its updates
// and nothing else reads it, as XLA's simplifier does: the gradient of a gather (JAX writes it as a scatter-add
// into zeros, then adds it to the rest of the gradient) updates the rest in place, one pass over the operand
// fewer. Several updates of one element are summed in another order, so floating-point sums may round
// differently.
bool ComputationSimplifier::addOfScatterIntoZeros(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kAdd || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
  for (int side = 0; side < 2; ++side) {
    HloInstruction* scatter = inst->operand(side);
    HloInstruction* other = inst->operand(1 - side);
    if (scatter->opcode() != HloOpcode::kScatter || scatter->operandCount() != 3 || scatter->shape() != inst->shape() ||
        other->shape() != inst->shape() || !usedOnlyBy(*scatter, *inst) ||
        reducerOp(scatter->toApply()) != HloOpcode::kAdd || !isIdentityOf(HloOpcode::kAdd, *scatter->operand(0))) {
      continue;
    }
    m_unusedCandidates.push_back(scatter->operand(0));
    scatter->replaceOperand(0, other);
    replace(inst, scatter);
    push(scatter);
    return true;
  }
  return false;
}

// reduce(reduce(a, D1), D2) => reduce(a, D1 and D2 in a's dimensions) when both apply the same binary op and
// start from equal constants and nothing else reads the inner one, as XLA's simplifier does: one reduction
// instead of two kernels (a mean over the per-row sums of a loss). HLO leaves the order of a reduction
// unspecified, so floating-point sums may round differently.
bool ComputationSimplifier::mergeReduceOfReduce(HloInstruction* inst) {
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
bool ComputationSimplifier::negateOutOfSum(HloInstruction* inst) {
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
bool ComputationSimplifier::broadcastOfIota(HloInstruction* inst) {
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

}  // namespace fusionscope::core::simplifier
