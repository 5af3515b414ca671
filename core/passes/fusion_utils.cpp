#include "core/passes/fusion_utils.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_module.h"

namespace fusionscope::core {
namespace {

HloInstruction* addParameter(HloComputation& computation, const Shape& shape, int64_t number) {
  HloInstruction* param = computation.addInstruction(fmt::format("param_{}", number), HloOpcode::kParameter, shape, {});
  param->setParameterNumber(number);
  return param;
}

HloInstruction* addTupleElement(HloComputation& computation, HloInstruction* tuple, int64_t index) {
  HloInstruction* gte = computation.addInstruction("get-tuple-element", HloOpcode::kGetTupleElement,
                                                   tuple->shape().tupleElement(static_cast<int>(index)), {tuple});
  gte->mutableAttributes().tupleIndex = index;
  return gte;
}

// Gives the fusion operand for a value from outside: an existing parameter when the fusion already reads
// the value (so shared inputs are read once), else a new operand and parameter.
class FusionParameters {
 public:
  explicit FusionParameters(HloInstruction* fusion)
      : m_fusion(fusion), m_params(fusion->fusedComputation()->parameters()) {}

  HloInstruction* parameterFor(HloInstruction* outside) {
    for (int i = 0; i < m_fusion->operandCount(); ++i) {
      if (m_fusion->operand(i) == outside && m_params[static_cast<size_t>(i)]) return m_params[static_cast<size_t>(i)];
    }
    m_fusion->appendOperand(outside);
    HloInstruction* param = addParameter(*m_fusion->fusedComputation(), outside->shape(), m_fusion->operandCount() - 1);
    m_params.push_back(param);
    return param;
  }
  const std::vector<HloInstruction*>& parameters() const { return m_params; }

