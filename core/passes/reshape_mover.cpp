#include "core/passes/reshape_mover.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/permutation.h"
#include "core/passes/dce.h"

namespace fusionscope::core {
namespace {

// A reshape or transpose between row-major arrays (one that changes a layout is a copy in memory and stays).
bool isRearrange(const HloInstruction& inst) {
  return (inst.opcode() == HloOpcode::kReshape || inst.opcode() == HloOpcode::kTranspose) &&
         inst.operandCount() == 1 && hasRowMajorLayout(inst.shape()) && hasRowMajorLayout(inst.operand(0)->shape()) &&
         !inst.shape().hasDynamicDimension() && !inst.operand(0)->shape().hasDynamicDimension() &&
         (inst.opcode() == HloOpcode::kReshape || inst.attributes().dimensions.has_value());
}

// `shape`'s dimensions and layout with element type `type`.
Shape like(const Shape& shape, PrimitiveType type) {
  Shape result(type, shape.dimensions());
  result.setLayout(shape.layout());
  return result;
}

// Whether `a` and `b` are the same rearrangement: same op and result dimensions, and the same permutation or the
// same operand dimensions.
bool equivalent(const HloInstruction& a, const HloInstruction& b) {
  if (a.opcode() != b.opcode() || a.shape().dimensions() != b.shape().dimensions()) return false;
  if (a.opcode() == HloOpcode::kTranspose) return *a.attributes().dimensions == *b.attributes().dimensions;
  return a.operand(0)->shape().dimensions() == b.operand(0)->shape().dimensions();
}

// The dimensions of broadcast `broadcast`'s operand in the shape before `transpose` (the inverse transpose of the
// broadcast), or nothing when they would not be in increasing order there.
std::optional<std::vector<int64_t>> broadcastDimsBefore(const HloInstruction& broadcast,
                                                        const HloInstruction& transpose) {
  const std::vector<int64_t>& perm = *transpose.attributes().dimensions;
  std::vector<int64_t> dims;
  for (int64_t d : broadcast.attributes().dimensions.value_or(std::vector<int64_t>{})) {
    dims.push_back(perm[static_cast<size_t>(d)]);
  }
  if (!std::is_sorted(dims.begin(), dims.end())) return std::nullopt;
  return dims;
}

// Whether `operand` (not itself a rearrangement) takes the shape before `rearrange` for free.
bool trivially(const HloInstruction& operand, const HloInstruction& rearrange) {
  if (operand.opcode() == HloOpcode::kConstant) return operand.shape().isArray();
  if (operand.opcode() != HloOpcode::kBroadcast || operand.operandCount() != 1) return false;
  const std::vector<int64_t> dims = operand.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (!std::is_sorted(dims.begin(), dims.end())) return false;  // a broadcast that transposes too
  if (rearrange.opcode() == HloOpcode::kReshape) return operand.operand(0)->shape().rank() == 0;
  return broadcastDimsBefore(operand, rearrange).has_value();
}

// A reshape or transpose that does something: not of the identity kind, and its operand not one that would take
// the other shape for free.
bool nontrivial(const HloInstruction& inst) {
  if (!isRearrange(inst)) return false;
  if (inst.opcode() == HloOpcode::kReshape && inst.shape().dimensions() == inst.operand(0)->shape().dimensions()) {
    return false;
  }
  if (inst.opcode() == HloOpcode::kTranspose && isIdentityPermutation(*inst.attributes().dimensions)) return false;
  return !trivially(*inst.operand(0), inst);
}

const HloInstruction* firstNontrivial(const HloInstruction& inst) {
  for (const HloInstruction* operand : inst.operands()) {
    if (nontrivial(*operand)) return operand;
  }
  return nullptr;
}

bool candidate(const HloInstruction& inst, SideEffectAnalysis& sideEffects) {
  if (!isElementwise(inst.opcode()) || !hasRowMajorLayout(inst.shape()) || inst.operandCount() == 0 ||
      sideEffects.hasSideEffect(inst) || !inst.calledComputationRefs().empty()) {
    return false;
  }
  // Operands of the op's own dimensions: a bitcast-convert between widths adds or drops a dimension of parts.
  for (const HloInstruction* operand : inst.operands()) {
    if (operand->shape().dimensions() != inst.shape().dimensions()) return false;
  }
  const HloInstruction* rearrange = firstNontrivial(inst);
  if (rearrange == nullptr) return false;
  return std::all_of(inst.operands().begin(), inst.operands().end(), [&](const HloInstruction* operand) {
    return isRearrange(*operand) ? equivalent(*operand, *rearrange) : trivially(*operand, *rearrange);
  });
}

// `operand` in the shape before `rearrange` (its element type kept).
HloInstruction* before(HloComputation& computation, const HloInstruction& rearrange, HloInstruction* operand) {
  const Shape shape = like(rearrange.operand(0)->shape(), operand->shape().elementType());
  if (isRearrange(*operand) && equivalent(*operand, rearrange)) return operand->operand(0);
  HloInstruction* made = nullptr;
  if (operand->opcode() == HloOpcode::kBroadcast) {
    made = computation.addInstruction(operand->name(), HloOpcode::kBroadcast, shape, {operand->operand(0)});
    made->mutableAttributes().dimensions =
        rearrange.opcode() == HloOpcode::kReshape ? std::vector<int64_t>{} : *broadcastDimsBefore(*operand, rearrange);
  } else if (rearrange.opcode() == HloOpcode::kReshape) {
    made = computation.addInstruction("reshape", HloOpcode::kReshape, shape, {operand});
  } else {
    made = computation.addInstruction("transpose", HloOpcode::kTranspose, shape, {operand});
    made->mutableAttributes().dimensions = inversePermutation(*rearrange.attributes().dimensions);
  }
  made->mutableAttributes().metadata = operand->attributes().metadata;
  return made;
}

// `inst` computed before its rearranged operands' rearrangement, then rearranged once; the op keeps its name.
Status sink(HloComputation& computation, HloInstruction* inst) {
  const HloInstruction& rearrange = *firstNontrivial(*inst);
  std::vector<HloInstruction*> operands;
  for (HloInstruction* operand : inst->operands()) operands.push_back(before(computation, rearrange, operand));
  HloInstruction* moved = computation.addInstruction(
      inst->name(), inst->opcode(),
      like(rearrange.operand(0)->shape(), inst->shape().elementType()), operands);
  moved->mutableAttributes() = inst->attributes();
  HloInstruction* after = computation.addInstruction(rearrange.opcode() == HloOpcode::kReshape ? "reshape" : "transpose",
                                                     rearrange.opcode(), inst->shape(), {moved});
  if (rearrange.opcode() == HloOpcode::kTranspose) after->mutableAttributes().dimensions = rearrange.attributes().dimensions;
  after->mutableAttributes().metadata = inst->attributes().metadata;
  const std::string name = inst->name();
  const bool root = computation.root() == inst;
  inst->replaceAllUsesWith(after);
  if (root) computation.setRoot(after);
  FS_RETURN_IF_ERROR(computation.removeInstruction(inst));
  return computation.renameInstruction(moved, name);
}

StatusOr<bool> runOnComputation(HloComputation& computation, SideEffectAnalysis& sideEffects) {
  StatusOr<std::vector<HloInstruction*>> order = computation.postOrder();
  if (!order.ok()) return order.status();
  std::set<HloInstruction*> candidates;
  for (HloInstruction* inst : *order) {
    if (candidate(*inst, sideEffects)) candidates.insert(inst);
  }
  // A rearrangement read by anything that does not move stays (and so would be computed twice): its users do not
  // move either. Repeated until what is left moves together.
  bool removed = true;
  while (removed && !candidates.empty()) {
    removed = false;
    std::set<const HloInstruction*> rearranges;
    for (const HloInstruction* inst : candidates) {
      for (const HloInstruction* operand : inst->operands()) {
        if (isRearrange(*operand)) rearranges.insert(operand);
      }
    }
    for (const HloInstruction* rearrange : rearranges) {
      const bool kept = computation.root() == rearrange ||
                        std::any_of(rearrange->users().begin(), rearrange->users().end(),
                                    [&](HloInstruction* user) { return candidates.count(user) == 0; });
      if (!kept) continue;
      for (HloInstruction* user : rearrange->users()) removed = candidates.erase(user) > 0 || removed;
    }
  }
  if (candidates.empty()) return false;
  for (HloInstruction* inst : *order) {  // in post order, so a moved op's operands were moved first
    if (candidates.count(inst) != 0) FS_RETURN_IF_ERROR(sink(computation, inst));
  }
  DeadCodeElimination::removeDeadInstructions(computation, sideEffects);
  FS_RETURN_IF_ERROR(computation.sortInPostOrder());
  return true;
}

}  // namespace

StatusOr<bool> ReshapeMover::run(HloModule& module, PassContext&) {
  SideEffectAnalysis sideEffects;
  bool changed = false;
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) continue;
    StatusOr<bool> result = runOnComputation(*computation, sideEffects);
    if (!result.ok()) return result.status();
    changed = changed || *result;
  }
  return changed;
}

}  // namespace fusionscope::core
