#pragma once

// Where the profiler meets the IR: the one place that turns an HLO module into the profiler's OpAttribution (which
// operations each kernel's instruction performs, with their source lines, scopes and estimated cost). fs_profiler
// itself knows no HLO; the CLI (`stats --by`, `compare --by`) and the viewer ("Where the time goes") both use this.
#include "profiler/compare/time_attribution.h"

namespace fusionscope::core {
class HloModule;
}  // namespace fusionscope::core

namespace fusionscope::profiler {

// Each instruction a kernel can run (every instruction outside fusion computations) and the operations it does: a
// fusion's members (less parameters, tuples and bitcasts, which cost nothing), else itself; each with its op_name,
// source stack and estimated cost. A fusion's member is also found under its own name unless a kernel has it (codegen
// runs a library fusion's dot as the dot).
OpAttribution opAttribution(const core::HloModule& module);

// How attributeTime shares a multi-op kernel with the weights opAttribution gives, in words (for reports).
inline constexpr const char* kOpAttributionModel =
    "a kernel running several operations (a fusion) is shared among them in proportion to each one's estimated "
    "scalar operations (elements computed; x the contraction for dots, x the window for windows)";

}  // namespace fusionscope::profiler
