#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codegen/execution_plan.h"
#include "core/eval/result_check.h"
#include "core/eval/value.h"

namespace fusionscope::cli {

// --save-reference DIR: the arguments of the checked run (DIR/inputs/NAME.npy, for `fusionscope-gpurun --input`),
// the evaluator's result for them (DIR/expected/output_I.npy, I = position in the flattened result), each output's
// per-element bounds (DIR/expected/bound_I.npy, f64: the result check's, core/eval/result_check.h) and
// DIR/reference.json saying which is which; reference.json is written last. A checker elsewhere (scripts/gpu-check)
// applies the same bounds instead of recomputing them.
Status saveReference(const core::ExecutionPlan& plan, const std::vector<core::Value>& arguments,
                     const core::Value& expected, const core::ResultBounds& bounds, uint64_t seed,
                     const std::string& dir);

}  // namespace fusionscope::cli
