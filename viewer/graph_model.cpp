#include "viewer/graph_model.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "core/dot/dot_writer.h"
#include "core/graphviz/graphviz_renderer.h"
#include "core/ir/hlo_computation.h"

namespace fusionscope::viewer {
namespace {

using core::DotNode;
using core::HloInstruction;
using core::HloOpcode;

std::string nodeKey(const std::string& computation, const std::string& name) {
  return computation + '/' + name;
}

std::string computationOf(const HloInstruction& inst) {
  return inst.parent() != nullptr ? inst.parent()->name() : std::string();
}

// Core's label lines with the root marked in the first, as the view draws them.
std::vector<std::string> viewLines(const std::vector<std::string>& lines, bool root) {
  std::vector<std::string> result = lines;
  if (root && !result.empty()) result.front() = "ROOT " + result.front();
  return result;
}

GraphNode viewNode(const core::DotGraph& graph, int index) {
  const DotNode& source = graph.nodes[static_cast<size_t>(index)];
  GraphNode node;
  switch (source.kind) {
    case DotNode::Kind::kInstruction: node.kind = GraphNode::Kind::kInstruction; break;
    case DotNode::Kind::kCollapsedFusion: node.kind = GraphNode::Kind::kCollapsedFusion; break;
    // A copy of a far source is a stub that looks like the source (opcode and colours); clicking it shows the source.
    case DotNode::Kind::kCopy:
    case DotNode::Kind::kStub:
    case DotNode::Kind::kStubSummary: node.kind = GraphNode::Kind::kStub; break;
  }
  const HloInstruction& inst = *source.instruction;
  node.name = inst.name();
  node.computation = computationOf(inst);
  if (!source.isStub()) node.opcode = std::string(inst.opcodeString());
  node.category = source.category;
  node.lines = source.isStub() ? source.lines : viewLines(source.lines, source.root);
  node.root = source.root;
  node.cluster = source.cluster;
  node.instruction = &inst;
  node.dotName = graph.dotName(index);
  return node;
}

int parseId(const std::string& name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  int value = -1;
  auto result = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), value);
  if (result.ec != std::errc() || result.ptr != name.data() + name.size()) return -1;
  return value;
}

std::vector<std::string> plainLabelLines(const std::string& label, const std::string& nodeName) {
  if (label.empty() || label == "\\N") return {nodeName};
  std::vector<std::string> lines;
  std::string current;
  for (size_t i = 0; i < label.size(); ++i) {
    if (label[i] == '\\' && i + 1 < label.size()) {
      char next = label[i + 1];
      if (next == 'n' || next == 'l' || next == 'r') {
        lines.push_back(current);
        current.clear();
        ++i;
        continue;
      }
      if (next == 'N') {
        current += nodeName;
        ++i;
        continue;
      }
    }
    current += label[i];
  }
  if (!current.empty() || lines.empty()) lines.push_back(current);
  return lines;
}

}  // namespace

int GraphModel::findNode(const std::string& name, const std::string& computation) const {
  auto it = m_nodeByKey.find(nodeKey(computation.empty() ? entry : computation, name));
  return it == m_nodeByKey.end() ? -1 : it->second;
}

int GraphModel::findGroup(const std::string& path) const {
  auto it = m_groupByPath.find(path);
  return it == m_groupByPath.end() ? -1 : it->second;
}

int GraphModel::findGroupCluster(const std::string& path) const {
  auto it = m_groupClusterByPath.find(path);
  return it == m_groupClusterByPath.end() ? -1 : it->second;
}

int GraphModel::findHoldingGroup(const std::string& name) const {
  auto it = heldBy.find(name);
  return it == heldBy.end() ? -1 : it->second;
}

int GraphModel::findCluster(const std::string& name) const {
  auto it = m_clusterByName.find(name);
  return it == m_clusterByName.end() ? -1 : it->second;
}

int GraphModel::instructionNodeCount() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(),
                                        [](const GraphNode& node) { return node.kind != GraphNode::Kind::kStub; }));
}

