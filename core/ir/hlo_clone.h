#pragma once

#include <memory>
#include <string>

#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// A deep copy of `module`: same names, text order, attributes, literals, control edges and header; called
// computations point into the copy. Used for stage snapshots and by passes that must not touch the input.
std::unique_ptr<HloModule> cloneModule(const HloModule& module);

// A copy of `computation` named `name`, added to `into` (instruction names kept). Called computations are
// shared with the original, not copied.
HloComputation* cloneComputation(const HloComputation& computation, HloModule& into, std::string name);

}  // namespace fusionscope::core
