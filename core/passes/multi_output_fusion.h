#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Multi-output fusion, after XLA's GPU MultiOutputFusion: runs after producer-consumer `fusion` and turns
// kernels that read the same data into one kernel with a tuple root, so the data is read once.
//
//   Sibling: fusions (or a reduce / elementwise instruction) that read the same operand and iterate over
//   the same space (loops with the same shape, reductions of the same input over the same dimensions, or
//   a loop over a reduction's input shape) merge, provided neither depends on the other:
//     f1 = f32[512] fusion(p), kind=kInput     ->  f = (f32[512], f32[512]) fusion(p), kind=kInput
//     f2 = f32[512] fusion(p), kind=kInput         gte.0 = get-tuple-element(f), index=0 ...
//   Producer-consumer: an elementwise instruction or kLoop fusion that also has users other than a
//   reduction moves into the reduction and stays available as an extra output, so it is computed once:
//     e = exp(p); r = reduce(e, c); tuple(r, e) ->  f = fusion(p, c) { tuple(reduce(exp)), exp) }
//
// Candidate pairs are taken by bytes saved, largest first; each merge is checked against the config's
// limits and a topological order (kept valid across merges) so no cycle is created. Every taken or
// refused candidate is recorded with its reason. Does nothing when FusionConfig::multiOutputFusion is off.
class MultiOutputFusion : public HloPass {
 public:
  std::string_view name() const override { return "multi-output-fusion"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
