// The planner's control-flow steps: a while's condition and body, a conditional's branches, each planned as a
// called computation once the buffers of the step's operands are known, and the moves between them.
#include <algorithm>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/codegen/execution_planner.h"

namespace fusionscope::core::planning {

StatusOr<std::vector<Shape>> flatElements(const HloInstruction& instruction, const Shape& shape) {
  if (!shape.isTuple()) return std::vector<Shape>{shape};
  std::vector<Shape> elements;
  for (const Shape& element : shape.tupleElements()) {
    if (element.isTuple()) {
      return Status::error(fmt::format("{}: nested tuples are not supported by codegen", instruction.name()));
    }
    elements.push_back(element);
  }
  return elements;
}

std::vector<PlanMove> movesInto(const std::vector<int>& sources, const std::vector<bool>& owned,
                                const std::vector<int>& targets, const std::function<int(int)>& scratchFor) {
  std::vector<PlanMove> moves;
  std::vector<std::pair<int, int>> pending;  // (scratch, target)
  auto isTarget = [&](int buffer) { return std::find(targets.begin(), targets.end(), buffer) != targets.end(); };
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i] != targets[i] && isTarget(sources[i])) {
      const int scratch = scratchFor(sources[i]);
      moves.push_back({sources[i], scratch, false});
      pending.emplace_back(scratch, targets[i]);
    }
  }
  std::map<int, int> movedTo;
  for (size_t i = 0; i < sources.size(); ++i) {
    const int from = sources[i];
    if (from == targets[i] || isTarget(from)) continue;
    if (auto it = movedTo.find(from); it != movedTo.end()) {
      moves.push_back({it->second, targets[i], false});
    } else {
      moves.push_back({from, targets[i], owned[i]});
      movedTo[from] = targets[i];
    }
  }
  for (auto [scratch, target] : pending) moves.push_back({scratch, target, true});
  return moves;
}

Status Planner::planWhile(const LocalStep& local, const std::vector<int>& operandBuffers, PlanStep& step) {
  const HloInstruction* instruction = local.instruction;
  const HloComputation* condition = instruction->calledComputation("condition");
  const HloComputation* body = instruction->calledComputation("body");
  if (condition == nullptr || body == nullptr) {
    return Status::error(fmt::format("{}: while needs condition= and body=", instruction->name()));
  }
  step.kind = PlanStep::Kind::kWhile;
  step.instruction = instruction->name();
  if (operandBuffers.size() != step.state.size()) {
    return Status::error(fmt::format("{}: the operand has {} elements, the result {}", instruction->name(),
                                     operandBuffers.size(), step.state.size()));
  }
  // The initial state is copied: the operand may be read after the loop (or be a parameter or constant).
  for (size_t i = 0; i < operandBuffers.size(); ++i) step.init.push_back({operandBuffers[i], step.state[i], false});
  const std::vector<std::vector<int>> parameters{step.state};
  StatusOr<SubPlan> conditionPlan = planComputation(*condition, &parameters);
  if (!conditionPlan.ok()) return conditionPlan.status();
  const HloInstruction* conditionRoot = condition->root();
  if (conditionPlan->root.size() != 1 || !conditionRoot->shape().isArray() ||
      conditionRoot->shape().elementType() != PrimitiveType::kPred || conditionRoot->shape().elementCount() != 1) {
    return Status::error(fmt::format("{}: condition {} must return pred[]", instruction->name(), condition->name()));
  }
  step.condition = std::move(conditionPlan->steps);
  step.predicate = conditionPlan->root[0];
  StatusOr<SubPlan> bodyPlan = planComputation(*body, &parameters, /*loopBody=*/true);
  if (!bodyPlan.ok()) return bodyPlan.status();
  if (bodyPlan->root.size() != step.state.size()) {
    return Status::error(fmt::format("{}: body {} returns {} elements, the state has {}", instruction->name(),
                                     body->name(), bodyPlan->root.size(), step.state.size()));
  }
  step.body = std::move(bodyPlan->steps);
  step.update = movesInto(bodyPlan->root, bodyPlan->owned, step.state,
                          [&](int buffer) { return addBuffer(m_plan.buffers[static_cast<size_t>(buffer)].bytes); });
  return okStatus();
}

Status Planner::planConditional(const LocalStep& local, const std::vector<std::vector<int>>& groupBuffers,
                                PlanStep& step) {
  const HloInstruction* instruction = local.instruction;
  const std::vector<HloComputation*> branches = instruction->branchComputations();
  if (branches.empty() || std::find(branches.begin(), branches.end(), nullptr) != branches.end()) {
    return Status::error(fmt::format("{}: conditional needs true_computation/false_computation or branch_computations",
                                     instruction->name()));
  }
  const Shape& selectorShape = instruction->operand(0)->shape();
  if (!selectorShape.isArray() || selectorShape.elementCount() != 1 || isFloatingPoint(selectorShape.elementType()) ||
      groupBuffers[0].size() != 1) {
    return Status::error(fmt::format("{}: the branch index must be a pred or integer scalar", instruction->name()));
  }
  if (selectorShape.elementType() == PrimitiveType::kPred && branches.size() != 2) {
    return Status::error(fmt::format("{}: a pred conditional needs two branches", instruction->name()));
  }
  if (groupBuffers.size() != branches.size() + 1) {
    return Status::error(fmt::format("{}: {} branch(es) but {} branch operand(s)", instruction->name(), branches.size(),
                                     groupBuffers.size() - 1));
  }
  step.kind = PlanStep::Kind::kConditional;
  step.instruction = instruction->name();
  step.selector = groupBuffers[0][0];
  step.selectorType = selectorShape.elementType();
  step.results = std::move(step.state);
  step.state.clear();
  for (size_t k = 0; k < branches.size(); ++k) {
    const std::vector<std::vector<int>> parameters{groupBuffers[k + 1]};
    StatusOr<SubPlan> branch = planComputation(*branches[k], &parameters);
    if (!branch.ok()) return branch.status();
    if (branch->root.size() != step.results.size()) {
      return Status::error(fmt::format("{}: branch {} returns {} elements, the conditional {}", instruction->name(),
                                       branches[k]->name(), branch->root.size(), step.results.size()));
    }
    step.branches.push_back(std::move(branch->steps));
    step.branchResults.push_back(movesInto(branch->root, branch->owned, step.results, [&](int buffer) {
      return addBuffer(m_plan.buffers[static_cast<size_t>(buffer)].bytes);
    }));
  }
  return okStatus();
}

}  // namespace fusionscope::core::planning
