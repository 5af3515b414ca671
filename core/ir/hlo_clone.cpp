#include "core/ir/hlo_clone.h"

#include <unordered_map>

namespace fusionscope::core {
namespace {

using InstructionMap = std::unordered_map<const HloInstruction*, HloInstruction*>;
using ComputationMap = std::unordered_map<const HloComputation*, HloComputation*>;

// Copies the instructions of `from` into `to`. Operands may refer forward in text order, so every
// instruction is created first and connected second.
void copyInstructions(const HloComputation& from, HloComputation& to, const ComputationMap* computations) {
  const auto& source = from.instructions();
  InstructionMap map;
  map.reserve(source.size());
  for (const auto& inst : source) {
    HloInstruction* copy = to.addInstruction(inst->cloneWithOperands(inst->name(), inst->shape(), {}));
    map.emplace(inst.get(), copy);
    if (computations) {
      for (CalledComputationRef& ref : copy->mutableCalledComputationRefs()) {
        for (HloComputation*& callee : ref.computations) {
          auto it = computations->find(callee);
          if (it != computations->end()) callee = it->second;
        }
      }
    }
  }
  for (const auto& inst : source) {
    HloInstruction* copy = map.at(inst.get());
    for (HloInstruction* operand : inst->operands()) copy->appendOperand(map.at(operand));
    for (HloInstruction* successor : inst->controlSuccessors()) copy->addControlDependencyTo(map.at(successor));
  }
  if (from.root()) to.setRoot(map.at(from.root()));
  to.setIsFusionComputation(from.isFusionComputation());
}

}  // namespace

std::unique_ptr<HloModule> cloneModule(const HloModule& module) {
  auto copy = std::make_unique<HloModule>(module.name());
  copy->setSourceName(module.sourceName());
  copy->mutableHeaderAttributes() = module.headerAttributes();
  copy->setHeaderTables(module.headerTables());
  ComputationMap computations;
  computations.reserve(module.computations().size());
  for (const auto& computation : module.computations()) {
    HloComputation* added = copy->addComputation(std::make_unique<HloComputation>(computation->name()));
    added->mutableAttributes() = computation->attributes();
    computations.emplace(computation.get(), added);
  }
  for (const auto& computation : module.computations()) {
    copyInstructions(*computation, *computations.at(computation.get()), &computations);
  }
  if (module.entry()) copy->setEntry(computations.at(module.entry()));
  return copy;
}

HloComputation* cloneComputation(const HloComputation& computation, HloModule& into, std::string name) {
  HloComputation* added = into.addComputation(std::make_unique<HloComputation>(std::move(name)));
  copyInstructions(computation, *added, nullptr);
  return added;
}

}  // namespace fusionscope::core
