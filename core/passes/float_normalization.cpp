#include "core/passes/float_normalization.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {
namespace {

bool hasBf16(const Shape& shape) {
  if (shape.isTuple()) {
    for (const Shape& element : shape.tupleElements()) {
      if (hasBf16(element)) return true;
    }
    return false;
  }
  return shape.isArray() && shape.elementType() == PrimitiveType::kBF16;
}

// The shape with bf16 elements as f32, layouts kept.
Shape widened(const Shape& shape) {
  if (shape.isTuple()) {
    std::vector<Shape> elements;
    for (const Shape& element : shape.tupleElements()) elements.push_back(widened(element));
    return Shape::tuple(std::move(elements));
  }
  if (!shape.isArray() || shape.elementType() != PrimitiveType::kBF16) return shape;
  Shape wide(PrimitiveType::kF32, shape.dimensions());
  wide.setLayout(shape.layout());
  return wide;
}

// Ops the normalization leaves in bf16: conversions themselves, values that enter or hold the program's data
// as they are, and control flow and calls (their bodies are normalized where they compute).
bool keepsItsType(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kConvert:
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kBitcast:
    case HloOpcode::kBitcastConvert:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
    case HloOpcode::kCustomCall:
    case HloOpcode::kFusion:
    case HloOpcode::kSort:
    case HloOpcode::kScatter:
    case HloOpcode::kSelectAndScatter:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kTopK: return true;
    default: return false;
  }
}

class Normalizer {
 public:
  explicit Normalizer(HloModule& module) : m_module(module) {}

  bool run(HloComputation& computation) {
    StatusOr<std::vector<HloInstruction*>> order = computation.postOrder();
    if (!order.ok()) return false;
    bool changed = false;
    for (HloInstruction* inst : *order) {
      if (keepsItsType(inst->opcode())) continue;
      bool reads = false;
      for (const HloInstruction* operand : inst->operands()) reads |= hasBf16(operand->shape());
      if (!reads && !hasBf16(inst->shape())) continue;
      if (!inst->shape().isArray() && !(inst->shape().isTuple() && inst->opcode() == HloOpcode::kReduce)) continue;
      changed |= widen(computation, inst);
    }
    return changed;
  }

 private:
  bool widen(HloComputation& computation, HloInstruction* inst) {
    // A reducer with bf16 parameters runs in f32 (a clone, shared by every op that reduces with it).
    std::vector<CalledComputationRef> called = inst->calledComputationRefs();
    for (CalledComputationRef& ref : called) {
      for (HloComputation*& callee : ref.computations) {
        HloComputation* wide = widenedReducer(*callee);
        if (!wide) return false;
        callee = wide;
      }
    }
    std::vector<HloInstruction*> operands;
    for (HloInstruction* operand : inst->operands()) {
      if (!operand->shape().isArray() || operand->shape().elementType() != PrimitiveType::kBF16) {
        operands.push_back(operand);
        continue;
      }
      HloInstruction*& wide = m_widened[operand];
      if (!wide) {
        wide = computation.addInstruction(operand->name() + ".f32", HloOpcode::kConvert, widened(operand->shape()),
                                          {operand});
      }
      operands.push_back(wide);
    }
    const Shape narrow = inst->shape();
    std::unique_ptr<HloInstruction> clone =
        inst->cloneWithOperands(computation.uniqueInstructionName(inst->name()), widened(narrow), operands);
    clone->mutableCalledComputationRefs() = std::move(called);
    HloInstruction* wide = computation.addInstruction(std::move(clone));
    HloInstruction* result = wide;
    if (narrow.isArray() && narrow.elementType() == PrimitiveType::kBF16) {
      result = computation.addInstruction(inst->name() + ".bf16", HloOpcode::kConvert, narrow, {wide});
      result->mutableAttributes().metadata = inst->attributes().metadata;
    } else if (narrow.isTuple() && hasBf16(narrow)) {
      // A variadic reduce: each bf16 result converted back, the tuple rebuilt.
      std::vector<HloInstruction*> elements;
      for (int i = 0; i < narrow.tupleSize(); ++i) {
        HloInstruction* element = computation.addInstruction(
            inst->name() + ".element", HloOpcode::kGetTupleElement, wide->shape().tupleElement(i), {wide});
        element->mutableAttributes().tupleIndex = i;
        if (narrow.tupleElement(i).elementType() == PrimitiveType::kBF16) {
          element = computation.addInstruction(inst->name() + ".bf16", HloOpcode::kConvert, narrow.tupleElement(i),
                                               {element});
        }
        elements.push_back(element);
      }
      result = computation.addInstruction(inst->name() + ".tuple", HloOpcode::kTuple, narrow, elements);
    }
    const bool wasRoot = computation.root() == inst;
    inst->replaceAllUsesWith(result);
    if (wasRoot) computation.setRoot(result);
    if (inst->users().empty() && inst->controlSuccessors().empty() && !inst->hasSideEffect()) {
      (void)computation.removeInstruction(inst);
    }
    return true;
  }

