#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Removes tuple packing that is unpacked again:
//   get-tuple-element(tuple(a, b, ...), i)                     -> the i-th operand of the tuple
//   tuple(get-tuple-element(x, 0), ..., get-tuple-element(x, n-1)) -> x, when x is an n-tuple of the same shape
// A replacement must have exactly the shape (layouts included) of what it replaces. The get-tuple-elements
// and tuples left without users are removed; other operands that lose their last user are left to dce.
// Fused computations are skipped (they belong to the fusion passes), as are instructions with control
// dependencies.
//
//   Before:  t = (f32[8], s32[]) tuple(a, b)    After:  ROOT n = f32[8] negate(a)
//            g = f32[8] get-tuple-element(t), index=0
//            ROOT n = f32[8] negate(g)
class TupleSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "tuple-simplify"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
