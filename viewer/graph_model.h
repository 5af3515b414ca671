#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/opcode.h"

namespace fusionscope::graphviz {
struct GraphLayout;
}

namespace fusionscope::viewer {

// What part of a stage's entry computation the graph shows.
struct GraphOptions {
  // Fusions are drawn as single nodes, except those named in `expanded`; otherwise as clusters of their fused
  // instructions, except those named in `collapsed`.
  bool collapseFusions = false;
  std::set<std::string> expanded;
  std::set<std::string> collapsed;
  // Neighbourhood mode: only instructions within `hops` operand/user steps of `focus` (an entry instruction).
  std::string focus;
  int hops = 2;
  // As core::DotOptions: in graphs with more than `longEdgeMinInstructions` nodes an edge spanning more than
  // `maxEdgeSpan` ranks becomes a short "from NAME" stub next to its user (dot's crossing minimisation takes
  // minutes on long edges, and they are unreadable anyway).
  int longEdgeMinInstructions = 200;
  int maxEdgeSpan = 12;
  // Above this many nodes Graphviz is told to trade some straightness for speed (newrank, bounded network-simplex
  // and crossing-minimisation iterations): mobilenet's 4k-node stage 0 goes from ~2 s to ~0.6 s of layout.
  int fastLayoutAbove = 500;
  // Constants with at most this many elements are shown inside their users' labels, as the DOT writer does.
  int64_t inlineConstantMaxElements = 1;

  bool operator==(const GraphOptions&) const = default;
};

struct GraphPoint {
  double x = 0;
  double y = 0;
};

// A drawn box. Scene coordinates: points, origin top-left, y down (flipped from Graphviz).
struct GraphNode {
  enum class Kind { kInstruction, kCollapsedFusion, kStub, kDotNode };
  Kind kind = Kind::kInstruction;
  std::string name;         // instruction name (stub: the operand it stands for)
  std::string computation;  // computation holding the instruction
  std::string opcode;
  core::OpCategory category = core::OpCategory::kOther;
  std::vector<std::string> lines;  // label lines, the first is the name
  bool root = false;
  int cluster = -1;                                   // innermost enclosing cluster
  const core::HloInstruction* instruction = nullptr;  // null for stubs and DOT-only nodes
  // DOT-only nodes: the colours the DOT file gave them (XLA's dumps colour by kind of op); empty otherwise.
  std::string fillColor, borderColor, textColor;
  double x = 0, y = 0, width = 0, height = 0;         // top-left and size, after layout
};

// An expanded fusion: a rounded box around its fused instructions.
struct GraphCluster {
  std::string fusionName;
  std::string computation;
  std::vector<std::string> lines;
  int parent = -1;
  bool root = false;
  const core::HloInstruction* fusion = nullptr;
  double x = 0, y = 0, width = 0, height = 0;
};

struct GraphEdge {
  int from = -1;  // node indices
  int to = -1;
  bool control = false;
  bool stub = false;
  std::vector<GraphPoint> spline;  // cubic B-spline control points (3k+1)
  bool hasArrow = false;
  GraphPoint arrowTip;
};

// A stage's graph as plain data: built from a module (or a DOT layout alone), written as DOT for Graphviz, then
// given positions by applyLayout. The Qt items drawing it are made from this model and never own it
// (KGraphViewer's graph/canvas split). Node i is DOT node "n<i>", cluster c is "cluster_<c>".
class GraphModel {
 public:
  std::vector<GraphNode> nodes;
  std::vector<GraphCluster> clusters;
  std::vector<GraphEdge> edges;
  std::string dot;
  std::string entry;  // the entry computation's name (empty for DOT-only graphs)
  double width = 0;
  double height = 0;
  bool laidOut = false;

  // Index of the node drawing instruction `name` (in `computation`, or the entry when empty); -1 if not drawn.
  int findNode(const std::string& name, const std::string& computation = {}) const;
  // Index of the cluster of fusion `name`; -1 if it is not expanded.
  int findCluster(const std::string& name) const;
  // Nodes that stand for instructions (not stubs).
  int instructionNodeCount() const;

  // Lookup tables, rebuilt by index().
  void index();

 private:
  std::unordered_map<std::string, int> m_nodeByKey;
  std::unordered_map<std::string, int> m_clusterByName;
};

// Builds the graph of `module`'s entry computation (unlaid) and its DOT text.
GraphModel buildGraph(const core::HloModule& module, const GraphOptions& options);
// Positions nodes, clusters and edges from Graphviz's layout of model.dot.
Status applyLayout(GraphModel& model, const graphviz::GraphLayout& layout);
// buildGraph + Graphviz layout (takes Graphviz's mutex; call it off the GUI thread).
StatusOr<GraphModel> layoutModule(const core::HloModule& module, const GraphOptions& options);
// A graph straight from DOT text (a .dot file without a module): nodes labelled from their DOT labels.
StatusOr<GraphModel> layoutDotText(const std::string& dot, const std::string& sourceName);

// Fill, border and text colours (0xRRGGBB) of a category: the palette of core/dot/dot_writer.cpp (XLA's
// hlo_graph_dumper), so the view looks like the dumped DOT.
struct CategoryColors {
  uint32_t fill;
  uint32_t border;
  uint32_t text;
};
CategoryColors colorsFor(core::OpCategory category);
inline constexpr uint32_t kClusterFill = 0xf5f5f5;
inline constexpr uint32_t kNestedClusterFill = 0xeceff1;
inline constexpr uint32_t kClusterBorder = 0x9ea7aa;

// HTML-like label markup ("<b>x</b><br/>add") as plain lines.
std::vector<std::string> htmlLabelLines(const std::string& html);

}  // namespace fusionscope::viewer
