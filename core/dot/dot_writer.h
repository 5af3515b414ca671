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
  // In computations with more than `longEdgeMinInstructions` instructions, an edge that must span more
  // than `maxEdgeSpan` ranks is drawn as a short stub ("from NAME") next to its user. Training graphs
  // keep forward activations for the backward pass; left whole, those long edges make Graphviz's
  // crossing minimisation take minutes (mobilenet: > 5 min, with stubs 1.5 s) and are unreadable anyway.
  int64_t longEdgeMinInstructions = 200;
  int maxEdgeSpan = 12;
};

// Writes the entry computation of `module` as a Graphviz digraph in the look of XLA's hlo_graph_dumper:
// one node per instruction (name, opcode, shape), coloured by category, fusions as clusters holding their
// fused instructions, small constants inlined into their users, operand-index labels on multi-operand
// edges and tooltips with metadata. Deterministic: the same module gives the same bytes.
std::string writeDot(const HloModule& module, const DotOptions& options = {});

}  // namespace fusionscope::core