  // The reducer in f32: a clone whose bf16 parameters and values are f32. Null when it does more than scalar
  // arithmetic (then the op keeps its types).
  HloComputation* widenedReducer(const HloComputation& reducer) {
    if (auto it = m_reducers.find(&reducer); it != m_reducers.end()) return it->second;
    StatusOr<std::vector<HloInstruction*>> order = reducer.postOrder();
    if (!order.ok() || !reducer.root()) return m_reducers[&reducer] = nullptr;
    for (const HloInstruction* inst : *order) {
      if (!inst->calledComputationRefs().empty()) return m_reducers[&reducer] = nullptr;
    }
    auto owned = std::make_unique<HloComputation>(m_module.uniqueComputationName(reducer.name() + "_f32"));
    HloComputation* wide = m_module.addComputation(std::move(owned));
    std::unordered_map<const HloInstruction*, HloInstruction*> mapped;
    for (const HloInstruction* inst : *order) {
      std::vector<HloInstruction*> operands;
      for (const HloInstruction* operand : inst->operands()) operands.push_back(mapped.at(operand));
      mapped[inst] = wide->addInstruction(inst->cloneWithOperands(inst->name(), widened(inst->shape()), operands));
    }
    // Each step's result rounded to bf16 as the reduction over bf16 values rounds it, so the values stay what they
    // were (XLA accumulates in f32 here; the evaluator's check of every stage is exact up to bf16's precision).
    auto rounded = [&](HloInstruction* value, const Shape& narrow) -> HloInstruction* {
      if (!narrow.isArray() || narrow.elementType() != PrimitiveType::kBF16) return value;
      HloInstruction* down = wide->addInstruction(value->name() + ".bf16", HloOpcode::kConvert, narrow, {value});
      return wide->addInstruction(value->name() + ".f32", HloOpcode::kConvert, value->shape(), {down});
    };
    HloInstruction* root = mapped.at(reducer.root());
    if (root->opcode() == HloOpcode::kTuple) {
      for (int i = 0; i < root->operandCount(); ++i) {
        root->replaceOperand(i, rounded(root->operand(i), reducer.root()->operand(i)->shape()));
      }
    } else {
      root = rounded(root, reducer.root()->shape());
    }
    wide->setRoot(root);
    return m_reducers[&reducer] = wide;
  }

  HloModule& m_module;
  std::unordered_map<const HloInstruction*, HloInstruction*> m_widened;
  std::unordered_map<const HloComputation*, HloComputation*> m_reducers;
};

}  // namespace

StatusOr<bool> FloatNormalization::run(HloModule& module, PassContext& /*context*/) {
  Normalizer normalizer(module);
  bool changed = false;
  // The entry and what its control flow runs (loop bodies and conditions, branches, calls), transitively;
  // reducers and comparators are widened as clones by the op that calls them, fused computations are left alone.
  std::vector<HloComputation*> computations;
  std::unordered_map<const HloComputation*, bool> seen;
  if (module.entry()) computations.push_back(module.entry());
  for (size_t i = 0; i < computations.size(); ++i) {
    seen[computations[i]] = true;
    for (const auto& inst : computations[i]->instructions()) {
      const HloOpcode opcode = inst->opcode();
      if (opcode != HloOpcode::kWhile && opcode != HloOpcode::kConditional && opcode != HloOpcode::kCall) continue;
      for (HloComputation* callee : inst->calledComputations()) {
        if (!seen[callee]) {
          seen[callee] = true;
          computations.push_back(callee);
        }
      }
    }
  }
  for (HloComputation* computation : computations) {
    if (!normalizer.run(*computation)) continue;
    changed = true;
    // New instructions were appended; text order must define every operand before its use again.
    if (Status sorted = computation->sortInPostOrder(); !sorted.ok()) return sorted;
  }
  return changed;
}

}  // namespace fusionscope::core
