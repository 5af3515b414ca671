#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/dot/dot_graph.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/opcode.h"
#include "core/dot/scope_groups.h"

namespace fusionscope::graphviz {
struct GraphLayout;
}

namespace fusionscope::viewer {

// What part of a stage's entry computation the graph shows: core::DotOptions (the one DOT writer's options) with the
// viewer's defaults. No title (the view draws none), one summary stub for a user's many far operands, and faster
// Graphviz settings for big graphs.
// The number of instructions above which fusions start collapsed (GraphOptions::collapseFusions).
inline constexpr int64_t kCollapseFusionsAbove = 400;

struct GraphOptions : core::DotOptions {
  GraphOptions() {
    showTitle = false;
    maxStubsPerUser = 8;
    fastLayoutAbove = 500;
  }

  // Scope groups (core/dot/scope_groups.h): the entry's instructions drawn inside their op_name scopes, collapsed
  // groups as single nodes, except the groups named in `expandedGroups`. Ignored in neighbourhood mode.
  bool groupScopes = false;
  std::set<std::string> expandedGroups;
  // The scope tree of the document's first stage: every stage of a module grouped by structure keeps its
  // stretches (core::buildScopeTree's `reference`), so a group is the same group at every stage. Null: each stage cuts
  // its own.
  std::shared_ptr<const core::ScopeTree> scopeReference;
  // Stable layout across stages (viewer/stable_layout.h): a stage reached from another keeps the nodes they share
  // where the other drew them. Only the layout service reads it; the graph drawn is the same.
  bool stableLayout = false;

  bool operator==(const GraphOptions&) const = default;
};

struct GraphPoint {
  double x = 0;
  double y = 0;
};

// A drawn box. Scene coordinates: points, origin top-left, y down (flipped from Graphviz).
struct GraphNode {
  enum class Kind { kInstruction, kCollapsedFusion, kStub, kDotNode, kGroup };
  Kind kind = Kind::kInstruction;
  std::string name;         // instruction name (stub: the operand it stands for; group: its scope path)
  std::string computation;  // computation holding the instruction
  std::string opcode;
  core::OpCategory category = core::OpCategory::kOther;
  std::vector<std::string> lines;  // label lines, the first is the name ("ROOT name" for a root)
  bool root = false;
  int cluster = -1;  // innermost enclosing cluster
  // The instruction drawn (a stub: the far operand; a summary stub: its user); null for DOT-only nodes.
  const core::HloInstruction* instruction = nullptr;
  std::string dotName;  // the node's name in the DOT text that was laid out ("n3", "s1")
  // DOT-only nodes: the colours the DOT file gave them (XLA's dumps colour by kind of op); empty otherwise.
  std::string fillColor, borderColor, textColor;
  double x = 0, y = 0, width = 0, height = 0;  // top-left and size, after layout
};

// An expanded fusion: a rounded box around its fused instructions.
struct GraphCluster {
  std::string fusionName;
  std::string computation;
  std::vector<std::string> lines;
  int parent = -1;
  bool root = false;
  const core::HloInstruction* fusion = nullptr;
  std::string group;  // an expanded scope group's path (fusionName is its label then); empty for a fusion
  double x = 0, y = 0, width = 0, height = 0;
};

struct GraphEdge {
  int from = -1;  // node indices
  int to = -1;
  bool control = false;
  bool stub = false;
  int count = 1;                   // operand edges it stands for (edges to and from a collapsed scope group are merged)
  std::vector<GraphPoint> spline;  // cubic B-spline control points (3k+1)
  bool hasArrow = false;
  GraphPoint arrowTip;
};

// A stage's graph as plain data: mapped from core's DotGraph (or from a DOT layout alone), then given positions by
// applyLayout. The Qt items drawing it are made from this model and never own it (KGraphViewer's graph/canvas
// split). Node i is core's node i (DOT name in GraphNode::dotName), cluster c is core's cluster c ("cluster_<c>").
class GraphModel {
 public:
  std::vector<GraphNode> nodes;
  std::vector<GraphCluster> clusters;
  std::vector<GraphEdge> edges;
  std::string dot;    // the DOT text laid out (core::renderDot's, or the .dot file's)
  std::string entry;  // the entry computation's name (empty for DOT-only graphs)
  // Entry instructions hidden in collapsed scope groups -> the group's node (core::DotGraph::heldBy).
  std::unordered_map<std::string, int> heldBy;
  // The drawing's bounding box: (left, top) is 0,0 for a fresh layout; a stable layout (viewer/stable_layout.h)
  // keeps the previous stage's coordinates, so what it adds above or left of them has negative coordinates.
  double left = 0;
  double top = 0;
  double width = 0;
  double height = 0;
  bool laidOut = false;
  // Stable layouts: how many nodes were kept where the graph before drew them; -1 when laid out afresh.
  int pinnedNodes = -1;

  // Index of the node drawing instruction `name` (in `computation`, or the entry when empty); -1 if not drawn.
  int findNode(const std::string& name, const std::string& computation = {}) const;
  // Index of the node drawing collapsed scope group `path`; -1 if it is not drawn.
  int findGroup(const std::string& path) const;
  // Index of the box of expanded scope group `path`; -1 if it is not drawn expanded.
  int findGroupCluster(const std::string& path) const;
  // Index of the collapsed scope group node that holds entry instruction `name` (not drawn itself); -1 if none.
  int findHoldingGroup(const std::string& name) const;
  // Index of the cluster of fusion `name`; -1 if it is not expanded.
  int findCluster(const std::string& name) const;
  // Nodes that stand for instructions (not stubs).
  int instructionNodeCount() const;

  // Lookup tables, rebuilt by index().
  void index();

 private:
  std::unordered_map<std::string, int> m_nodeByKey;
  std::unordered_map<std::string, int> m_clusterByName;
  std::unordered_map<std::string, int> m_groupByPath;
  std::unordered_map<std::string, int> m_groupClusterByPath;
};

// The graph of a core::DotGraph (unlaid; grouped by core::groupByScope or not), and core's DOT text of it for
// Graphviz: the one DOT writer's.
GraphModel buildGraph(const core::DotGraph& graph);
// buildGraph(core::buildDotGraph(module, options)), grouped by scope when options.groupScopes.
GraphModel buildGraph(const core::HloModule& module, const GraphOptions& options);
// Positions nodes, clusters and edges from Graphviz's layout of model.dot.
Status applyLayout(GraphModel& model, const graphviz::GraphLayout& layout);
// buildGraph + Graphviz layout (takes Graphviz's mutex; call it off the GUI thread).
StatusOr<GraphModel> layoutModule(const core::DotGraph& graph);
StatusOr<GraphModel> layoutModule(const core::HloModule& module, const GraphOptions& options);
// A graph straight from DOT text (a .dot file without a module): nodes labelled from their DOT labels.
StatusOr<GraphModel> layoutDotText(const std::string& dot, const std::string& sourceName);

// One palette: core's (XLA's hlo_graph_dumper colours), so the view looks like the dumped DOT.
using core::CategoryColors;
using core::colorsFor;
using core::kClusterBorder;
using core::kClusterFill;
using core::kNestedClusterFill;

// HTML-like label markup ("<b>x</b><br/>add") as plain lines.
std::vector<std::string> htmlLabelLines(const std::string& html);

}  // namespace fusionscope::viewer
