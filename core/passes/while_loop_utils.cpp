#include "core/passes/while_loop_utils.h"

#include <utility>

namespace fusionscope::core {
namespace {

// The get-tuple-elements that read `tuple`, by element; false when something reads the tuple whole.
bool elementReaders(const HloInstruction& tuple, int size, std::vector<std::vector<HloInstruction*>>& readers) {
  readers.assign(static_cast<size_t>(size), {});
  for (HloInstruction* user : tuple.users()) {
    const auto& index = user->attributes().tupleIndex;
    if (user->opcode() != HloOpcode::kGetTupleElement || !index || *index < 0 || *index >= size) return false;
    readers[static_cast<size_t>(*index)].push_back(user);
  }
  return true;
}

}  // namespace

std::vector<HloInstruction*> whileInstructions(const HloModule& module) {
  std::vector<HloInstruction*> loops;
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() == HloOpcode::kWhile) loops.push_back(inst.get());
    }
  }
  return loops;
}

std::unordered_map<const HloComputation*, int> callCounts(const HloModule& module) {
  std::unordered_map<const HloComputation*, int> counts;
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      for (const HloComputation* callee : inst->calledComputations()) ++counts[callee];
    }
  }
  return counts;
}

bool describeWhileLoop(HloInstruction* inst, const std::unordered_map<const HloComputation*, int>& calls,
                       WhileLoop& out) {
  WhileLoop l;
  l.loop = inst;
  l.body = inst->calledComputation("body");
  l.condition = inst->calledComputation("condition");
  if (!l.body || !l.condition || l.body == l.condition || inst->operandCount() != 1) return false;
  if (calls.at(l.body) != 1 || calls.at(l.condition) != 1) return false;
  if (!inst->shape().isTuple() || inst->isRoot() || !inst->controlSuccessors().empty()) return false;
  l.size = inst->shape().tupleSize();
  if (l.body->parameterCount() != 1 || l.condition->parameterCount() != 1) return false;
  l.bodyParam = l.body->parameters()[0];
  l.conditionParam = l.condition->parameters()[0];
  HloInstruction* root = l.body->root();
  if (!root || root->opcode() != HloOpcode::kTuple || root->operandCount() != l.size || root->users().size() != 0 ||
      !root->controlSuccessors().empty() || !root->controlPredecessors().empty()) {
    return false;
  }
  if (!elementReaders(*l.bodyParam, l.size, l.bodyReaders) ||
      !elementReaders(*l.conditionParam, l.size, l.conditionReaders) ||
      !elementReaders(*inst, l.size, l.outsideReaders)) {
    return false;
  }
  out = std::move(l);
  return true;
}

HloInstruction* addTuple(HloComputation& computation, std::string_view name, const std::vector<HloInstruction*>& parts,
                         const OpMetadata* metadata) {
  std::vector<Shape> shapes;
  for (const HloInstruction* part : parts) shapes.push_back(part->shape());
  HloInstruction* tuple = computation.addInstruction(name, HloOpcode::kTuple, Shape::tuple(std::move(shapes)), parts);
  if (metadata) tuple->mutableAttributes().metadata = *metadata;
  return tuple;
}

}  // namespace fusionscope::core
