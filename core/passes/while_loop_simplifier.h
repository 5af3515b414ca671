#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Narrows a while loop's state tuple, as XLA's while-loop simplifier does before fusion (both backends):
//  - **repeated elements**: two elements that start from the same value and that the body updates by the same
//    expression (the one reading element i where the other reads element j) always hold one value; every reader
//    of the second reads the first instead. JAX's `fori_loop` around a function that counts its own steps makes
//    two such counters.
//  - **dead elements**: an element that the condition does not read, that no user of the loop reads, and whose
//    value in the body feeds only its own update, is dropped from the tuple.
// Only loops whose body and condition are called by that loop alone, whose state is read through
// get-tuple-element only (inside and out) and whose body ends in a tuple are changed; at least one element stays.
// What the dropped elements computed is left to dce.
//
//   Before:  w = (s32[], s32[], f32[8]) while(tuple(c0, c0, x)), body: (i+1, j+1, f(j, x)), condition: i < 10
//   After:   w = (s32[], f32[8]) while(tuple(c0, x)),           body: (i+1, f(i, x)),    condition: i < 10
class WhileLoopSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "while-simplify"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