 private:
  HloInstruction* m_fusion;
  std::vector<HloInstruction*> m_params;
};

// Copies what `producer` computes into the fusion's computation, reading the producer's inputs through
// fusion parameters. Returns the copies of the producer's outputs (one, or one per element of a
// multi-output fusion's tuple root).
StatusOr<std::vector<HloInstruction*>> cloneIntoFusion(HloInstruction* fusion, HloInstruction* producer,
                                                       FusionParameters& params) {
  HloComputation& into = *fusion->fusedComputation();
  if (!producer->isFusion()) {
    std::vector<HloInstruction*> operands;
    operands.reserve(producer->operands().size());
    for (HloInstruction* operand : producer->operands()) operands.push_back(params.parameterFor(operand));
    HloInstruction* copy = into.addInstruction(
        producer->cloneWithOperands(into.uniqueInstructionName(producer->name()), producer->shape(), operands));
    return std::vector<HloInstruction*>{copy};
  }
  const HloComputation* from = producer->fusedComputation();
  StatusOr<std::vector<HloInstruction*>> order = from->postOrder();
  if (!order.ok()) return order.status();
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  for (HloInstruction* inst : *order) {
    if (inst->opcode() == HloOpcode::kParameter) {
      int64_t n = inst->parameterNumber();
      if (n < 0 || n >= producer->operandCount()) {
        return Status::error(fmt::format("{}: fused parameter {} has no operand", producer->name(), inst->name()));
      }
      map[inst] = params.parameterFor(producer->operand(static_cast<int>(n)));
      continue;
    }
    std::vector<HloInstruction*> operands;
    operands.reserve(inst->operands().size());
    for (HloInstruction* operand : inst->operands()) operands.push_back(map.at(operand));
    map[inst] =
        into.addInstruction(inst->cloneWithOperands(into.uniqueInstructionName(inst->name()), inst->shape(), operands));
  }
  const HloInstruction* root = from->root();
  if (root->opcode() == HloOpcode::kTuple) {
    std::vector<HloInstruction*> outputs;
    for (HloInstruction* operand : root->operands()) outputs.push_back(map.at(operand));
    // The copied tuple itself is not needed: outputs are wired individually.
    HloInstruction* tupleCopy = map.at(root);
    if (tupleCopy->users().empty()) (void)into.removeInstruction(tupleCopy);
    return outputs;
  }
  return std::vector<HloInstruction*>{map.at(root)};
}

// Drops fusion parameters nothing reads any more and renumbers the rest so parameter i is operand i.
void compactParameters(HloInstruction* fusion) {
  HloComputation& computation = *fusion->fusedComputation();
  std::vector<HloInstruction*> params = computation.parameters();
  std::vector<HloInstruction*> operands;
  std::vector<HloInstruction*> kept;
  for (size_t i = 0; i < params.size(); ++i) {
    HloInstruction* param = params[i];
    if (!param) continue;
    if (param->users().empty() && param != computation.root()) {
      (void)computation.removeInstruction(param);
      continue;
    }
    operands.push_back(fusion->operand(static_cast<int>(i)));
    kept.push_back(param);
  }
  if (kept.size() == params.size()) return;
  fusion->dropAllOperands();
  for (size_t i = 0; i < kept.size(); ++i) {
    kept[i]->setParameterNumber(static_cast<int64_t>(i));
    fusion->appendOperand(operands[i]);
  }
}

// Turns a single-output fusion into a multi-output one (tuple root); its users then read element 0.
void makeMultiOutput(HloInstruction* fusion) {
  if (isMultiOutputFusion(*fusion)) return;
  HloComputation& fused = *fusion->fusedComputation();
  HloInstruction* oldRoot = fused.root();
  HloInstruction* tuple = fused.addInstruction("tuple", HloOpcode::kTuple, Shape::tuple({oldRoot->shape()}), {oldRoot});
  fused.setRoot(tuple);

  HloComputation& outer = *fusion->parent();
  std::vector<HloInstruction*> users = fusion->users();
  bool wasRoot = fusion->isRoot();
  fusion->mutableShape() = tuple->shape();
  HloInstruction* first = addTupleElement(outer, fusion, 0);
  for (HloInstruction* user : users) {
    for (int i = 0; i < user->operandCount(); ++i) {
      if (user->operand(i) == fusion) user->replaceOperand(i, first);
    }
  }
  if (wasRoot) outer.setRoot(first);
}

// Appends `value` (inside the fusion) as a new output of a multi-output fusion; returns its tuple index.
int64_t appendOutput(HloInstruction* fusion, HloInstruction* value) {
  HloInstruction* root = fusion->fusedComputation()->root();
  root->appendOperand(value);
  root->mutableShape().mutableTupleElements().push_back(value->shape());
  fusion->mutableShape().mutableTupleElements().push_back(value->shape());
  return root->operandCount() - 1;
}

void removeProducerIfDead(HloInstruction* producer) {
  if (!producer->users().empty() || producer->isRoot()) return;
  HloComputation* fused = producer->fusedComputation();
  (void)producer->parent()->removeInstruction(producer);
  // A fused computation belongs to exactly one fusion instruction (XLA's rule, checked by the verifier;
  // duplicating a fusion copies its body), so the dead producer's computation can go with it.
  if (fused) (void)fused->parent()->removeComputation(fused);
}

Status checkFusable(const HloInstruction* fusion, const HloInstruction* producer) {
  if (!fusion->isFusion() || !fusion->fusedComputation()) {
    return Status::error(fmt::format("{} is not a fusion", fusion->name()));
  }
  if (producer->parent() != fusion->parent()) {
    return Status::error(fmt::format("{} and {} are in different computations", producer->name(), fusion->name()));
  }
  if (!producer->controlPredecessors().empty() || !producer->controlSuccessors().empty()) {
    return Status::error(fmt::format("{} has control dependencies", producer->name()));
  }
  return okStatus();
}

StatusOr<HloInstruction*> fuseProducerImpl(HloInstruction* fusion, HloInstruction* producer, bool multiOutput) {
  FS_RETURN_IF_ERROR(checkFusable(fusion, producer));
  if (producer->shape().isTuple()) {
    return Status::error(fmt::format("cannot fuse {}: it produces a tuple", producer->name()));
  }
  FusionParameters params(fusion);
  std::vector<int> uses;
  for (int i = 0; i < fusion->operandCount(); ++i) {
    if (fusion->operand(i) == producer) uses.push_back(i);
  }
  if (uses.empty()) return Status::error(fmt::format("{} does not use {}", fusion->name(), producer->name()));

  StatusOr<std::vector<HloInstruction*>> outputs = cloneIntoFusion(fusion, producer, params);
  if (!outputs.ok()) return outputs.status();
  HloInstruction* value = outputs->front();
  for (int i : uses) params.parameters()[static_cast<size_t>(i)]->replaceAllUsesWith(value);

  bool otherUsers = producer->users().size() > 1 || producer->isRoot();
  if (multiOutput && otherUsers) {
    makeMultiOutput(fusion);
    int64_t index = appendOutput(fusion, value);
    HloComputation& outer = *fusion->parent();
    HloInstruction* element = addTupleElement(outer, fusion, index);
    std::vector<HloInstruction*> users = producer->users();
    for (HloInstruction* user : users) {
      if (user == fusion) continue;
      for (int i = 0; i < user->operandCount(); ++i) {
        if (user->operand(i) == producer) user->replaceOperand(i, element);
      }
    }
    if (producer->isRoot()) outer.setRoot(element);
  }
  compactParameters(fusion);
  removeProducerIfDead(producer);
  return fusion;
}

}  // namespace

HloInstruction* wrapInFusion(HloInstruction* instruction, FusionKind kind) {
  HloComputation& outer = *instruction->parent();
  HloModule& module = *outer.parent();
  auto computation = std::make_unique<HloComputation>(module.uniqueComputationName("fused_computation"));
  HloComputation* fused = module.addComputation(std::move(computation));
  fused->setIsFusionComputation(true);

  std::vector<HloInstruction*> distinct;
  std::vector<HloInstruction*> params;
  std::vector<HloInstruction*> operands;
  for (HloInstruction* operand : instruction->operands()) {
    auto it = std::find(distinct.begin(), distinct.end(), operand);
    if (it == distinct.end()) {
      distinct.push_back(operand);
      params.push_back(addParameter(*fused, operand->shape(), static_cast<int64_t>(params.size())));
      operands.push_back(params.back());
    } else {
      operands.push_back(params[static_cast<size_t>(it - distinct.begin())]);
    }
  }
  fused->setRoot(
      fused->addInstruction(instruction->cloneWithOperands(instruction->name(), instruction->shape(), operands)));

  HloInstruction* fusion = outer.addInstruction("fusion", HloOpcode::kFusion, instruction->shape(), distinct);
  fusion->mutableAttributes().fusionKind = kind;
  if (instruction->metadata()) fusion->mutableAttributes().metadata = *instruction->metadata();
  fusion->mutableCalledComputationRefs().push_back(CalledComputationRef{"calls", {fused}, false});
  for (HloInstruction* pred : instruction->controlPredecessors()) pred->addControlDependencyTo(fusion);
  for (HloInstruction* succ : instruction->controlSuccessors()) fusion->addControlDependencyTo(succ);
  instruction->replaceAllUsesWith(fusion);
  (void)outer.removeInstruction(instruction);
  return fusion;
}

std::vector<HloComputation*> computationsToFuseIn(const HloModule& module) {
  std::unordered_set<const HloComputation*> excluded;
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) excluded.insert(computation.get());
    for (const auto& inst : computation->instructions()) {
      const HloOpcode op = inst->opcode();
      if (op == HloOpcode::kWhile || op == HloOpcode::kConditional || op == HloOpcode::kCall) continue;
      for (HloComputation* callee : inst->calledComputations()) excluded.insert(callee);
    }
  }
  std::vector<HloComputation*> result;
  if (!module.entry()) return result;
  std::unordered_set<const HloComputation*> seen{module.entry()};
  std::vector<HloComputation*> work{module.entry()};
  while (!work.empty()) {
    HloComputation* computation = work.back();
    work.pop_back();
    if (excluded.count(computation)) continue;
    result.push_back(computation);
    for (const auto& inst : computation->instructions()) {
      const HloOpcode op = inst->opcode();
      if (op != HloOpcode::kWhile && op != HloOpcode::kConditional && op != HloOpcode::kCall) continue;
      for (HloComputation* callee : inst->calledComputations()) {
        if (seen.insert(callee).second) work.push_back(callee);
      }
    }
  }
  return result;
}

