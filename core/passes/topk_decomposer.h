#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// TopK as a stable sort of (value, index) pairs and two slices, as XLA's TopkDecomposer does, so codegen (CPU and
// nvptx) needs no top-k kernel of its own: both forms JAX and XLA write are decomposed,
//   - the HLO op `topk(x), k=K, largest=true|false` (JAX's lax.top_k before optimization): the comparator is a
//     total-order `compare(a, b)` (GT for largest, LT for smallest) over the values;
//   - XLA CPU's custom-call `custom_call_target="TopK"` (after optimization): its called computation already
//     compares (value, index) pairs; K is the result's last dimension.
// Along the last dimension; the stable sort keeps the lower index first among equal values, as XLA does.
//
//   Before:  t = (f32[4,5], s32[4,5]) topk(x), k=5, largest=true                       x: f32[4,10]
//   After:   i = s32[4,10] iota(), iota_dimension=1
//            s = (f32[4,10], s32[4,10]) sort(x, i), dimensions={1}, is_stable=true, to_apply=topk_greater
//            t = tuple(slice(gte(s, 0)), slice(gte(s, 1)))                             slice={[0:4], [0:5]}
// Run by codegen's preparation (prepareForCodegen), not by the presets: the stages keep the op as written.
class TopKDecomposer final : public HloPass {
 public:
  std::string_view name() const override { return "topk-decomposer"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// True for `topk` and for XLA CPU's TopK custom-call.
bool isTopK(const class HloInstruction& inst);

}  // namespace fusionscope::core
