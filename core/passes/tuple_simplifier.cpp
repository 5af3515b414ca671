#include "core/passes/tuple_simplifier.h"

#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {
namespace {

bool hasControlDependencies(const HloInstruction& inst) {
  return !inst.controlPredecessors().empty() || !inst.controlSuccessors().empty();
}

// get-tuple-element(tuple(...), i) -> operand i of the tuple.
HloInstruction* forwardedElement(const HloInstruction& gte) {
  const HloInstruction* tuple = gte.operand(0);
  const auto& index = gte.attributes().tupleIndex;
  if (tuple->opcode() != HloOpcode::kTuple || !index || *index < 0 || *index >= tuple->operandCount()) return nullptr;
  HloInstruction* element = tuple->operand(static_cast<int>(*index));
  return element->shape() == gte.shape() ? element : nullptr;
}

// tuple(gte(x, 0), ..., gte(x, n-1)) -> x.
HloInstruction* repackedSource(const HloInstruction& tuple) {
  if (tuple.operandCount() == 0) return nullptr;
  HloInstruction* source = nullptr;
  for (int i = 0; i < tuple.operandCount(); ++i) {
    const HloInstruction* gte = tuple.operand(i);
    if (gte->opcode() != HloOpcode::kGetTupleElement || gte->attributes().tupleIndex != i) return nullptr;
    if (source && gte->operand(0) != source) return nullptr;
    source = gte->operand(0);
  }
  const Shape& shape = source->shape();
  if (!shape.isTuple() || shape.tupleSize() != tuple.operandCount() || !(shape == tuple.shape())) return nullptr;
  return source;
}

// Removes `inst` if nothing reads it any more; it is a tuple or get-tuple-element, so it has no side effects.
void removeIfUnused(HloComputation& computation, HloInstruction* inst) {
  if (inst->users().empty() && inst != computation.root() && !hasControlDependencies(*inst)) {
    (void)computation.removeInstruction(inst);
  }
}

StatusOr<bool> runOnComputation(HloComputation& computation) {
  StatusOr<std::vector<HloInstruction*>> order = computation.postOrder();
  if (!order.ok()) return Status::error(fmt::format("tuple-simplify: {}", order.message()));
  bool changed = false;
  // Post order: an instruction's operands are already simplified when it is visited, and a replacement only
  // changes the operands of later instructions, so one sweep reaches the fixed point. Only instructions
  // visited already (the replaced one and its operands) are ever removed.
  for (HloInstruction* inst : *order) {
    if (hasControlDependencies(*inst) || (inst->users().empty() && inst != computation.root())) continue;
    HloInstruction* replacement = nullptr;
    if (inst->opcode() == HloOpcode::kGetTupleElement && inst->operandCount() == 1) {
      replacement = forwardedElement(*inst);
    } else if (inst->opcode() == HloOpcode::kTuple) {
      replacement = repackedSource(*inst);
    }
    if (!replacement) continue;
    inst->replaceAllUsesWith(replacement);
    changed = true;
    // The operands are distinct: one tuple, or get-tuple-elements with different indices.
    std::vector<HloInstruction*> operands = inst->operands();
    removeIfUnused(computation, inst);
    for (HloInstruction* operand : operands) removeIfUnused(computation, operand);
  }
  // No re-sort: a replacement is an operand (of an operand) of the instruction it replaces, so it already comes
  // before every user in the instruction order, and nothing is added.
  return changed;
}

}  // namespace

StatusOr<bool> TupleSimplifier::run(HloModule& module, PassContext& /*context*/) {
  bool changed = false;
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) continue;
    StatusOr<bool> result = runOnComputation(*computation);
    if (!result.ok()) return result.status();
    changed = changed || *result;
  }
  return changed;
}

}  // namespace fusionscope::core