void GraphModel::index() {
  m_nodeByKey.clear();
  m_clusterByName.clear();
  m_groupByPath.clear();
  m_groupClusterByPath.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind == GraphNode::Kind::kStub) continue;
    if (nodes[i].kind == GraphNode::Kind::kGroup) {
      m_groupByPath.emplace(nodes[i].name, static_cast<int>(i));
      continue;
    }
    m_nodeByKey.emplace(nodeKey(nodes[i].computation, nodes[i].name), static_cast<int>(i));
  }
  for (size_t i = 0; i < clusters.size(); ++i) {
    if (clusters[i].group.empty()) {
      m_clusterByName.emplace(clusters[i].fusionName, static_cast<int>(i));
    } else {
      m_groupClusterByPath.emplace(clusters[i].group, static_cast<int>(i));
    }
  }
}

GraphModel buildGraph(const core::DotGraph& graph) {
  GraphModel model;
  if (graph.module != nullptr && graph.module->entry() != nullptr) model.entry = graph.module->entry()->name();
  model.nodes.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) model.nodes.push_back(viewNode(graph, static_cast<int>(i)));
  for (const core::DotCluster& source : graph.clusters) {
    GraphCluster box;
    box.fusionName = source.fusion->name();
    box.computation = computationOf(*source.fusion);
    box.lines = viewLines(source.lines, source.root);
    box.parent = source.parent;
    box.root = source.root;
    box.fusion = source.fusion;
    model.clusters.push_back(std::move(box));
  }
  model.edges.reserve(graph.edges.size());
  for (const core::DotEdge& edge : graph.edges) {
    model.edges.push_back(GraphEdge{edge.from, edge.to, edge.control, edge.stub, 1, {}, false, {}});
  }
  model.index();
  model.dot = core::renderDot(graph);
  return model;
}

namespace {

void appendEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
}

std::string hexColor(uint32_t value) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%06x", value & 0xffffffu);
  return buffer;
}

// A group's three most frequent op categories, leaving out parameters and constants while it has other work.
std::vector<std::pair<core::OpCategory, int>> mainCategories(const ScopeGroup& group) {
  std::vector<std::pair<core::OpCategory, int>> result;
  for (const auto& entry : group.categories) {
    if (entry.first != core::OpCategory::kParameter && entry.first != core::OpCategory::kConstant)
      result.push_back(entry);
  }
  if (result.empty()) result = group.categories;
  if (result.size() > 3) result.resize(3);
  return result;
}

// The label lines of a collapsed scope group.
std::vector<std::string> groupLines(const ScopeGroup& group) {
  std::vector<std::string> lines{group.label};
  std::string count =
      std::to_string(group.instructionCount) + (group.instructionCount == 1 ? " instruction" : " instructions");
  if (!group.detail.empty()) count += "  " + group.detail;
  lines.push_back(count);
  std::string categories;
  for (const auto& [category, count] : mainCategories(group)) {
    if (!categories.empty()) categories += " \u00b7 ";
    categories += std::string(core::categoryName(category)) + " " + std::to_string(count);
  }
  if (!categories.empty()) lines.push_back(categories);
  return lines;
}

// DOT for a grouped graph: node i is "n<i>", cluster c is "cluster_<c>", as applyLayout reads them.
class GroupedDotWriter {
 public:
  GroupedDotWriter(const GraphModel& model, const std::vector<std::pair<int, int>>& clip, bool fast)
      : m_model(model), m_clip(clip), m_fast(fast) {
    m_childClusters.resize(model.clusters.size() + 1);
    m_scopeNodes.resize(model.clusters.size() + 1);
    for (size_t c = 0; c < model.clusters.size(); ++c)
      m_childClusters[static_cast<size_t>(model.clusters[c].parent + 1)].push_back(static_cast<int>(c));
    for (size_t i = 0; i < model.nodes.size(); ++i)
      m_scopeNodes[static_cast<size_t>(model.nodes[i].cluster + 1)].push_back(static_cast<int>(i));
  }

