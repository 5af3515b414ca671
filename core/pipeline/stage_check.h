#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/eval/evaluator.h"
#include "core/pipeline/stage.h"

namespace fusionscope::core {

// The evaluator's verdict on one stage: does it compute what stage 0 computes?
struct StageCheck {
  int stage = 0;
  std::string label;
  bool agrees = true;
  std::string difference;   // how the outputs differ (first element), when they do
  std::string instruction;  // the first instruction (in post order) whose value differs, when found
  std::string error;        // the stage could not be evaluated
};

// Evaluates stage 0 and every later stage of `run` on the same seeded random arguments and compares the
// results (exact for integers, the tolerance of core/eval for floats). Fails before evaluating anything
// when stage 0 uses an opcode the evaluator cannot run, naming it.
// `maxWork` bounds each evaluation (EvalOptions::maxWork).
StatusOr<std::vector<StageCheck>> checkStagesAgree(const PipelineRun& run, uint64_t seed,
                                                   double maxWork = EvalOptions{}.maxWork);

}  // namespace fusionscope::core
