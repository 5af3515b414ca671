#include "core/passes/while_loop_invariant_code_motion.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/passes/dce.h"
#include "core/passes/while_loop_utils.h"

namespace fusionscope::core {
namespace {

// Invariant instructions worth hoisting only with a user that is hoisted too (XLA's NotWorthHoistingIndividually).
bool notWorthHoistingAlone(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::kConstant:
    case HloOpcode::kBitcast:
    case HloOpcode::kBroadcast:
    case HloOpcode::kIota:
    case HloOpcode::kReshape:
    case HloOpcode::kReverse:
    case HloOpcode::kSlice:
    case HloOpcode::kTranspose:
    case HloOpcode::kTuple: return true;
    default: return false;
  }
}

// Instructions that stay in the body whatever their operands: control flow, library calls, fusions, parameters and
// reads of the state (the element itself is the invariant value).
bool neverHoisted(const HloInstruction& inst, SideEffectAnalysis& sideEffects) {
  switch (inst.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
    case HloOpcode::kCustomCall:
    case HloOpcode::kFusion: return true;
    default:
      return sideEffects.hasSideEffect(inst) || !inst.controlPredecessors().empty() ||
             !inst.controlSuccessors().empty();
  }
}

// Hoists what it can out of one loop; returns whether the module changed.
StatusOr<bool> hoistFrom(WhileLoop& l, SideEffectAnalysis& sideEffects) {
  HloComputation* caller = l.loop->parent();
  HloInstruction* init = l.loop->operand(0);
  HloInstruction* root = l.body->root();
  // The loop's initial value of element k, in the caller.
  std::vector<HloInstruction*> initial(static_cast<size_t>(l.size), nullptr);
  std::vector<HloInstruction*> created;  // in the caller, in order
  auto initialElement = [&](int k) {
    HloInstruction*& value = initial[static_cast<size_t>(k)];
    if (value != nullptr) return value;
    if (init->opcode() == HloOpcode::kTuple) {
      value = init->operand(k);
    } else {
      value = caller->addInstruction("get-tuple-element", HloOpcode::kGetTupleElement, l.loop->shape().tupleElement(k),
                                     {init});
      value->mutableAttributes().tupleIndex = k;
      created.push_back(value);
    }
    return value;
  };
  // Invariant values not hoisted (yet): the readers of unchanged elements, and cheap instructions over invariants.
  std::unordered_map<const HloInstruction*, int> unchangedReads;  // a body reader -> its element
  for (int k = 0; k < l.size; ++k) {
    const HloInstruction* update = root->operand(k);
    if (update->opcode() != HloOpcode::kGetTupleElement || update->operand(0) != l.bodyParam ||
        update->attributes().tupleIndex != k) {
      continue;
    }
    for (HloInstruction* reader : l.bodyReaders[static_cast<size_t>(k)]) unchangedReads[reader] = k;
  }
  if (unchangedReads.empty()) return false;
  std::unordered_set<const HloInstruction*> unhoisted;
  std::unordered_map<const HloInstruction*, HloInstruction*> hoisted;  // body instruction -> its copy in the caller
  std::vector<HloInstruction*> hoistedOrder;
  auto isInvariant = [&](const HloInstruction* op) {
    return hoisted.count(op) || unhoisted.count(op) || unchangedReads.count(op) || op->opcode() == HloOpcode::kConstant;
  };
  // Copies `inst` into the caller after its operands (the invariant ones not hoisted yet come along).
  auto copyOut = [&](auto& self, HloInstruction* inst) -> HloInstruction* {
    if (auto it = hoisted.find(inst); it != hoisted.end()) return it->second;
    if (auto it = unchangedReads.find(inst); it != unchangedReads.end()) return initialElement(it->second);
    std::vector<HloInstruction*> operands;
    for (HloInstruction* operand : inst->operands()) operands.push_back(self(self, operand));
    HloInstruction* copy = caller->addInstruction(
        inst->cloneWithOperands(caller->uniqueInstructionName(inst->name()), inst->shape(), operands));
    hoisted[inst] = copy;
    created.push_back(copy);
    hoistedOrder.push_back(inst);
    unhoisted.erase(inst);
    return copy;
  };
  StatusOr<std::vector<HloInstruction*>> order = l.body->postOrder();
  if (!order.ok()) return Status::error(fmt::format("while-licm: {}", order.message()));
  for (HloInstruction* inst : *order) {
    // A tuple-shaped value (a variadic reduce, a sort) stays: the state would carry a nested tuple.
    // Dead code in the body (nothing reads it) is dce's.
    if (inst == root || inst->users().empty() || neverHoisted(*inst, sideEffects) || !inst->shape().isArray()) {
      continue;
    }
    bool invariant = true;
    for (const HloInstruction* operand : inst->operands()) invariant = invariant && isInvariant(operand);
    if (!invariant) continue;
    if (notWorthHoistingAlone(*inst)) {
      unhoisted.insert(inst);
      continue;
    }
    copyOut(copyOut, inst);
  }
  // The hoisted values the body still reads become state elements: the caller's copy goes in with the initial
  // state, the body passes it on unchanged, and its readers in the body read the element.
  std::vector<HloInstruction*> liveIn;
  for (HloInstruction* inst : hoistedOrder) {
    for (const HloInstruction* user : inst->users()) {
      if (!hoisted.count(user)) {
        liveIn.push_back(inst);
        break;
      }
    }
  }
  if (liveIn.empty()) {
    // Nothing the body reads was hoisted (no copy is needed): the caller goes back to what it was.
    for (auto it = created.rbegin(); it != created.rend(); ++it) {
      if (Status s = caller->removeInstruction(*it); !s.ok())
        return Status::error(fmt::format("while-licm: {}", s.message()));
    }
    return false;
  }
  std::vector<HloInstruction*> parts;
  std::vector<Shape> shapes;
  for (int k = 0; k < l.size; ++k) {
    parts.push_back(initialElement(k));
    shapes.push_back(l.loop->shape().tupleElement(k));
  }
  std::vector<HloInstruction*> updates = root->operands();
  for (HloInstruction* inst : liveIn) {
    const int index = static_cast<int>(parts.size());
    parts.push_back(hoisted.at(inst));
    shapes.push_back(inst->shape());
    HloInstruction* element =
        l.body->addInstruction("get-tuple-element", HloOpcode::kGetTupleElement, inst->shape(), {l.bodyParam});
    element->mutableAttributes().tupleIndex = index;
    inst->replaceAllUsesWith(element);
    updates.push_back(element);
  }
  const Shape widened = Shape::tuple(shapes);
  l.loop->replaceOperand(0, addTuple(*caller, "tuple", parts, init->metadata()));
  l.body->setRoot(addTuple(*l.body, "tuple", updates, root->metadata()));
  l.bodyParam->mutableShape() = widened;
  l.conditionParam->mutableShape() = widened;
  l.loop->mutableShape() = widened;
  DeadCodeElimination::removeDeadInstructions(*l.body, sideEffects);
  DeadCodeElimination::removeDeadInstructions(*caller, sideEffects);
  for (HloComputation* computation : {caller, l.body}) {
    if (Status s = computation->sortInPostOrder(); !s.ok()) {
      return Status::error(fmt::format("while-licm: {}", s.message()));
    }
  }
  return true;
}

}  // namespace

StatusOr<bool> WhileLoopInvariantCodeMotion::run(HloModule& module, PassContext& /*context*/) {
  const std::vector<HloInstruction*> loops = whileInstructions(module);
  bool changed = false;
  SideEffectAnalysis sideEffects;
  for (HloInstruction* inst : loops) {
    // Counted per loop: hoisting a reduce calls its reducer from the caller too.
    WhileLoop l;
    if (!describeWhileLoop(inst, callCounts(module), l)) continue;
    StatusOr<bool> hoisted = hoistFrom(l, sideEffects);
    if (!hoisted.ok()) return hoisted.status();
    changed = changed || *hoisted;
  }
  return changed;
}

}  // namespace fusionscope::core
