#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Removes conditionals whose branch is known or cheap, as XLA's conditional simplifier does in both backends'
// simplification loops:
//  - a conditional with one branch, or whose branch index is a constant, becomes a copy of the branch it runs
//    (pred true: branch 0, false: branch 1; an integer index outside the branches: the last one);
//  - a two-branch conditional on a pred whose branches hold only cheap ops (elementwise ops, constants,
//    broadcasts, reshapes, slices, pads, concatenates, dynamic-slices, reduces and tuple plumbing) computes both
//    branches and selects between their results, unless a branch computes nothing (its result is its parameter's).
// Conditionals with side effects or control edges are kept. JAX's `lax.cond` / `lax.switch` on a value known when
// compiling (and the cond inside `jnp.diag`-style helpers) disappear, so fusion sees what the branch computes.
// The branch computations left unreferenced are dce's.
//
//   Before:  c = f32[8] conditional(s32[] constant(1), a, b), branch_computations={neg, exp}
//   After:   c = f32[8] exponential(b)
class ConditionalSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "conditional-simplify"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
