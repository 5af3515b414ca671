#pragma once

#include <string_view>

#include "core/ir/hlo_instruction.h"
#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Merges instructions that compute the same value: same opcode, operands (in either order for add, multiply,
// maximum, minimum, and, or, xor, as XLA's CSE), shape (layout included), attributes (metadata aside), literal and
// called computations. The first one in post order stays and the
// others' users read it. Instructions are visited in post order with a hash table per computation, so a
// duplicated chain collapses in one run, in linear time. Never merged: parameters, rng, instructions with
// side effects (their own or their callees'), with control dependencies, and elided constants (`{...}`
// hides the values, so two of them need not be equal).
//
//   Before:  a = f32[8] exponential(p)         After:  a = f32[8] exponential(p)
//            b = f32[8] exponential(p)                 ROOT s = f32[8] add(a, a)
//            ROOT s = f32[8] add(a, b)
// Whether `a` and `b` compute the same value when their operands (position by position) are the same: opcode,
// shape with layout, literal, called computations and attributes (metadata aside) agree. Side effects and rng are
// the caller's to exclude. The rule cse merges by; the while-loop simplifier compares loop updates with it.
bool sameValueGivenSameOperands(const HloInstruction& a, const HloInstruction& b);

class CommonSubexpressionElimination : public HloPass {
 public:
  std::string_view name() const override { return "cse"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
