#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// Checks a module's invariants: every computation has a root and no cycles (operands are defined before
// their uses in post order), parameters are numbered 0..n-1 once each, called computations take the
// right number of parameters, and result shapes follow XLA's rules for the opcodes whose rules we
// implement (elementwise, broadcast, reshape, transpose, reduce, dot, slice, concatenate, tuple,
// get-tuple-element, convert, compare, select, clamp). Layouts are not checked. Unknown opcodes and the
// rest are accepted as they are.
//
// Returns every problem found (up to a limit), each naming the computation and instruction, e.g.
// `computation main, %add.3: operand 1 has shape f32[3] but the result is f32[2]`.
std::vector<std::string> verifyModuleProblems(const HloModule& module);

// verifyModuleProblems folded into one Status (`verifier: ...` lines).
Status verifyModule(const HloModule& module);

}  // namespace fusionscope::core
