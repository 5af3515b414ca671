#pragma once

// Constant folding for the algebraic simplifier. Elements are evaluated in the element type's own arithmetic, as
// the reference evaluator computes them (core/eval/scalar_ops): integers wrap around at their width, f32 is
// computed in float and f64 in double. Types without such an evaluation here (f16, bf16, f8, complex) are not
// folded, nor is anything whose float inputs or results are not finite, nor integer division by zero.
#include <optional>

#include "core/ir/literal.h"

namespace fusionscope::core {

class HloInstruction;

// The literal of a constant whose values are decoded (not elided `{...}`, not raw text), else null.
const Literal* decodedLiteral(const HloInstruction& inst);

// The value of an elementwise op (or compare, select, clamp, convert) whose operands are all constants, when it
// can be folded.
std::optional<Literal> foldElementwise(const HloInstruction& inst);

// The value of a broadcast, reshape or transpose of a constant, when it can be folded.
std::optional<Literal> foldDataMovement(const HloInstruction& inst);

}  // namespace fusionscope::core
