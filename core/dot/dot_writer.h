#pragma once

#include <string>

#include "core/dot/dot_graph.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// Renders a DotGraph as a Graphviz digraph in the look of XLA's hlo_graph_dumper: one node per instruction
// (name, opcode, shape), coloured by category, fusions as clusters holding their fused instructions, small
// constants inlined into their users, operand-index labels on multi-operand edges and tooltips with metadata.
// The one HLO -> DOT writer: the CLI, the stage dumps and the viewer (which hands the text to Graphviz) all use
// it. Deterministic: the same graph gives the same bytes.
std::string renderDot(const DotGraph& graph);

// Writes the entry computation of `module`: renderDot(buildDotGraph(module, options)).
std::string writeDot(const HloModule& module, const DotOptions& options = {});

}  // namespace fusionscope::core
