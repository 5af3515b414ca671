#pragma once

#include <string>

#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// Canonical HLO text in XLA's default style: `%`-prefixed names, operand shapes, computation signatures,
// typed attributes in a fixed order followed by the verbatim ones. parseHloModule(printModule(m)) yields a
// module equal to m (see modulesEqual).
std::string printModule(const HloModule& module);
std::string printComputation(const HloComputation& computation);
// One instruction line without indentation or trailing newline: `%add.1 = f32[2]{0} add(f32[2]{0} %a, ...), ...`.
std::string printInstruction(const HloInstruction& instruction);
// Only the attribute part (`dimensions={0}, to_apply=%add`), without the leading comma.
std::string printAttributes(const HloInstruction& instruction);

}  // namespace fusionscope::core