StatusOr<HloInstruction*> fuseProducer(HloInstruction* fusion, HloInstruction* producer) {
  return fuseProducerImpl(fusion, producer, /*multiOutput=*/false);
}

StatusOr<HloInstruction*> fuseProducerMultiOutput(HloInstruction* fusion, HloInstruction* producer) {
  return fuseProducerImpl(fusion, producer, /*multiOutput=*/true);
}

StatusOr<HloInstruction*> mergeSiblingFusion(HloInstruction* fusion, HloInstruction* other) {
  FS_RETURN_IF_ERROR(checkFusable(fusion, other));
  if (!other->isFusion() || !other->fusedComputation()) {
    return Status::error(fmt::format("{} is not a fusion", other->name()));
  }
  if (fusion == other) return Status::error(fmt::format("cannot merge {} with itself", fusion->name()));
  for (HloInstruction* operand : fusion->operands()) {
    if (operand == other) return Status::error(fmt::format("{} uses {}: not siblings", fusion->name(), other->name()));
  }
  for (HloInstruction* operand : other->operands()) {
    if (operand == fusion) return Status::error(fmt::format("{} uses {}: not siblings", other->name(), fusion->name()));
  }
  FusionParameters params(fusion);
  StatusOr<std::vector<HloInstruction*>> outputs = cloneIntoFusion(fusion, other, params);
  if (!outputs.ok()) return outputs.status();
  makeMultiOutput(fusion);
  std::vector<int64_t> indices;
  for (HloInstruction* value : *outputs) indices.push_back(appendOutput(fusion, value));

  HloComputation& outer = *fusion->parent();
  std::vector<HloInstruction*> users = other->users();
  bool wasRoot = other->isRoot();
  if (!isMultiOutputFusion(*other)) {
    HloInstruction* element = addTupleElement(outer, fusion, indices.front());
    for (HloInstruction* user : users) {
      for (int i = 0; i < user->operandCount(); ++i) {
        if (user->operand(i) == other) user->replaceOperand(i, element);
      }
    }
    if (wasRoot) outer.setRoot(element);
  } else {
    // Users of a multi-output fusion are get-tuple-elements (or take the whole tuple): renumber them.
    HloInstruction* whole = nullptr;
    for (HloInstruction* user : users) {
      if (user->opcode() == HloOpcode::kGetTupleElement && user->attributes().tupleIndex) {
        user->replaceOperand(0, fusion);
        user->mutableAttributes().tupleIndex = indices[static_cast<size_t>(*user->attributes().tupleIndex)];
        continue;
      }
      if (!whole) {
        std::vector<HloInstruction*> elements;
        for (int64_t index : indices) elements.push_back(addTupleElement(outer, fusion, index));
        whole = outer.addInstruction("tuple", HloOpcode::kTuple, other->shape(), elements);
      }
      for (int i = 0; i < user->operandCount(); ++i) {
        if (user->operand(i) == other) user->replaceOperand(i, whole);
      }
    }
    if (wasRoot) {
      if (!whole) {
        std::vector<HloInstruction*> elements;
        for (int64_t index : indices) elements.push_back(addTupleElement(outer, fusion, index));
        whole = outer.addInstruction("tuple", HloOpcode::kTuple, other->shape(), elements);
      }
      outer.setRoot(whole);
    }
  }
  compactParameters(fusion);
  removeProducerIfDead(other);
  return fusion;
}

