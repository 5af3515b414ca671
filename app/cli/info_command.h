#pragma once

#include <string>

#include "core/ir/hlo_module.h"

namespace fusionscope::cli {

// The report of `fusionscope-cli info`: computations, instruction counts by opcode, entry parameters and
// outputs with bytes. Text for people, JSON for scripts.
std::string moduleInfoText(const core::HloModule& module);
std::string moduleInfoJson(const core::HloModule& module);

}  // namespace fusionscope::cli
