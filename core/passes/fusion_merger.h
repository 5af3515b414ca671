#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Fusion merger, after XLA's GPU FusionMerger: merges a kLoop fusion into *all* of its users (which must
// all be fusions) when that does not add memory traffic, so its result is never written to memory:
//
//   f1 = f32[8] fusion(p), kind=kLoop            f2 = f32[8] fusion(p), kind=kLoop   (f1's body inside)
//   f2 = f32[8] fusion(f1), kind=kLoop     ->    f3 = f32[] fusion(p), kind=kInput   (f1's body inside)
//   f3 = f32[] fusion(f1), kind=kInput
//
// The producer is recomputed in every user, so merging is refused when that costs more than it saves:
// traffic would grow (the producer's inputs, now read by each user, outweigh its output), it would be
// recomputed by too many users, or it does expensive work (exp, a reduction, ...) that a user would repeat
// for many elements. Every producer considered gets a decision with its reason. The pass repeats its
// sweep until nothing merges, so a second run changes nothing.
class FusionMerger : public HloPass {
 public:
  std::string_view name() const override { return "fusion-merger"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
