#include "core/passes/conditional_simplifier.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/call_inliner.h"
#include "core/passes/dce.h"

namespace fusionscope::core {
namespace {

// The branch a constant index runs; nullopt when the index is not a constant.
std::optional<size_t> constantBranch(const HloInstruction& conditional, size_t branches) {
  if (branches == 1) return 0;
  const HloInstruction* index = conditional.operand(0);
  if (index->opcode() != HloOpcode::kConstant || !index->literal() || index->literal()->valueCount() != 1 ||
      index->literal()->kind() != Literal::Kind::kInteger) {
    return std::nullopt;
  }
  const int64_t value = index->literal()->integerValues()[0];
  if (index->shape().elementType() == PrimitiveType::kPred) return value != 0 ? 0 : 1;
  if (value < 0 || value >= static_cast<int64_t>(branches)) return branches - 1;
  return static_cast<size_t>(value);
}

// Ops that cost about as much as a select of their result: computing both branches is no dearer than branching.
bool cheap(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::kBroadcast:
    case HloOpcode::kConcatenate:
    case HloOpcode::kConstant:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kReduce:
    case HloOpcode::kReshape:
    case HloOpcode::kPad:
    case HloOpcode::kParameter:
    case HloOpcode::kSlice:
    case HloOpcode::kTuple: return true;
    default: return isElementwise(inst.opcode());
  }
}

// A branch that only passes values on (parameters, tuples, get-tuple-elements) and gives an array: running it is
// cheaper than a select.
bool passesOnly(const HloComputation& branch) {
  const bool plumbing = std::all_of(branch.instructions().begin(), branch.instructions().end(), [](const auto& inst) {
    return inst->opcode() == HloOpcode::kParameter || inst->opcode() == HloOpcode::kTuple ||
           inst->opcode() == HloOpcode::kGetTupleElement;
  });
  const Shape& result = branch.root()->shape();
  const bool array = result.isArray() || std::any_of(result.tupleElements().begin(), result.tupleElements().end(),
                                                     [](const Shape& s) { return !s.isTuple(); });
  return plumbing && array;
}

bool holdsToken(const Shape& shape) {
  if (shape.isToken()) return true;
  return std::any_of(shape.tupleElements().begin(), shape.tupleElements().end(), holdsToken);
}

class Remover {
 public:
  Remover(HloModule& module, HloInstruction* conditional)
      : m_module(module), m_conditional(conditional), m_computation(*conditional->parent()) {}

  // The conditional replaced by the branch `index` runs.
  Status runBranch(HloComputation& branch, size_t index) {
    StatusOr<HloInstruction*> root =
        copyBodyInto(m_computation, branch, {m_conditional->operand(static_cast<int>(index) + 1)}, m_module);
    if (!root.ok()) return root.status();
    return replaceWith(*root);
  }

  // The conditional replaced by a select between both branches' results.
  Status selectBetween(HloComputation& onTrue, HloComputation& onFalse) {
    StatusOr<HloInstruction*> t = copyBodyInto(m_computation, onTrue, {m_conditional->operand(1)}, m_module);
    if (!t.ok()) return t.status();
    StatusOr<HloInstruction*> f = copyBodyInto(m_computation, onFalse, {m_conditional->operand(2)}, m_module);
    if (!f.ok()) return f.status();
    return replaceWith(select(*t, *f));
  }

 private:
  HloInstruction* select(HloInstruction* t, HloInstruction* f) {
    const Shape& shape = f->shape();
    const std::string name = m_computation.uniqueInstructionName(m_conditional->name());
    if (shape.isArray()) {
      HloInstruction* pred = m_conditional->operand(0);
      if (!shape.isScalar()) {
        Shape predShape(PrimitiveType::kPred, shape.dimensions());
        predShape.setLayout(shape.layout());
        pred = m_computation.addInstruction(m_computation.uniqueInstructionName(name + ".pred"), HloOpcode::kBroadcast,
                                            predShape, {pred});
        pred->mutableAttributes().dimensions = std::vector<int64_t>{};
      }
      HloInstruction* made = m_computation.addInstruction(name, HloOpcode::kSelect, shape, {pred, t, f});
      made->mutableAttributes().metadata = m_conditional->attributes().metadata;
      return made;
    }
    std::vector<HloInstruction*> elements;
    for (int i = 0; i < shape.tupleSize(); ++i) {
      elements.push_back(select(element(t, i), element(f, i)));
    }
    return m_computation.addInstruction(name, HloOpcode::kTuple, shape, elements);
  }

  HloInstruction* element(HloInstruction* tuple, int i) {
    if (tuple->opcode() == HloOpcode::kTuple) return tuple->operand(i);
    HloInstruction* gte =
        m_computation.addInstruction(m_computation.uniqueInstructionName(tuple->name() + ".element"),
                                     HloOpcode::kGetTupleElement, tuple->shape().tupleElement(i), {tuple});
    gte->mutableAttributes().tupleIndex = i;
    return gte;
  }

  Status replaceWith(HloInstruction* replacement) {
    m_conditional->replaceAllUsesWith(replacement);
    if (Status s = m_computation.removeInstruction(m_conditional); !s.ok()) {
      return Status::error(fmt::format("conditional-simplify: {}", s.message()));
    }
    return okStatus();
  }

  HloModule& m_module;
  HloInstruction* m_conditional;
  HloComputation& m_computation;
};

}  // namespace

StatusOr<bool> ConditionalSimplifier::run(HloModule& module, PassContext& /*context*/) {
  std::vector<HloInstruction*> conditionals;
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() == HloOpcode::kConditional) conditionals.push_back(inst.get());
    }
  }
  SideEffectAnalysis sideEffects;
  std::vector<HloComputation*> changedComputations;
  for (HloInstruction* conditional : conditionals) {
    const std::vector<HloComputation*> branches = conditional->branchComputations();
    if (branches.empty() || std::find(branches.begin(), branches.end(), nullptr) != branches.end() ||
        conditional->operandCount() != static_cast<int>(branches.size()) + 1 ||
        sideEffects.hasSideEffect(*conditional) || !conditional->controlPredecessors().empty() ||
        !conditional->controlSuccessors().empty()) {
      continue;
    }
    HloComputation* computation = conditional->parent();
    Remover remover(module, conditional);
    if (std::optional<size_t> index = constantBranch(*conditional, branches.size())) {
      FS_RETURN_IF_ERROR(remover.runBranch(*branches[*index], *index));
    } else {
      auto allCheap = [](const HloComputation* branch) {
        return std::all_of(branch->instructions().begin(), branch->instructions().end(),
                           [](const auto& inst) { return cheap(*inst); });
      };
      if (branches.size() != 2 || conditional->operand(0)->shape().elementType() != PrimitiveType::kPred ||
          holdsToken(conditional->shape()) || !allCheap(branches[0]) || !allCheap(branches[1]) ||
          passesOnly(*branches[0]) || passesOnly(*branches[1])) {
        continue;
      }
      FS_RETURN_IF_ERROR(remover.selectBetween(*branches[0], *branches[1]));
    }
    if (std::find(changedComputations.begin(), changedComputations.end(), computation) == changedComputations.end()) {
      changedComputations.push_back(computation);
    }
  }
  for (HloComputation* computation : changedComputations) {
    if (Status s = computation->sortInPostOrder(); !s.ok()) {
      return Status::error(fmt::format("conditional-simplify: {}", s.message()));
    }
  }
  return !changedComputations.empty();
}

}  // namespace fusionscope::core