int64_t fusedInstructionCount(const HloInstruction& instruction) {
  const HloComputation* fused = instruction.isFusion() ? instruction.fusedComputation() : nullptr;
  if (!fused) return 1;
  // Without walking the computation (asked for every candidate of every fusion step): a fused computation has one
  // parameter per operand of its fusion, and a tuple root only gathers outputs.
  const HloInstruction* root = fused->root();
  return fused->instructionCount() - instruction.operandCount() - (root && root->opcode() == HloOpcode::kTuple ? 1 : 0);
}

std::vector<HloInstruction*> distinctOperands(const HloInstruction& instruction) {
  std::vector<HloInstruction*> operands;
  for (HloInstruction* operand : instruction.operands()) {
    if (std::find(operands.begin(), operands.end(), operand) == operands.end()) operands.push_back(operand);
  }
  return operands;
}

std::vector<HloInstruction*> fusedInstructions(const HloInstruction& fusion) {
  std::vector<HloInstruction*> result;
  const HloComputation* fused = fusion.fusedComputation();
  if (!fused) return result;
  StatusOr<std::vector<HloInstruction*>> order = fused->postOrder();
  if (!order.ok()) return result;
  for (HloInstruction* inst : *order) {
    if (inst->opcode() == HloOpcode::kParameter) continue;
    if (inst == fused->root() && inst->opcode() == HloOpcode::kTuple) continue;
    result.push_back(inst);
  }
  return result;
}

std::vector<HloInstruction*> fusionOutputs(const HloInstruction& fusion) {
  const HloComputation* fused = fusion.fusedComputation();
  if (!fused || !fused->root()) return {};
  if (fused->root()->opcode() == HloOpcode::kTuple) return fused->root()->operands();
  return {fused->root()};
}

bool isMultiOutputFusion(const HloInstruction& fusion) {
  const HloComputation* fused = fusion.fusedComputation();
  return fused && fused->root() && fused->root()->opcode() == HloOpcode::kTuple;
}

}  // namespace fusionscope::core