  std::string write() {
    m_out.reserve(m_model.nodes.size() * 200 + m_model.edges.size() * 60 + 512);
    m_out += "digraph G {\n  graph [rankdir=TB compound=true fontname=\"Helvetica\"";
    if (m_fast) m_out += " newrank=true nslimit=0.2 nslimit1=0.2 mclimit=0.5";
    m_out += "];\n";
    m_out += "  node [shape=rect style=\"rounded,filled\" fontname=\"Helvetica\" fontsize=11 margin=\"0.12,0.05\"];\n";
    m_out += "  edge [color=\"#616161\" arrowsize=0.7];\n";
    scope(-1);
    for (size_t e = 0; e < m_model.edges.size(); ++e) {
      const GraphEdge& edge = m_model.edges[e];
      m_out += "  n" + std::to_string(edge.from) + " -> n" + std::to_string(edge.to);
      std::string attributes;
      if (edge.control || edge.stub) attributes += " style=dashed";
      if (edge.count > 1)
        attributes += " penwidth=" + std::to_string(std::min(4, 1 + static_cast<int>(std::log2(edge.count))));
      if (m_clip[e].first >= 0) attributes += " ltail=cluster_" + std::to_string(m_clip[e].first);
      if (m_clip[e].second >= 0) attributes += " lhead=cluster_" + std::to_string(m_clip[e].second);
      if (!attributes.empty()) m_out += " [" + attributes.substr(1) + "]";
      m_out += ";\n";
    }
    m_out += "}\n";
    return std::move(m_out);
  }

 private:
  void scope(int cluster) {
    for (int child : m_childClusters[static_cast<size_t>(cluster + 1)]) {
      const GraphCluster& box = m_model.clusters[static_cast<size_t>(child)];
      m_out += "subgraph cluster_" + std::to_string(child) + " {\n  label=<";
      label(box.lines);
      m_out += ">; labeljust=l; fontname=\"Helvetica\"; fontsize=11; style=\"rounded,filled\"; fillcolor=\"" +
               hexColor(box.group.empty() ? kClusterFill : 0xfafafa) + "\"; color=\"" + hexColor(kClusterBorder) +
               "\";\n";
      scope(child);
      m_out += "}\n";
    }
    for (int index : m_scopeNodes[static_cast<size_t>(cluster + 1)]) {
      const GraphNode& node = m_model.nodes[static_cast<size_t>(index)];
      m_out += "  n" + std::to_string(index) + " [label=<";
      label(node.lines);
      m_out += '>';
      if (node.kind == GraphNode::Kind::kGroup) m_out += " margin=\"0.25,0.12\" penwidth=2";
      if (node.kind == GraphNode::Kind::kStub) m_out += " fontsize=9 style=\"dashed,rounded\"";
      if (node.opcode == "constant") m_out += " fontsize=9";
      m_out += "];\n";
    }
  }

  void label(const std::vector<std::string>& lines) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) m_out += "<br/>";
      if (i == 0) m_out += "<b>";
      appendEscaped(m_out, lines[i]);
      if (i == 0) m_out += "</b>";
    }
  }

  const GraphModel& m_model;
  const std::vector<std::pair<int, int>>& m_clip;
  bool m_fast;
  std::vector<std::vector<int>> m_childClusters;
  std::vector<std::vector<int>> m_scopeNodes;
  std::string m_out;
};

}  // namespace

