#include "core/pipeline/stage_check.h"

#include <fmt/format.h>

#include "core/eval/evaluator.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

// The instructions of a stage's entry computation in post order, each fusion preceded by its members, so
// the first mismatch found is the earliest point where the stage went wrong.
std::vector<const HloInstruction*> inspectionOrder(const HloModule& module) {
  std::vector<const HloInstruction*> order;
  StatusOr<std::vector<HloInstruction*>> post = module.entry()->postOrder();
  if (!post.ok()) return order;
  for (const HloInstruction* inst : *post) {
    if (inst->isFusion()) {
      for (const HloInstruction* member : fusedInstructions(*inst)) order.push_back(member);
    }
    order.push_back(inst);
  }
  return order;
}

std::string firstDifferingInstruction(const EvalResult& reference, const EvalResult& stage, const HloModule& module) {
  for (const HloInstruction* inst : inspectionOrder(module)) {
    auto mine = stage.values.find(inst->name());
    auto theirs = reference.values.find(inst->name());
    if (mine == stage.values.end() || theirs == reference.values.end()) continue;
    if (!mine->second.shape().compatible(theirs->second.shape())) continue;
    std::string difference = compareValues(theirs->second, mine->second);
    if (!difference.empty()) return fmt::format("{} ({})", inst->name(), difference);
  }
  return {};
}

}  // namespace

StatusOr<std::vector<StageCheck>> checkStagesAgree(const PipelineRun& run, uint64_t seed, double maxWork) {
  if (run.stages.empty()) return std::vector<StageCheck>{};
  const HloModule& first = *run.stages.front().module;
  FS_RETURN_IF_ERROR(checkEvaluable(first));
  std::vector<Value> arguments = randomArguments(first, seed);
  EvalOptions options;
  options.recordValues = true;
  options.maxWork = maxWork;
  StatusOr<EvalResult> reference = evaluateModule(first, arguments, options);
  if (!reference.ok()) {
    return reference.status().withMessage(fmt::format("stage 0 cannot be evaluated: {}", reference.message()));
  }

  std::vector<StageCheck> checks;
  for (const Stage& stage : run.stages) {
    StageCheck check;
    check.stage = stage.index;
    check.label = stage.label();
    if (stage.index == 0) {
      checks.push_back(std::move(check));
      continue;
    }
    StatusOr<EvalResult> result = evaluateModule(*stage.module, arguments, options);
    if (!result.ok()) {
      check.agrees = false;
      check.error = result.message();
    } else {
      check.difference = compareValues(reference->result, result->result);
      if (!check.difference.empty()) {
        check.agrees = false;
        check.instruction = firstDifferingInstruction(*reference, *result, *stage.module);
      }
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

}  // namespace fusionscope::core
