#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Batch-norm expansion (`batch-norm-expander`, first in the cpu and gpu presets), as XLA's BatchNormExpander:
// `batch-norm-training`, `batch-norm-inference` and `batch-norm-grad` become broadcasts, elementwise ops and add
// reductions over every dimension but `feature_index`, so the fusion passes see (and fuse) what they compute and
// codegen needs no batch-norm kernels. Training computes the variance as E[x²] − E[x]² (one pass over x, as XLA
// does); inference folds scale and offset into one multiply-add per element; grad uses the mean and variance it
// is given. A training or grad op becomes a `tuple` of its three results, so its get-tuple-elements keep working
// (`tuple-simplify` then removes the tuple). Batch norms inside fusions or reducers are left alone, as XLA runs
// its expander on non-fusion computations.
//
//   Before:  bn = (f32[8,4], f32[4], f32[4]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
//   After:   sum = f32[4] reduce(x, 0), dimensions={0}          sq = f32[4] reduce(x * x, 0), dimensions={0}
//            mean = sum / 8    var = sq / 8 - mean * mean
//            y = (x - broadcast(mean)) * rsqrt(broadcast(var) + 0.001) * broadcast(scale) + broadcast(offset)
//            bn = tuple(y, mean, var)
class BatchNormExpander final : public HloPass {
 public:
  std::string_view name() const override { return "batch-norm-expander"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
