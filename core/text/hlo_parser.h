#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// Parses XLA's HLO text format as XLA prints it (and as XLA's tests write it by hand): an optional
// `HloModule` header, computations with or without signatures, `ENTRY`, `ROOT` anywhere in a body,
// `%`-prefixed or bare names, operands with or without shapes, comments, constants, and every attribute
// (typed where InstructionAttributes has a field, verbatim otherwise). Operands may be referenced before
// their definition inside a computation; called computations anywhere in the module.
//
// Errors read `FILE:LINE:COL: error: MESSAGE` followed by the offending line and a caret under the column.
// The module is not verified here beyond name resolution; run verifyModule for shape and graph checks.
StatusOr<std::unique_ptr<HloModule>> parseHloModule(std::string_view text, std::string_view fileName = "<text>");

// Reads and parses a file; a missing or unreadable file gives `FILE: error: cannot read: REASON`.
StatusOr<std::unique_ptr<HloModule>> parseHloModuleFile(const std::string& path);

}  // namespace fusionscope::core
