#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Replaces every `call` instruction by a copy of its callee's body: parameter i becomes the call's operand i,
// the copied root takes the call's place. Copies get names unique in the caller (the callee's names where
// free); a copied fusion gets its own copy of its fused computation. Callees are inlined before their callers
// (computation post order), so nested calls disappear in one run. A callee that nothing references afterwards is
// removed, as is anything only it referenced. while, conditional, fusion, reduce, map, sort, ... keep their
// computations.
//
//   Before:  square { x = f32[] parameter(0)       After:  ENTRY main { p = f32[] parameter(0)
//                     ROOT m = f32[] multiply(x, x) }                   ROOT m = f32[] multiply(p, p) }
//            ENTRY main { p = f32[] parameter(0)
//                         ROOT c = f32[] call(p), to_apply=square }
// A module whose computations would grow past this many instructions once inlined is refused before anything is
// copied (a few nested computations that each call the next twice multiply without bound).
inline constexpr int64_t kMaxInlinedInstructions = 1'000'000;

class CallInliner : public HloPass {
 public:
  std::string_view name() const override { return "inline"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// Replaces `caller` (a call, or a fusion run as the instructions it holds) by a copy of `body`: parameter i
// becomes the caller's operand i, the copied root takes the caller's place. `body` itself is left in the module.
Status inlineBody(HloInstruction* caller, const HloComputation& body, HloModule& module);

// Copies `body` into `into`: parameter i reads arguments[i]; a copied fusion gets its own fused computation.
// Returns the copy of the root, which nothing uses yet (an argument itself when the root is a parameter).
StatusOr<HloInstruction*> copyBodyInto(HloComputation& into, const HloComputation& body,
                                       const std::vector<HloInstruction*>& arguments, HloModule& module);

}  // namespace fusionscope::core
