#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Computes once, before a while loop, what its body computes from values that do not change between iterations,
// as XLA's WhileLoopInvariantCodeMotion does in its simplification loop (XLA CPU's too; cpu preset):
//  - **invariant**: a state element the body passes on unchanged (the root's element k is the body's element k), a
//    constant, or an instruction all of whose operands are invariant;
//  - **hoisted**: an invariant instruction without side effects or control edges is copied into the loop's caller,
//    reading the loop's initial state there, with the invariant operands it needs; the loop carries its value as a
//    new state element, and the body reads that element instead;
//  - **not on their own**: constants, bitcasts, broadcasts, iotas, reshapes, reverses, slices, transposes and tuples
//    are hoisted only with an instruction that uses them (alone they would keep simplification and fusion from
//    seeing them in the body: XLA's `NotWorthHoistingIndividually`); control flow, custom calls and fusions stay.
// Only loops whose body and condition are called by that loop alone, whose state is read by element and whose body
// ends in a tuple change (as while-simplify's).
//
//   Before:  w = while(tuple(i0, k)), body: (i + 1, k, convert(shift-right-logical(iota, 16)) + f(i))
//   After:   h = convert(shift-right-logical(iota, 16)); w = while(tuple(i0, k, h)), body: (i + 1, k, h + f(i), h)
class WhileLoopInvariantCodeMotion : public HloPass {
 public:
  std::string_view name() const override { return "while-licm"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
