#include "core/passes/dce.h"

#include <algorithm>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

bool SideEffectAnalysis::hasSideEffect(const HloInstruction& instruction) {
  if (instruction.hasSideEffect()) return true;
  for (const CalledComputationRef& ref : instruction.calledComputationRefs()) {
    for (const HloComputation* callee : ref.computations) {
      if (callee && computationHasSideEffect(*callee)) return true;
    }
  }
  return false;
}

bool SideEffectAnalysis::computationHasSideEffect(const HloComputation& computation) {
  auto [it, inserted] = m_computations.try_emplace(&computation, false);
  // A computation being visited answers false to its own (malformed, recursive) calls, so a call cycle
  // cannot recurse forever; call graphs are as deep as their nesting, so recursion is fine otherwise.
  if (!inserted) return it->second;
  bool result = false;
  for (const auto& inst : computation.instructions()) {
    if (hasSideEffect(*inst)) {
      result = true;
      break;
    }
  }
  m_computations[&computation] = result;
  return result;
}

int64_t DeadCodeElimination::removeDeadInstructions(HloComputation& computation, SideEffectAnalysis& sideEffects) {
  auto isDead = [&](const HloInstruction* inst) {
    return inst->users().empty() && inst != computation.root() && inst->opcode() != HloOpcode::kParameter &&
           inst->controlSuccessors().empty() && !sideEffects.hasSideEffect(*inst);
  };
  std::vector<HloInstruction*> work;
  for (const auto& inst : computation.instructions()) {
    if (isDead(inst.get())) work.push_back(inst.get());
  }
  // An instruction turns dead at exactly one removal (its last user or control successor going), and only
  // then is it queued, so nothing is queued twice and nothing freed is looked at again.
  int64_t removed = 0;
  std::vector<HloInstruction*> predecessors;
  while (!work.empty()) {
    HloInstruction* inst = work.back();
    work.pop_back();
    predecessors = inst->operands();
    predecessors.insert(predecessors.end(), inst->controlPredecessors().begin(), inst->controlPredecessors().end());
    std::sort(predecessors.begin(), predecessors.end());
    predecessors.erase(std::unique(predecessors.begin(), predecessors.end()), predecessors.end());
    if (!computation.removeInstruction(inst).ok()) continue;
    ++removed;
    for (HloInstruction* pred : predecessors) {
      if (isDead(pred)) work.push_back(pred);
    }
  }
  return removed;
}

StatusOr<bool> DeadCodeElimination::run(HloModule& module, PassContext& /*context*/) {
  SideEffectAnalysis sideEffects;
  bool changed = false;
  // Removing instructions only shortens computations, so their text order stays a valid order: no sort.
  for (const auto& computation : module.computations()) {
    if (removeDeadInstructions(*computation, sideEffects) > 0) changed = true;
  }
  if (module.removeUnreachableComputations() > 0) changed = true;
  return changed;
}

}  // namespace fusionscope::core
