#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Reshape mover (`reshape-mover`, part of the simplification loop as in XLA): an elementwise op whose operands are
// the same reshape (or the same transpose) of arrays of one shape, plus operands that take any shape for free
// (constants, broadcasts of a scalar; a broadcast whose dimensions keep their order under the transpose), is
// computed on the arrays before the reshape, and one reshape follows it. Moved only when every user of each such
// reshape moves too (nothing is computed twice), repeatedly as the simplification loop runs, so reshapes sink
// towards the outputs, where the simplifier merges or drops them and CSE sees values that were written two ways as
// one (a batch norm's `x - mean` computed in [1,1,1,C] for the variance and in [C] for the normalization).
//
//   Before:  r = f32[1,1,1,8] reshape(s: f32[8]);  c = f32[1,1,1,8] broadcast(f32[] k), dimensions={}
//            ROOT d = f32[1,1,1,8] divide(r, c)
//   After:   c' = f32[8] broadcast(k), dimensions={};  d = f32[8] divide(s, c')
//            ROOT r' = f32[1,1,1,8] reshape(d)
// Fused computations are left alone.
class ReshapeMover final : public HloPass {
 public:
  std::string_view name() const override { return "reshape-mover"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
