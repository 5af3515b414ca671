#include "core/passes/cse.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/dce.h"

namespace fusionscope::core {
namespace {

size_t mix(size_t seed, size_t value) {
  return seed ^ (value + 0x9E3779B97F4A7C15ull + (seed << 6) + (seed >> 2));
}

size_t hashShape(const Shape& shape) {
  size_t h = std::hash<int>()(static_cast<int>(shape.elementType()));
  for (int64_t d : shape.dimensions()) h = mix(h, std::hash<int64_t>()(d));
  if (shape.layout()) {
    for (int64_t d : shape.layout()->minorToMajor) h = mix(h, std::hash<int64_t>()(d + 1000));
  }
  for (const Shape& element : shape.tupleElements()) h = mix(h, hashShape(element));
  return h;
}

// Consistent with Literal::operator==: NaNs are all equal, -0 equals 0, and values narrower than f64 compare
// at float precision.
size_t hashLiteral(const Literal& literal) {
  size_t h = mix(static_cast<size_t>(literal.kind()), std::hash<std::string>()(literal.rawText()));
  for (int64_t v : literal.integerValues()) h = mix(h, std::hash<int64_t>()(v));
  bool wide =
      literal.shape().elementType() == PrimitiveType::kF64 || literal.shape().elementType() == PrimitiveType::kC128;
  for (double v : literal.floatValues()) {
    if (std::isnan(v)) {
      h = mix(h, 0x7FF8);
    } else if (v == 0) {
      h = mix(h, 0);
    } else {
      h = mix(h, wide ? std::hash<double>()(v) : std::hash<float>()(static_cast<float>(v)));
    }
  }
  return h;
}

// add(a, b) and add(b, a) are one value, as XLA's CSE compares them (it ignores commutative operand order).
bool isCommutative(const HloInstruction& inst) {
  return inst.operandCount() == 2 && isCommutativeBinary(inst.opcode());
}

struct InstructionHash {
  size_t operator()(const HloInstruction* inst) const {
    size_t h = std::hash<int>()(static_cast<int>(inst->opcode()));
    h = mix(h, hashShape(inst->shape()));
    if (isCommutative(*inst)) {
      // The operands' hashes summed: the same for either order.
      h = mix(h, std::hash<const void*>()(inst->operand(0)) + std::hash<const void*>()(inst->operand(1)));
    } else {
      for (const HloInstruction* operand : inst->operands()) h = mix(h, std::hash<const void*>()(operand));
    }
    const InstructionAttributes& a = inst->attributes();
    if (a.dimensions) {
      for (int64_t d : *a.dimensions) h = mix(h, std::hash<int64_t>()(d));
    }
    if (a.tupleIndex) h = mix(h, std::hash<int64_t>()(*a.tupleIndex));
    if (a.direction) h = mix(h, static_cast<size_t>(*a.direction));
    // Callees by size only: two reducers written twice (JAX writes one per reduce) are the same computation when
    // they are equal in structure (sameCalledComputations).
    for (const CalledComputationRef& ref : inst->calledComputationRefs()) {
      for (const HloComputation* callee : ref.computations) h = mix(h, callee->instructionCount());
    }
    if (inst->literal()) h = mix(h, hashLiteral(*inst->literal()));
    return h;
  }
};

// Metadata names where an op came from; two ops from different source lines still compute the same value.
bool sameAttributesIgnoringMetadata(const InstructionAttributes& a, const InstructionAttributes& b) {
  if (a.metadata == b.metadata) return a == b;
  InstructionAttributes copy = b;
  copy.metadata = a.metadata;
  return a == copy;
}

bool sameCalledComputations(const HloInstruction& a, const HloInstruction& b);

// Whether two computations are the same in structure (as XLA's CSE compares callees): instruction by instruction in
// post order, the same opcode, shape, literal, attributes (metadata and names aside), parameter number and callees,
// reading the corresponding operands, with corresponding roots. JAX writes a reducer per reduce (`region_0.1`,
// `region_1.2`, each an add); two reduces of the same operand are then the same value.
bool sameComputation(const HloComputation& a, const HloComputation& b) {
  if (&a == &b) return true;
  if (a.instructionCount() != b.instructionCount() || a.parameterCount() != b.parameterCount()) return false;
  StatusOr<std::vector<HloInstruction*>> orderA = a.postOrder();
  StatusOr<std::vector<HloInstruction*>> orderB = b.postOrder();
  if (!orderA.ok() || !orderB.ok() || orderA->size() != orderB->size()) return false;
  std::unordered_map<const HloInstruction*, const HloInstruction*> counterpart;
  for (size_t i = 0; i < orderA->size(); ++i) {
    const HloInstruction& x = *(*orderA)[i];
    const HloInstruction& y = *(*orderB)[i];
    if (x.parameterNumber() != y.parameterNumber() || !sameValueGivenSameOperands(x, y)) return false;
    for (int o = 0; o < x.operandCount(); ++o) {
      auto found = counterpart.find(x.operand(o));
      if (found == counterpart.end() || found->second != y.operand(o)) return false;
    }
    counterpart[&x] = &y;
  }
  auto root = counterpart.find(a.root());
  return root != counterpart.end() && root->second == b.root();
}

bool sameCalledComputations(const HloInstruction& a, const HloInstruction& b) {
  const auto& ra = a.calledComputationRefs();
  const auto& rb = b.calledComputationRefs();
  if (ra.size() != rb.size()) return false;
  for (size_t i = 0; i < ra.size(); ++i) {
    if (ra[i].key != rb[i].key || ra[i].braced != rb[i].braced ||
        ra[i].computations.size() != rb[i].computations.size()) {
      return false;
    }
    for (size_t c = 0; c < ra[i].computations.size(); ++c) {
      if (!sameComputation(*ra[i].computations[c], *rb[i].computations[c])) return false;
    }
  }
  return true;
}

struct InstructionEqual {
  bool operator()(const HloInstruction* a, const HloInstruction* b) const {
    if (a == b) return true;
    const bool sameOperands =
        a->operands() == b->operands() ||
        (isCommutative(*a) && isCommutative(*b) && a->operand(0) == b->operand(1) && a->operand(1) == b->operand(0));
    return sameOperands && sameValueGivenSameOperands(*a, *b);
  }
};

bool isRng(HloOpcode opcode) {
  return opcode == HloOpcode::kRng || opcode == HloOpcode::kRngBitGenerator ||
         opcode == HloOpcode::kRngGetAndUpdateState;
}

bool mayMerge(const HloInstruction& inst, SideEffectAnalysis& sideEffects) {
  if (inst.opcode() == HloOpcode::kParameter || isRng(inst.opcode())) return false;
  if (!inst.controlPredecessors().empty() || !inst.controlSuccessors().empty()) return false;
  if (inst.opcode() == HloOpcode::kConstant && (!inst.literal() || inst.literal()->kind() == Literal::Kind::kElided)) {
    return false;
  }
  return !sideEffects.hasSideEffect(inst);
}

StatusOr<bool> runOnComputation(HloComputation& computation, SideEffectAnalysis& sideEffects) {
  StatusOr<std::vector<HloInstruction*>> order = computation.postOrder();
  if (!order.ok()) return Status::error(fmt::format("cse: {}", order.message()));
  // Operands come earlier in post order and were already replaced by their representatives, so an
  // instruction's key never changes while it sits in the set.
  std::unordered_set<HloInstruction*, InstructionHash, InstructionEqual> seen(order->size());
  bool changed = false;
  for (HloInstruction* inst : *order) {
    if (!mayMerge(*inst, sideEffects)) continue;
    auto [it, inserted] = seen.insert(inst);
    if (inserted) continue;
    HloInstruction* representative = *it;
    inst->replaceAllUsesWith(representative);
    if (Status s = computation.removeInstruction(inst); !s.ok()) {
      return Status::error(fmt::format("cse: {}", s.message()));
    }
    changed = true;
  }
  if (changed) {
    if (Status s = computation.sortInPostOrder(); !s.ok()) return Status::error(fmt::format("cse: {}", s.message()));
  }
  return changed;
}

}  // namespace

bool sameValueGivenSameOperands(const HloInstruction& a, const HloInstruction& b) {
  if (a.opcode() != b.opcode() || a.opcodeString() != b.opcodeString()) return false;
  if (!(a.shape() == b.shape()) || a.operandCount() != b.operandCount()) return false;
  if ((a.literal() == nullptr) != (b.literal() == nullptr)) return false;
  if (a.literal() && !(*a.literal() == *b.literal())) return false;
  return sameCalledComputations(a, b) && sameAttributesIgnoringMetadata(a.attributes(), b.attributes());
}

StatusOr<bool> CommonSubexpressionElimination::run(HloModule& module, PassContext& /*context*/) {
  SideEffectAnalysis sideEffects;
  bool changed = false;
  for (const auto& computation : module.computations()) {
    StatusOr<bool> result = runOnComputation(*computation, sideEffects);
    if (!result.ok()) return result.status();
    changed = changed || *result;
  }
  return changed;
}

}  // namespace fusionscope::core
