#pragma once

#include <string>

#include "core/base/status.h"
#include "viewer/graph_model.h"

namespace fusionscope::core {
class HloModule;
}

namespace fusionscope::viewer {

// Stable layout across stages (the iongraph viewer's behaviour for compiler passes): a stage's graph laid out so
// that every node the graph shown before it also drew (same instruction in the same computation, same scope
// group, same far-operand stub of the same user) stays exactly where it was, and only what the stage added is
// placed anew. A step costs what it changed, not the size of the graph: Graphviz's `dot` lays out only the nodes
// the stage added or relabelled, with their neighbours (a kept node whose label changed is resized around its
// centre); an added node keeps its place relative to its kept neighbours in that small layout (moved by their
// shift, then to the right until it overlaps nothing). Edges whose two ends were kept at the same size and were
// joined before keep their old spline; the others are routed by Graphviz's pinned engine (`neato -n2`) around the
// nodes on graphs of up to kRoutedEdgesMaxNodes nodes when there are at most kRoutedEdgesPerStep of them, and
// drawn straight otherwise (what that engine draws on big graphs too). A stage that changed nothing drawn costs no Graphviz call. Expanded fusions and groups are boxed
// around what they hold.
//
// When the stage replaced too much (fewer than kStableKeepFraction of either graph's nodes kept, e.g. the fusion
// pass with fusions drawn expanded) the stage gets a fresh `dot` layout instead: pinning a few survivors would
// scatter the many new nodes around them. GraphModel::pinnedNodes says which happened.

// The least fraction of nodes, of the new graph and of the graph before, that must be kept for a pinned layout.
inline constexpr double kStableKeepFraction = 0.5;
// Up to this many nodes Graphviz routes new edges around the nodes (splines=true); above it they are drawn
// straight: the obstacle router takes minutes on a 2,000-node graph.
inline constexpr int kRoutedEdgesMaxNodes = 400;
// A step routes at most this many edges around the nodes; more are drawn straight. Graphviz's router costs about
// 3 ms per edge on a dense grouped graph (mobilenet's 48 stretches, 250 edges: 0.6 s to route them all), and a step
// should take well under the 300 ms a reader notices.
inline constexpr int kRoutedEdgesPerStep = 64;

// What identifies a node across stages: "i:" computation/name for instructions and collapsed fusions, "g:" path for
// scope groups, "s:" operand ">" user for far-operand stubs; empty for nodes with no identity (DOT-only graphs).
std::string stableIdentity(const GraphModel& model, int node);

// `module` laid out with `options`, pinned to `base` (the graph shown before, of another stage) as described above,
// or afresh when too little of `base` survives.
StatusOr<GraphModel> layoutModuleStable(const core::HloModule& module, const GraphOptions& options,
                                        const GraphModel& base);

}  // namespace fusionscope::viewer
