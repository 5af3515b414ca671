#include "core/passes/while_loop_simplifier.h"

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/cse.h"
#include "core/passes/dce.h"
#include "core/passes/while_loop_utils.h"

namespace fusionscope::core {
namespace {

// Whether the body computes `a` and `b` alike when element i and element j of its state hold one value.
class SameUpdate {
 public:
  SameUpdate(const HloInstruction* param, int64_t i, int64_t j, SideEffectAnalysis& sideEffects)
      : m_param(param), m_i(i), m_j(j), m_sideEffects(sideEffects) {}

  bool operator()(const HloInstruction* a, const HloInstruction* b) {
    if (a == b) return true;
    if (isElement(a, m_i) && isElement(b, m_j)) return true;
    if (isElement(a, m_j) && isElement(b, m_i)) return true;
    if (a->opcode() == HloOpcode::kParameter || b->opcode() == HloOpcode::kParameter) return false;
    // Two draws from a generator differ however alike they are written.
    if (a->opcode() == HloOpcode::kRng || a->opcode() == HloOpcode::kRngGetAndUpdateState) return false;
    if (m_sideEffects.hasSideEffect(*a) || m_sideEffects.hasSideEffect(*b)) return false;
    if (!sameValueGivenSameOperands(*a, *b)) return false;
    // Depth is bounded by the budget: a body is compared at most this many instruction pairs deep and wide.
    if (++m_visited > kBudget) return false;
    if (!m_same.insert({a, b}).second) return true;
    for (int k = 0; k < a->operandCount(); ++k) {
      if (!(*this)(a->operand(k), b->operand(k))) return false;
    }
    return true;
  }

