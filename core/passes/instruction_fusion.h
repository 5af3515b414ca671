#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Producer->consumer fusion (`fusion`), like XLA's InstructionFusion (GpuInstructionFusion,
// CpuInstructionFusion) with the byte-based choice between candidates of priority fusion. Consumers are
// visited from the root upward (reverse post order); each one pulls in its operands, best saving first,
// until no rule allows more. A producer with other users is duplicated when it is cheap (broadcast, iota,
// small constants, bitcast/reshape, cheap elementwise) and never when it is expensive. Every decision,
// taken or refused, is recorded with its reason; the rules live in fusion_rules.h.
//
//   p0 = f32[8] parameter(0)              p0 = f32[8] parameter(0)
//   e = f32[8] exponential(p0)     =>     ROOT fusion = f32[] fusion(p0, c), kind=kInput,
//   c = f32[] constant(0)                   calls=fused_computation   // {exponential, reduce, constant}
//   ROOT r = f32[] reduce(e, c), ...
//
// Only the entry and while/conditional/call bodies are fused; reducers and other called computations
// (to_apply) and existing fused computations are left alone. The pass iterates to a fixed point, so a
// second run reports no change.
class InstructionFusion final : public HloPass {
 public:
  std::string_view name() const override { return "fusion"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
