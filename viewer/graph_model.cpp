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
    case DotNode::Kind::kGroup: {
      // A collapsed scope group: named by its path, in the entry computation.
      node.kind = GraphNode::Kind::kGroup;
      node.name = source.group;
      if (graph.module != nullptr && graph.module->entry() != nullptr) node.computation = graph.module->entry()->name();
      node.category = source.category;
      node.lines = source.lines;
      node.cluster = source.cluster;
      node.dotName = graph.dotName(index);
      return node;
    }
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
    if (source.fusion == nullptr) {  // an expanded scope group
      box.fusionName = source.groupLabel;
      box.group = source.group;
      box.lines = source.lines;
      box.parent = source.parent;
      model.clusters.push_back(std::move(box));
      continue;
    }
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
    model.edges.push_back(GraphEdge{edge.from, edge.to, edge.control, edge.stub, edge.count, {}, false, {}});
  }
  model.heldBy = graph.heldBy;
  model.index();
  model.dot = core::renderDot(graph);
  return model;
}

namespace {

bool grouping(const core::HloModule& module, const GraphOptions& options) {
  return options.groupScopes && options.focus.empty() && module.entry() != nullptr;
}

}  // namespace

GraphModel buildGraph(const core::HloModule& module, const GraphOptions& options) {
  if (grouping(module, options)) {
    core::ScopeTree tree = core::buildScopeTree(*module.entry(), options.scopeReference.get());
    return buildGraph(core::buildGroupedDotGraph(module, options, tree, options.expandedGroups));
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
  core::ScopeTree tree = core::buildScopeTree(*module.entry(), options.scopeReference.get());
  core::DotGraph graph = core::buildGroupedDotGraph(module, options, tree, options.expandedGroups);
  GraphModel model = buildGraph(graph);
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
