#pragma once

#include <cstdint>
#include <string>

#include "core/ir/hlo_module.h"

namespace fusionscope::core {

struct DotOptions {
  // Constants with at most this many elements are drawn inside their users' labels, not as nodes.
  int64_t inlineConstantMaxElements = 1;
  // Graph label shown at the top; empty means "MODULE, computation ENTRY".
  std::string title;
};

// Writes the entry computation of `module` as a Graphviz digraph in the look of XLA's hlo_graph_dumper:
// one node per instruction (name, opcode, shape), coloured by category, fusions as clusters holding their
// fused instructions, small constants inlined into their users, operand-index labels on multi-operand
// edges and tooltips with metadata. Deterministic: the same module gives the same bytes.
std::string writeDot(const HloModule& module, const DotOptions& options = {});

}  // namespace fusionscope::core
