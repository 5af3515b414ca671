// The simplify pass: the worklist over each computation, the identities (x + 0, reshape of reshape, ...) and
// constant folding. The rewrites of families of ops live in simplify_arithmetic.cpp, simplify_reductions.cpp and
// simplify_dots.cpp (core/passes/computation_simplifier.h).
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
#include "core/passes/computation_simplifier.h"
#include "core/passes/constant_folding.h"
#include "core/passes/dce.h"

namespace fusionscope::core {
namespace simplifier {

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

StatusOr<bool> ComputationSimplifier::run() {
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

void ComputationSimplifier::visit(HloInstruction* inst) {
  // Unused instructions are left for removal; rewriting them would change nothing anyone reads.
  if (inst->users().empty() && inst != m_computation.root()) return;
  if (HloInstruction* replacement = identityReplacement(*inst)) {
    replace(inst, replacement);
    return;
  }
  if (rewriteInPlace(inst)) return;
  if (sliceOfConcatenate(inst)) return;
  if (convertOfBroadcast(inst)) return;
  if (broadcastAsReshape(inst)) return;
  if (mergeReduceOfReduce(inst)) return;
  if (negateOutOfSum(inst)) return;
  if (mergeConstantFactors(inst)) return;
  if (multiplyByPredicate(inst)) return;
  if (compareOfIota(inst)) return;
  if (broadcastOfIota(inst)) return;
  if (reduceOfSizeOneDimensions(inst)) return;
  if (addOfScatterIntoZeros(inst)) return;
  if (m_reciprocals && rewriteDivideByBroadcast(inst)) return;
  if (m_reciprocals && divideByExp(inst)) return;
  if (divideOfDivide(inst)) return;
  if (productOfExps(inst)) return;
  if (remainderByPowerOfTwo(inst)) return;
  if (transposeOfDot(inst)) return;
  if (dotOfVectors(inst)) return;
  if (dotWithoutContraction(inst)) return;
  if (foldConvolutionInputPad(inst)) return;
  if (clampFromMinMax(inst)) return;
  std::optional<Literal> folded = fold(*inst);
  if (!folded) return;
  HloInstruction* constant = m_computation.addInstruction(foldedName(*inst), HloOpcode::kConstant, inst->shape());
  constant->setLiteral(std::move(*folded));
  replace(inst, constant);
}

std::optional<Literal> ComputationSimplifier::fold(const HloInstruction& inst) {
  if (inst.operandCount() == 0) return std::nullopt;
  switch (inst.opcode()) {
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose: return foldDataMovement(inst);
    default: return isElementwise(inst.opcode()) ? foldElementwise(inst) : std::nullopt;
  }
}

void ComputationSimplifier::replace(HloInstruction* inst, HloInstruction* replacement) {
  std::vector<HloInstruction*> users = inst->users();
  inst->replaceAllUsesWith(replacement);
  m_unusedCandidates.push_back(inst);
  for (HloInstruction* user : users) push(user);
  m_changed = true;
}

void ComputationSimplifier::removeUnused() {
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

// `constant.N` for a folded `op.N`: XLA numbers instructions module-wide, so the name is usually free, and
// it tells which instruction the value replaced.
std::string ComputationSimplifier::foldedName(const HloInstruction& inst) {
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
bool ComputationSimplifier::isNonNegative(const HloInstruction& inst, int depth) {
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

// Whether type `wide` represents every value of type `narrow` exactly (bf16 and f16 in f32, s8 in s32, u8 in s16).
static bool holdsEveryValueOf(PrimitiveType wide, PrimitiveType narrow) {
  const int wideBits = primitiveTypeBitWidth(wide);
  const int narrowBits = primitiveTypeBitWidth(narrow);
  if (isFloatingPoint(wide) && isFloatingPoint(narrow)) {
    const bool half = narrow == PrimitiveType::kBF16 || narrow == PrimitiveType::kF16;
    return (half && (wide == PrimitiveType::kF32 || wide == PrimitiveType::kF64)) ||
           (narrow == PrimitiveType::kF32 && wide == PrimitiveType::kF64);
  }
  if (isSignedInteger(wide) && isSignedInteger(narrow)) return wideBits >= narrowBits;
  if (isUnsignedInteger(wide) && isUnsignedInteger(narrow)) return wideBits >= narrowBits;
  if (isSignedInteger(wide) && isUnsignedInteger(narrow)) return wideBits > narrowBits;
  return false;
}

// The operand (or zero constant) that `inst` equals, when it has exactly the same shape, layout included.
HloInstruction* ComputationSimplifier::identityReplacement(const HloInstruction& inst) {
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
      const double neutral = (inst.opcode() == HloOpcode::kMaximum ? -1 : 1) * std::numeric_limits<double>::infinity();
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
    case HloOpcode::kConvert:
      // convert(convert(x)) through a type that holds every value of x's, back to x's type, is x (XLA's rule: bf16
      // computed in f32 and stored as bf16 again).
      if (inst.operandCount() == 1 && inst.operand(0)->opcode() == HloOpcode::kConvert &&
          inst.operand(0)->operandCount() == 1 &&
          holdsEveryValueOf(inst.operand(0)->shape().elementType(),
                            inst.operand(0)->operand(0)->shape().elementType())) {
        if (HloInstruction* original = same(inst.operand(0)->operand(0))) return original;
      }
      [[fallthrough]];
    case HloOpcode::kReshape:
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
bool ComputationSimplifier::rewriteInPlace(HloInstruction* inst) {
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

// A slice that lies within one operand of a concatenate (along the concatenated dimension) slices that operand, as
// in XLA's simplifier: the start of a scatter's or gather's index vector built from a zero and an index reads the
// zero or the index itself.
bool ComputationSimplifier::sliceOfConcatenate(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kSlice || inst->operandCount() != 1 ||
      inst->operand(0)->opcode() != HloOpcode::kConcatenate) {
    return false;
  }
  HloInstruction* concatenate = inst->operand(0);
  const auto& window = inst->attributes().slice;
  const auto& joined = concatenate->attributes().dimensions;
  if (!window || !joined || joined->size() != 1 || static_cast<int>(window->size()) != inst->shape().rank()) {
    return false;
  }
  const auto dim = static_cast<size_t>(joined->front());
  if (dim >= window->size()) return false;
  const SliceDim along = (*window)[dim];
  int64_t offset = 0;
  for (HloInstruction* part : concatenate->operands()) {
    const int64_t size = part->shape().dimension(static_cast<int>(dim));
    if (along.start >= offset && along.limit <= offset + size && along.start < along.limit) {
      std::vector<SliceDim> shifted = *window;
      shifted[dim].start -= offset;
      shifted[dim].limit -= offset;
      inst->mutableAttributes().slice = std::move(shifted);
      inst->replaceOperand(0, part);
      m_unusedCandidates.push_back(concatenate);
      m_changed = true;
      push(inst);
      return true;
    }
    offset += size;
  }
  return false;
}

// convert(broadcast(x)) converts the fewer elements of x and broadcasts them, as XLA's simplifier writes it: a bf16
// constant broadcast in f32 and stored as bf16 (float normalization) becomes the bf16 broadcast of the constant.
bool ComputationSimplifier::convertOfBroadcast(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kConvert || inst->operandCount() != 1 ||
      inst->operand(0)->opcode() != HloOpcode::kBroadcast || inst->operand(0)->operandCount() != 1) {
    return false;
  }
  HloInstruction* broadcast = inst->operand(0);
  HloInstruction* source = broadcast->operand(0);
  if (!source->shape().isArray() || source->shape().elementCount() >= broadcast->shape().elementCount()) return false;
  Shape converted(inst->shape().elementType(), source->shape().dimensions());
  converted.setLayout(source->shape().layout());
  HloInstruction* narrow = m_computation.addInstruction("convert", HloOpcode::kConvert, converted, {source});
  HloInstruction* wide =
      m_computation.addInstruction(broadcast->name(), HloOpcode::kBroadcast, inst->shape(), {narrow});
  wide->mutableAttributes().dimensions = broadcast->attributes().dimensions;
  for (HloInstruction* made : {narrow, wide}) {
    if (inst->metadata()) made->mutableAttributes().metadata = *inst->metadata();
  }
  push(narrow);
  push(wide);
  replace(inst, wide);
  return true;
}

// A broadcast that adds only dimensions of size 1 (as many elements as its operand, dimensions in order) is a
// reshape, as XLA's simplifier writes it: a scatter's one-element bounds check broadcast to its window of one.
bool ComputationSimplifier::broadcastAsReshape(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kBroadcast || inst->operandCount() != 1 || !inst->shape().isArray() ||
      !inst->operand(0)->shape().isArray() ||
      inst->shape().elementCount() != inst->operand(0)->shape().elementCount() ||
      inst->shape().rank() == inst->operand(0)->shape().rank()) {
    return false;
  }
  const std::vector<int64_t> none;
  const std::vector<int64_t>& dims = inst->attributes().dimensions ? *inst->attributes().dimensions : none;
  if (!std::is_sorted(dims.begin(), dims.end())) return false;
  HloInstruction* reshape =
      m_computation.addInstruction(inst->name(), HloOpcode::kReshape, inst->shape(), {inst->operand(0)});
  if (inst->metadata()) reshape->mutableAttributes().metadata = *inst->metadata();
  push(reshape);
  replace(inst, reshape);
  return true;
}

// Whether `user` is the only reader of `value` (the computation's result is read by its caller), and reads it once.
bool ComputationSimplifier::usedOnlyBy(const HloInstruction& value, const HloInstruction& user) const {
  return &value != m_computation.root() && value.users().size() == 1 && value.users().front() == &user &&
         std::count(user.operands().begin(), user.operands().end(), &value) == 1;
}

// The value of a broadcast of a one-element constant of `inst`'s shape (a real number; integers exactly up to
// 2^53), else nullopt.
std::optional<double> ComputationSimplifier::scalarConstant(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kBroadcast || inst.operandCount() != 1) return std::nullopt;
  const Literal* literal = decodedLiteral(*inst.operand(0));
  if (!literal || literal->valueCount() != 1) return std::nullopt;
  return literal->asDouble(0);
}

}  // namespace simplifier

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
    StatusOr<bool> result =
        simplifier::ComputationSimplifier(module, *computation, sideEffects, addReducers, reciprocals).run();
    if (!result.ok()) return result.status();
    changed = changed || *result;
  }
  return changed;
}

}  // namespace fusionscope::core
