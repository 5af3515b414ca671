#pragma once

#include <string>

#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// Structural equality of two modules: name, header attributes, computations in order (name, entry flag,
// root), and for every instruction its name, opcode, shape with layout, operands and control predecessors
// (by name), parameter number, literal, called computations (by name) and all attributes. Used by the
// round-trip tests. On a difference, `difference` (if given) says where.
bool modulesEqual(const HloModule& a, const HloModule& b, std::string* difference = nullptr);

}  // namespace fusionscope::core