 private:
  static constexpr int kBudget = 4096;
  struct PairHash {
    size_t operator()(const std::pair<const HloInstruction*, const HloInstruction*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  bool isElement(const HloInstruction* inst, int64_t index) const {
    return inst->opcode() == HloOpcode::kGetTupleElement && inst->operand(0) == m_param &&
           inst->attributes().tupleIndex == index;
  }
  const HloInstruction* m_param;
  int64_t m_i, m_j;
  SideEffectAnalysis& m_sideEffects;
  int m_visited = 0;
  std::unordered_set<std::pair<const HloInstruction*, const HloInstruction*>, PairHash> m_same;
};

bool sameInitialValue(const HloInstruction& init, int i, int j) {
  const HloInstruction* a = init.operand(i);
  const HloInstruction* b = init.operand(j);
  if (a == b) return true;
  return a->opcode() == HloOpcode::kConstant && b->opcode() == HloOpcode::kConstant && a->literal() && b->literal() &&
         a->literal()->kind() != Literal::Kind::kElided && sameValueGivenSameOperands(*a, *b);
}

// Element j always equals element i: its readers read element i from now on (inside the body, in the condition
// and after the loop). Element j is then dead, for the second step to drop.
bool mergeRepeatedElements(WhileLoop& l, SideEffectAnalysis& sideEffects) {
  const HloInstruction* init = l.loop->operand(0);
  if (init->opcode() != HloOpcode::kTuple) return false;
  const HloInstruction* root = l.body->root();
  bool changed = false;
  std::vector<bool> merged(static_cast<size_t>(l.size), false);
  for (int i = 0; i < l.size; ++i) {
    if (merged[static_cast<size_t>(i)]) continue;
    for (int j = i + 1; j < l.size; ++j) {
      if (merged[static_cast<size_t>(j)]) continue;
      if (!(l.loop->shape().tupleElement(i) == l.loop->shape().tupleElement(j))) continue;
      if (!sameInitialValue(*init, i, j)) continue;
      SameUpdate same(l.bodyParam, i, j, sideEffects);
      if (!same(root->operand(i), root->operand(j))) continue;
      bool readersMoved = false;
      for (auto* readers : {&l.bodyReaders, &l.conditionReaders, &l.outsideReaders}) {
        for (HloInstruction* reader : (*readers)[static_cast<size_t>(j)]) {
          reader->mutableAttributes().tupleIndex = i;
          (*readers)[static_cast<size_t>(i)].push_back(reader);
          readersMoved = true;
        }
        (*readers)[static_cast<size_t>(j)].clear();
      }
      merged[static_cast<size_t>(j)] = true;
      changed = changed || readersMoved;
    }
  }
  return changed;
}

// Marks what `start` is computed from inside the body.
void markOperands(HloInstruction* start, std::unordered_set<const HloInstruction*>& reached) {
  std::vector<HloInstruction*> work = {start};
  while (!work.empty()) {
    HloInstruction* inst = work.back();
    work.pop_back();
    if (!reached.insert(inst).second) continue;
    for (HloInstruction* operand : inst->operands()) work.push_back(operand);
    for (HloInstruction* operand : inst->controlPredecessors()) work.push_back(operand);
  }
}

// Elements nothing needs: not read by the condition or after the loop, and in the body feeding only their own
// update (nothing else the body computes, and nothing with a side effect, is computed from them).
std::vector<bool> deadElements(const WhileLoop& l, SideEffectAnalysis& sideEffects) {
  std::vector<bool> dead(static_cast<size_t>(l.size), false);
  HloInstruction* root = l.body->root();
  for (int k = 0; k < l.size; ++k) {
    if (!l.conditionReaders[static_cast<size_t>(k)].empty() || !l.outsideReaders[static_cast<size_t>(k)].empty()) {
      continue;
    }
    std::unordered_set<const HloInstruction*> needed;
    for (int other = 0; other < l.size; ++other) {
      if (other != k) markOperands(root->operand(other), needed);
    }
    for (const auto& inst : l.body->instructions()) {
      if (sideEffects.hasSideEffect(*inst)) markOperands(inst.get(), needed);
    }
    bool readElsewhere = false;
    for (const HloInstruction* reader : l.bodyReaders[static_cast<size_t>(k)]) {
      if (needed.count(reader)) readElsewhere = true;
    }
    dead[static_cast<size_t>(k)] = !readElsewhere;
  }
  return dead;
}

// Drops the dead elements from the loop's state: the initial tuple, both parameters, the body's root, the loop's
// shape, and every get-tuple-element's index.
Status dropElements(WhileLoop& l, const std::vector<bool>& dead) {
  std::vector<int64_t> newIndex(static_cast<size_t>(l.size), -1);
  std::vector<Shape> kept;
  for (int k = 0; k < l.size; ++k) {
    if (dead[static_cast<size_t>(k)]) continue;
    newIndex[static_cast<size_t>(k)] = static_cast<int64_t>(kept.size());
    kept.push_back(l.loop->shape().tupleElement(k));
  }
  const Shape narrowed = Shape::tuple(kept);
  HloComputation* caller = l.loop->parent();

  // The initial state: the kept operands of a tuple, or the kept elements of whatever else it is.
  HloInstruction* init = l.loop->operand(0);
  std::vector<HloInstruction*> parts;
  for (int k = 0; k < l.size; ++k) {
    if (dead[static_cast<size_t>(k)]) continue;
    if (init->opcode() == HloOpcode::kTuple) {
      parts.push_back(init->operand(k));
    } else {
      HloInstruction* element = caller->addInstruction("get-tuple-element", HloOpcode::kGetTupleElement,
                                                       l.loop->shape().tupleElement(k), {init});
      element->mutableAttributes().tupleIndex = k;
      parts.push_back(element);
    }
  }
  l.loop->replaceOperand(0, addTuple(*caller, "tuple", parts, init->metadata()));

  HloInstruction* root = l.body->root();
  std::vector<HloInstruction*> updates;
  for (int k = 0; k < l.size; ++k) {
    if (!dead[static_cast<size_t>(k)]) updates.push_back(root->operand(k));
  }
  l.body->setRoot(addTuple(*l.body, "tuple", updates, root->metadata()));

  for (auto* readers : {&l.bodyReaders, &l.conditionReaders, &l.outsideReaders}) {
    for (int k = 0; k < l.size; ++k) {
      for (HloInstruction* reader : (*readers)[static_cast<size_t>(k)]) {
        // A dead element's readers in the body feed only its own update, which goes with it.
        if (!dead[static_cast<size_t>(k)]) reader->mutableAttributes().tupleIndex = newIndex[static_cast<size_t>(k)];
      }
    }
  }
  l.bodyParam->mutableShape() = narrowed;
  l.conditionParam->mutableShape() = narrowed;
  l.loop->mutableShape() = narrowed;

  SideEffectAnalysis sideEffects;
  DeadCodeElimination::removeDeadInstructions(*l.body, sideEffects);
  DeadCodeElimination::removeDeadInstructions(*caller, sideEffects);
  for (HloComputation* computation : {caller, l.body}) {
    if (Status s = computation->sortInPostOrder(); !s.ok()) {
      return Status::error(fmt::format("while-simplify: {}", s.message()));
    }
  }
  return Status();
}

}  // namespace

StatusOr<bool> WhileLoopSimplifier::run(HloModule& module, PassContext& /*context*/) {
  const std::unordered_map<const HloComputation*, int> calls = callCounts(module);
  const std::vector<HloInstruction*> loops = whileInstructions(module);
  bool changed = false;
  SideEffectAnalysis sideEffects;
  for (HloInstruction* inst : loops) {
    WhileLoop l;
    if (!describeWhileLoop(inst, calls, l)) continue;
    bool merged = mergeRepeatedElements(l, sideEffects);
    std::vector<bool> dead = deadElements(l, sideEffects);
    int deadCount = 0;
    for (bool d : dead) deadCount += d ? 1 : 0;
    if (deadCount > 0 && deadCount < l.size) {
      if (Status s = dropElements(l, dead); !s.ok()) return s;
      merged = true;
    }
    changed = changed || merged;
  }
  return changed;
}

}  // namespace fusionscope::core
