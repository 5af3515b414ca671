#pragma once

#include <cstdint>
#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Local rewrites that make the graph smaller without changing what it computes:
//   x+0, 0+x, x-0, x*1, 1*x, x/1 -> x;  x*0, 0*x -> 0 (integers only: for floats NaN*0 and inf*0 are NaN)
//   reshape/convert/copy/bitcast to the same shape, transpose by the identity permutation, broadcast to the
//   same shape, slice of the full range -> the operand
//   transpose(transpose(x)) -> one transpose (or x); reshape(reshape(x)) -> reshape(x)
//   transpose(dot(a, b)) -> dot(b, a) for a 2-D matrix product the transpose alone reads (XLA's simplifier)
//   dot(a, b) whose operands have only batch and contracting dimensions (a batched inner product) ->
//   reduce(multiply(a, b)) over the contracting dimensions, in the dot's accumulation type (XLA's simplifier)
//   reduce(reduce(x, D1), D2) -> one reduce of x over both, when both apply the same binary op to their
//   parameters from equal scalar constants and the inner one has no other user (XLA's simplifier does it)
//   reduce over dimensions of size 1 starting from its op's identity (add 0, max -inf, ...) -> reshape
//   elementwise ops, broadcast, reshape and transpose of constants -> a constant, when the result has at
//   most kMaxFoldElements elements (pred, integers with wraparound, f32 in float and f64 in double; other
//   types are left alone, as are broadcasts of scalars, which stay cheap to fuse)
// "0" and "1" are splat constants or broadcasts of scalar constants. A replacement always has exactly the
// shape of what it replaces, layout included, so a layout-changing copy or transpose stays. Rewrites repeat
// from a worklist until nothing applies; instructions left unused by a rewrite are removed. Fused
// computations are skipped: the fusion passes own them.
//
//   Before:  zero = s32[] constant(0)                    After:  ROOT n = s32[4] negate(p)
//            b = s32[4] broadcast(zero), dimensions={}
//            a = s32[4] add(p, b)
//            ROOT n = s32[4] negate(a)
class AlgebraicSimplifier : public HloPass {
 public:
  static constexpr int64_t kMaxFoldElements = 64;

  std::string_view name() const override { return "simplify"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
