#pragma once

#include <cstdint>
#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Local rewrites that make the graph smaller or cheaper without changing what it computes (beyond rounding where a
// rewrite says so), most of them as XLA's simplifier writes them:
//   identities (algebraic_simplifier.cpp): x+0, x-0, x*1, x/1 -> x; x*0 -> 0 for integers only (NaN*0 is NaN);
//   reshape/convert/copy/bitcast to the same shape, identity transposes and broadcasts, full slices -> the operand;
//   transpose(transpose(x)), reshape(reshape(x)), slice(slice(x)) -> one op; abs of a value never negative; a
//   select by a constant predicate; elementwise ops, broadcasts, reshapes and transposes of constants -> a constant
//   of at most kMaxFoldElements elements;
//   arithmetic (simplify_arithmetic.cpp): min/max with constant bounds -> clamp; (a * c1) * c2 -> a * (c1 * c2);
//   x * convert(p) -> select(p, x, 0); a comparison of an iota with a constant its range decides -> a constant;
//   quotients of quotients -> one division; on the cpu backend a / broadcast(b)
//   -> a * broadcast(1 / b) where b is a constant or only the broadcast reads it, and a / exp(b) -> a * exp(-b);
//   reductions (simplify_reductions.cpp): reduce of reduce with the same op -> one reduce; a reduce over
//   dimensions of size 1 -> reshape; a sum of a negation -> the negation of the sum; broadcast(iota) -> iota;
//   dots (simplify_dots.cpp): transpose(dot(a, b)) -> dot(b, a); a dot with only batch and contracting
//   dimensions -> reduce(multiply(a, b)); a convolution's zero pad of its input -> the window's padding.
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