GraphModel buildGroupedGraph(const core::DotGraph& graph, const ScopeTree& tree,
                             const std::set<std::string>& expanded) {
  GraphModel model;
  if (graph.module != nullptr && graph.module->entry() != nullptr) model.entry = graph.module->entry()->name();
  const size_t n = graph.nodes.size();
  // The entry instruction each node belongs to: itself, or the outermost fusion around it.
  auto entryInstruction = [&](const DotNode& node) {
    if (node.cluster < 0) return node.instruction;
    int top = node.cluster;
    while (graph.clusters[static_cast<size_t>(top)].parent >= 0) top = graph.clusters[static_cast<size_t>(top)].parent;
    return graph.clusters[static_cast<size_t>(top)].fusion;
  };
  std::vector<int> stubUser(n, -1);
  for (const core::DotEdge& edge : graph.edges) {
    if (graph.nodes[static_cast<size_t>(edge.from)].kind == DotNode::Kind::kCopy ||
        graph.nodes[static_cast<size_t>(edge.from)].isStub())
      stubUser[static_cast<size_t>(edge.from)] = edge.to;
  }
  // Group clusters: every expanded group whose ancestors are all expanded.
  std::vector<int> groupCluster(tree.groups.size(), -1);
  for (size_t g = 0; g < tree.groups.size(); ++g) {
    const ScopeGroup& group = tree.groups[g];
    if (expanded.count(group.path) == 0) continue;
    if (group.parent >= 0 && groupCluster[static_cast<size_t>(group.parent)] < 0) continue;  // parents come first
    GraphCluster box;
    box.fusionName = group.label;
    box.group = group.path;
    box.lines = {group.label + "  (" + std::to_string(group.instructionCount) + ")"};
    box.parent = group.parent >= 0 ? groupCluster[static_cast<size_t>(group.parent)] : -1;
    groupCluster[g] = static_cast<int>(model.clusters.size());
    model.clusters.push_back(std::move(box));
  }
  auto clusterOfGroup = [&](int group) { return group >= 0 ? groupCluster[static_cast<size_t>(group)] : -1; };
  auto innermostGroup = [&](const HloInstruction* inst) {
    auto found = tree.groupOf.find(inst);
    return found == tree.groupOf.end() ? -1 : found->second;
  };
  // Fusion clusters whose fusion is drawn.
  std::vector<int> fusionCluster(graph.clusters.size(), -1);
  for (size_t c = 0; c < graph.clusters.size(); ++c) {
    const core::DotCluster& source = graph.clusters[c];
    int parent = source.parent;
    const HloInstruction* top = source.fusion;
    while (parent >= 0) {
      top = graph.clusters[static_cast<size_t>(parent)].fusion;
      parent = graph.clusters[static_cast<size_t>(parent)].parent;
    }
    if (tree.representative(top, expanded) >= 0) continue;
    GraphCluster box;
    box.fusionName = source.fusion->name();
    box.computation = computationOf(*source.fusion);
    box.lines = viewLines(source.lines, source.root);
    box.root = source.root;
    box.fusion = source.fusion;
    box.parent = source.parent >= 0 ? fusionCluster[static_cast<size_t>(source.parent)]
                                    : clusterOfGroup(innermostGroup(source.fusion));
    fusionCluster[c] = static_cast<int>(model.clusters.size());
    model.clusters.push_back(std::move(box));
  }
  // Nodes: drawn instructions, then stubs of drawn users; a collapsed group's node when first needed.
  std::vector<int> mapped(n, -1);
  std::vector<int> groupNode(tree.groups.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    const DotNode& source = graph.nodes[i];
    if (source.kind == DotNode::Kind::kCopy || source.isStub()) continue;
    const HloInstruction* top = entryInstruction(source);
    int shown = tree.representative(top, expanded);
    if (shown < 0) {
      GraphNode node = viewNode(graph, static_cast<int>(i));
      node.cluster = source.cluster >= 0 ? fusionCluster[static_cast<size_t>(source.cluster)]
                                         : clusterOfGroup(innermostGroup(top));
      mapped[i] = static_cast<int>(model.nodes.size());
      node.dotName = "n" + std::to_string(mapped[i]);
      model.nodes.push_back(std::move(node));
      continue;
    }
    if (groupNode[static_cast<size_t>(shown)] < 0) {
      const ScopeGroup& group = tree.groups[static_cast<size_t>(shown)];
      GraphNode node;
      node.kind = GraphNode::Kind::kGroup;
      node.name = group.path;
      node.computation = model.entry;
      auto main = mainCategories(group);
      node.category = main.empty() ? core::OpCategory::kOther : main.front().first;
      node.lines = groupLines(group);
      node.cluster = clusterOfGroup(group.parent);
      groupNode[static_cast<size_t>(shown)] = static_cast<int>(model.nodes.size());
      node.dotName = "n" + std::to_string(model.nodes.size());
      model.nodes.push_back(std::move(node));
    }
    mapped[i] = groupNode[static_cast<size_t>(shown)];
    if (source.cluster < 0) model.heldBy.emplace(top->name(), mapped[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    const DotNode& source = graph.nodes[i];
    if (source.kind != DotNode::Kind::kCopy && !source.isStub()) continue;
    int user = stubUser[i];
    if (user < 0 || mapped[static_cast<size_t>(user)] < 0) continue;
    const GraphNode& userNode = model.nodes[static_cast<size_t>(mapped[static_cast<size_t>(user)])];
    if (userNode.kind == GraphNode::Kind::kGroup) continue;  // the group's merged edges stand for it
    GraphNode node = viewNode(graph, static_cast<int>(i));
    node.cluster = userNode.cluster;
    mapped[i] = static_cast<int>(model.nodes.size());
    node.dotName = "n" + std::to_string(mapped[i]);
    model.nodes.push_back(std::move(node));
  }
  // Edges: kept as they are between drawn instructions, merged (one per pair, counted) when a group is involved.
  std::vector<std::pair<int, int>> clip;
  std::map<std::pair<int, int>, std::pair<int, bool>> merged;  // -> (count, all control)
  std::vector<std::pair<int, int>> mergedOrder;
  for (const core::DotEdge& edge : graph.edges) {
    int from = mapped[static_cast<size_t>(edge.from)];
    int to = mapped[static_cast<size_t>(edge.to)];
    if (from < 0 || to < 0 || from == to) continue;
    bool grouped = model.nodes[static_cast<size_t>(from)].kind == GraphNode::Kind::kGroup ||
                   model.nodes[static_cast<size_t>(to)].kind == GraphNode::Kind::kGroup;
    if (!grouped) {
      model.edges.push_back(GraphEdge{from, to, edge.control, edge.stub, 1, {}, false, {}});
      clip.emplace_back(edge.ltail >= 0 ? fusionCluster[static_cast<size_t>(edge.ltail)] : -1,
                        edge.lhead >= 0 ? fusionCluster[static_cast<size_t>(edge.lhead)] : -1);
      continue;
    }
    auto [it, inserted] = merged.try_emplace({from, to}, 0, true);
    if (inserted) mergedOrder.emplace_back(from, to);
    ++it->second.first;
    it->second.second = it->second.second && edge.control;
  }
  for (const auto& pair : mergedOrder) {
    const auto& [count, control] = merged[pair];
    model.edges.push_back(GraphEdge{pair.first, pair.second, control, false, count, {}, false, {}});
    clip.emplace_back(-1, -1);
  }
  model.index();
  model.dot = GroupedDotWriter(model, clip, model.nodes.size() > 500).write();
  return model;
}

namespace {

bool grouping(const core::HloModule& module, const GraphOptions& options) {
  return options.groupScopes && options.focus.empty() && module.entry() != nullptr;
}

// The DOT graph a grouped view is made from. Its nodes stand for instructions, not groups, so long edges are cut
// into stubs only when the grouped view is still big: edges into a collapsed group must reach it whole.
core::DotGraph groupedDotGraph(const core::HloModule& module, const GraphOptions& options, const ScopeTree& tree) {
  core::DotOptions dotOptions = options;
  if (tree.visibleCount(options.expandedGroups) <= options.longEdgeMinInstructions * 2)
    dotOptions.longEdgeMinInstructions = INT64_MAX;
  return core::buildDotGraph(module, dotOptions);
}

}  // namespace

GraphModel buildGraph(const core::HloModule& module, const GraphOptions& options) {
  if (grouping(module, options)) {
    ScopeTree tree = buildScopeTree(*module.entry(), options.scopeReference.get());
    return buildGroupedGraph(groupedDotGraph(module, options, tree), tree, options.expandedGroups);
  }
  return buildGraph(core::buildDotGraph(module, options));
}

Status applyLayout(GraphModel& model, const graphviz::GraphLayout& layout) {
  double left = layout.lowerLeft.x;
  double top = layout.upperRight.y;
  auto flip = [&](const graphviz::PointF& p) { return GraphPoint{p.x - left, top - p.y}; };
  model.width = layout.upperRight.x - layout.lowerLeft.x;
  model.height = layout.upperRight.y - layout.lowerLeft.y;
  std::unordered_map<std::string, int> idOf;
  idOf.reserve(model.nodes.size());
  for (size_t i = 0; i < model.nodes.size(); ++i) idOf.emplace(model.nodes[i].dotName, static_cast<int>(i));
  auto nodeId = [&](const std::string& name) {
    auto it = idOf.find(name);
    return it == idOf.end() ? -1 : it->second;
  };
  for (const graphviz::NodeLayout& node : layout.nodes) {
    int id = nodeId(node.name);
    if (id < 0) return Status::error("layout names an unknown node '" + node.name + "'");
    GraphNode& target = model.nodes[static_cast<size_t>(id)];
    GraphPoint center = flip(node.center);
    target.x = center.x - node.width / 2;
    target.y = center.y - node.height / 2;
    target.width = node.width;
    target.height = node.height;
  }
  for (const graphviz::ClusterLayout& cluster : layout.clusters) {
    int id = parseId(cluster.name, "cluster_");
    if (id < 0 || static_cast<size_t>(id) >= model.clusters.size()) continue;
    GraphCluster& box = model.clusters[static_cast<size_t>(id)];
    GraphPoint topLeft = flip({cluster.lowerLeft.x, cluster.upperRight.y});
    box.x = topLeft.x;
    box.y = topLeft.y;
    box.width = cluster.upperRight.x - cluster.lowerLeft.x;
    box.height = cluster.upperRight.y - cluster.lowerLeft.y;
  }
  std::set<std::pair<int, int>> control;
  std::map<std::pair<int, int>, int> counts;
  for (const GraphEdge& edge : model.edges) {
    if (edge.control) control.emplace(edge.from, edge.to);
    if (edge.count != 1) counts[{edge.from, edge.to}] = edge.count;
  }
  std::vector<GraphEdge> edges;
  edges.reserve(layout.edges.size());
  for (const graphviz::EdgeLayout& edge : layout.edges) {
    GraphEdge drawn;
    drawn.from = nodeId(edge.tail);
    drawn.to = nodeId(edge.head);
    if (drawn.from < 0 || drawn.to < 0) continue;
    drawn.control = control.count({drawn.from, drawn.to}) > 0;
    drawn.stub = model.nodes[static_cast<size_t>(drawn.from)].kind == GraphNode::Kind::kStub;
    if (auto count = counts.find({drawn.from, drawn.to}); count != counts.end()) drawn.count = count->second;
    for (const graphviz::PointF& p : edge.controlPoints) drawn.spline.push_back(flip(p));
    drawn.hasArrow = edge.hasArrowHead;
    if (edge.hasArrowHead) drawn.arrowTip = flip(edge.arrowHead);
    edges.push_back(std::move(drawn));
  }
  model.edges = std::move(edges);
  model.laidOut = true;
  return okStatus();
}

StatusOr<GraphModel> layoutModule(const core::DotGraph& graph) {
  GraphModel model = buildGraph(graph);
  std::string source = (graph.module != nullptr ? graph.module->name() : std::string("graph")) + ".dot";
  StatusOr<graphviz::GraphLayout> layout = graphviz::layoutDot(model.dot, source);
  if (!layout.ok()) return layout.status();
  FS_RETURN_IF_ERROR(applyLayout(model, *layout));
  return model;
}

StatusOr<GraphModel> layoutModule(const core::HloModule& module, const GraphOptions& options) {
  if (!grouping(module, options)) return layoutModule(core::buildDotGraph(module, options));
  ScopeTree tree = buildScopeTree(*module.entry(), options.scopeReference.get());
  core::DotGraph graph = groupedDotGraph(module, options, tree);
  GraphModel model = buildGroupedGraph(graph, tree, options.expandedGroups);
  StatusOr<graphviz::GraphLayout> layout = graphviz::layoutDot(model.dot, module.name() + ".dot");
  if (!layout.ok()) return layout.status();
  FS_RETURN_IF_ERROR(applyLayout(model, *layout));
  return model;
}

StatusOr<GraphModel> layoutDotText(const std::string& dot, const std::string& sourceName) {
  StatusOr<graphviz::GraphLayout> layout = graphviz::layoutDot(dot, sourceName);
  if (!layout.ok()) return layout.status();
  GraphModel model;
  std::unordered_map<std::string, int> idOf;
  double left = layout->lowerLeft.x;
  double top = layout->upperRight.y;
  auto flip = [&](const graphviz::PointF& p) { return GraphPoint{p.x - left, top - p.y}; };
  model.width = layout->upperRight.x - layout->lowerLeft.x;
  model.height = layout->upperRight.y - layout->lowerLeft.y;
  for (const graphviz::ClusterLayout& cluster : layout->clusters) {
    GraphCluster box;
    box.lines = cluster.labelIsHtml ? htmlLabelLines(cluster.label) : plainLabelLines(cluster.label, cluster.name);
    box.fusionName = box.lines.empty() ? cluster.name : box.lines.front();
    GraphPoint topLeft = flip({cluster.lowerLeft.x, cluster.upperRight.y});
    box.x = topLeft.x;
    box.y = topLeft.y;
    box.width = cluster.upperRight.x - cluster.lowerLeft.x;
    box.height = cluster.upperRight.y - cluster.lowerLeft.y;
    model.clusters.push_back(std::move(box));
  }
  for (const graphviz::NodeLayout& node : layout->nodes) {
    GraphNode drawn;
    drawn.kind = GraphNode::Kind::kDotNode;
    drawn.dotName = node.name;
    drawn.lines = node.labelIsHtml ? htmlLabelLines(node.label) : plainLabelLines(node.label, node.name);
    std::string first = drawn.lines.empty() ? node.name : drawn.lines.front();
    if (first.rfind("ROOT ", 0) == 0) {
      first = first.substr(5);
      drawn.root = true;
    }
    drawn.name = first.empty() ? node.name : first;
    drawn.fillColor = node.fillColor;
    drawn.borderColor = node.color;
    drawn.textColor = node.fontColor;
    if (drawn.lines.size() > 1) {
      std::string opcode = drawn.lines[1].substr(0, drawn.lines[1].find(' '));
      HloOpcode parsed = core::parseOpcode(opcode);
      if (parsed != HloOpcode::kUnknown) {
        drawn.opcode = opcode;
        drawn.category = core::opcodeCategory(parsed);
      }
    }
    GraphPoint center = flip(node.center);
    drawn.x = center.x - node.width / 2;
    drawn.y = center.y - node.height / 2;
    drawn.width = node.width;
    drawn.height = node.height;
    // Innermost (smallest) cluster holding the node's centre.
    double best = -1;
    for (size_t c = 0; c < model.clusters.size(); ++c) {
      const GraphCluster& box = model.clusters[c];
      if (center.x >= box.x && center.x <= box.x + box.width && center.y >= box.y && center.y <= box.y + box.height) {
        double area = box.width * box.height;
        if (best < 0 || area < best) {
          best = area;
          drawn.cluster = static_cast<int>(c);
        }
      }
    }
    idOf.emplace(node.name, static_cast<int>(model.nodes.size()));
    model.nodes.push_back(std::move(drawn));
  }
  for (const graphviz::EdgeLayout& edge : layout->edges) {
    auto tail = idOf.find(edge.tail);
    auto head = idOf.find(edge.head);
    if (tail == idOf.end() || head == idOf.end()) continue;
    GraphEdge drawn;
    drawn.from = tail->second;
    drawn.to = head->second;
    for (const graphviz::PointF& p : edge.controlPoints) drawn.spline.push_back(flip(p));
    drawn.hasArrow = edge.hasArrowHead;
    if (edge.hasArrowHead) drawn.arrowTip = flip(edge.arrowHead);
    model.edges.push_back(std::move(drawn));
  }
  model.dot = dot;
  model.laidOut = true;
  model.index();
  return model;
}

std::vector<std::string> htmlLabelLines(const std::string& html) {
  std::vector<std::string> lines;
  std::string current;
  size_t i = 0;
  while (i < html.size()) {
    char c = html[i];
    if (c == '<') {
      size_t end = html.find('>', i);
      if (end == std::string::npos) break;
      std::string tag = html.substr(i + 1, end - i - 1);
      std::transform(tag.begin(), tag.end(), tag.begin(), ::tolower);
      if (tag.rfind("br", 0) == 0 || tag == "/tr") {
        lines.push_back(current);
        current.clear();
      }
      i = end + 1;
      continue;
    }
    if (c == '&') {
      size_t end = html.find(';', i);
      if (end != std::string::npos && end - i <= 6) {
        std::string entity = html.substr(i + 1, end - i - 1);
        if (entity == "amp")
          current += '&';
        else if (entity == "lt")
          current += '<';
        else if (entity == "gt")
          current += '>';
        else if (entity == "quot")
          current += '"';
        else if (entity == "apos")
          current += '\'';
        else if (entity == "nbsp")
          current += ' ';
        else
          current += html.substr(i, end - i + 1);
        i = end + 1;
        continue;
      }
    }
    current += c;
    ++i;
  }
  if (!current.empty()) lines.push_back(current);
  lines.erase(std::remove_if(lines.begin(), lines.end(), [](const std::string& line) { return line.empty(); }),
              lines.end());
  return lines;
}

}  // namespace fusionscope::viewer
