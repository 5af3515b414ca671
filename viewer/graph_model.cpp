#include "viewer/graph_model.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <unordered_set>

#include "core/graphviz/graphviz_renderer.h"
#include "core/ir/attributes.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/literal.h"
#include "core/ir/shape.h"

namespace fusionscope::viewer {
namespace {

using core::HloComputation;
using core::HloInstruction;
using core::HloOpcode;

constexpr int kMaxFusionDepth = 16;
constexpr size_t kMaxShapeChars = 48;
constexpr size_t kMaxLiteralChars = 32;
constexpr int kMaxStubsPerUser = 8;

std::string nodeKey(const std::string& computation, const std::string& name) {
  return computation + '/' + name;
}

std::string truncated(std::string text, size_t maxChars) {
  if (text.size() > maxChars) {
    text.resize(maxChars);
    text += "...";
  }
  return text;
}

bool isInlinedConstant(const HloInstruction& inst, const GraphOptions& options) {
  if (inst.opcode() != HloOpcode::kConstant || inst.isRoot() || inst.users().empty()) return false;
  if (!inst.controlPredecessors().empty() || !inst.controlSuccessors().empty()) return false;
  return inst.shape().isArray() && inst.shape().elementCount() <= options.inlineConstantMaxElements;
}

std::string literalText(const HloInstruction& constant) {
  const core::Literal* literal = constant.literal();
  if (literal == nullptr || literal->kind() == core::Literal::Kind::kElided ||
      literal->kind() == core::Literal::Kind::kRaw) {
    return constant.name();
  }
  return truncated(literal->toString(8), kMaxLiteralChars);
}

std::string opcodeLine(const HloInstruction& inst) {
  std::string line(inst.opcodeString());
  const core::InstructionAttributes& attrs = inst.attributes();
  switch (inst.opcode()) {
    case HloOpcode::kParameter:
      if (inst.parameterNumber() >= 0) line += " " + std::to_string(inst.parameterNumber());
      break;
    case HloOpcode::kFusion: line += " " + std::string(core::fusionKindName(inst.fusionKind())); break;
    case HloOpcode::kCustomCall:
      if (attrs.customCallTarget) line += " " + truncated(*attrs.customCallTarget, 32);
      break;
    case HloOpcode::kGetTupleElement:
      if (attrs.tupleIndex) line += " " + std::to_string(*attrs.tupleIndex);
      break;
    default:
      if (attrs.dimensions) {
        line += " dims={";
        for (size_t i = 0; i < attrs.dimensions->size(); ++i) {
          if (i > 0) line += ',';
          line += std::to_string((*attrs.dimensions)[i]);
        }
        line += '}';
      }
      break;
  }
  return line;
}

std::string escapeQuoted(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string dotLabel(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\\n";
    out += escapeQuoted(lines[i]);
  }
  out += '"';
  return out;
}

// Where edges attach to a drawn instruction: its node, or for an expanded fusion the fused root's node (out)
// and the fused parameters' nodes (in).
struct Attachment {
  int out = -1;
  std::vector<int> params;
  bool expanded = false;
};

class Builder {
 public:
  Builder(const core::HloModule& module, const GraphOptions& options) : m_module(module), m_options(options) {}

  GraphModel build() {
    const HloComputation* entry = m_module.entry();
    if (entry == nullptr) return std::move(m_model);
    m_model.entry = entry->name();
    computeVisible(*entry);
    planLongEdges(*entry);
    emitComputation(*entry, -1, 0);
    emitEdges(*entry, 0);
    m_model.index();
    writeDot();
    return std::move(m_model);
  }

 private:
  bool visible(const HloInstruction* inst) const { return m_visible.empty() || m_visible.count(inst) > 0; }

  void computeVisible(const HloComputation& entry) {
    if (m_options.focus.empty()) return;
    const HloInstruction* focus = entry.findInstruction(m_options.focus);
    if (focus == nullptr) return;
    std::deque<std::pair<const HloInstruction*, int>> queue{{focus, 0}};
    m_visible.insert(focus);
    while (!queue.empty()) {
      auto [inst, distance] = queue.front();
      queue.pop_front();
      if (distance >= m_options.hops) continue;
      auto visit = [&](const HloInstruction* next) {
        if (m_visible.insert(next).second) queue.emplace_back(next, distance + 1);
      };
      for (const HloInstruction* operand : inst->operands()) visit(operand);
      for (const HloInstruction* user : inst->users()) visit(user);
    }
  }

  bool expand(const HloInstruction& inst, int depth) const {
    const HloComputation* fused = inst.fusedComputation();
    if (fused == nullptr || fused->root() == nullptr || depth >= kMaxFusionDepth) return false;
    if (m_options.collapseFusions) return m_options.expanded.count(inst.name()) > 0;
    return m_options.collapsed.count(inst.name()) == 0;
  }

  std::vector<std::string> labelFor(const HloInstruction& inst) {
    std::vector<std::string> lines;
    lines.push_back(inst.isRoot() ? "ROOT " + inst.name() : inst.name());
    lines.push_back(opcodeLine(inst));
    for (int i = 0; i < inst.operandCount(); ++i) {
      const HloInstruction& operand = *inst.operand(i);
      if (isInlinedConstant(operand, m_options)) {
        lines.push_back("operand " + std::to_string(i) + " = " + literalText(operand));
      }
    }
    lines.push_back(truncated(inst.shape().toString(false), kMaxShapeChars));
    if (inst.isFusion() && inst.fusedComputation() != nullptr) {
      lines.push_back(std::to_string(inst.fusedComputation()->instructionCount()) + " fused instructions");
    }
    return lines;
  }

  int addNode(const HloInstruction& inst, int cluster, bool collapsedFusion) {
    GraphNode node;
    node.kind = collapsedFusion ? GraphNode::Kind::kCollapsedFusion : GraphNode::Kind::kInstruction;
    node.name = inst.name();
    node.computation = inst.parent() != nullptr ? inst.parent()->name() : std::string();
    node.opcode = std::string(inst.opcodeString());
    node.category = inst.category();
    node.lines = labelFor(inst);
    node.root = inst.isRoot();
    node.cluster = cluster;
    node.instruction = &inst;
    m_model.nodes.push_back(std::move(node));
    return static_cast<int>(m_model.nodes.size()) - 1;
  }

  void emitComputation(const HloComputation& computation, int cluster, int depth) {
    for (const auto& owned : computation.instructions()) {
      const HloInstruction& inst = *owned;
      if (depth == 0 && !visible(&inst)) continue;
      if (isInlinedConstant(inst, m_options)) continue;
      if (depth == 0 && m_copiedSources.count(&inst) > 0) continue;
      Attachment attachment;
      if (expand(inst, depth)) {
        const HloComputation& fused = *inst.fusedComputation();
        GraphCluster box;
        box.fusionName = inst.name();
        box.computation = computation.name();
        box.lines = {inst.isRoot() ? "ROOT " + inst.name() : inst.name(), opcodeLine(inst)};
        box.parent = cluster;
        box.root = inst.isRoot();
        box.fusion = &inst;
        m_model.clusters.push_back(std::move(box));
        int id = static_cast<int>(m_model.clusters.size()) - 1;
        emitComputation(fused, id, depth + 1);
        emitEdges(fused, depth + 1);
        attachment.expanded = true;
        attachment.out = m_attach[fused.root()].out;
        for (const HloInstruction* param : fused.parameters()) {
          auto it = param != nullptr ? m_attach.find(param) : m_attach.end();
          attachment.params.push_back(it != m_attach.end() ? it->second.out : -1);
        }
      } else {
        attachment.out = addNode(inst, cluster, inst.isFusion());
      }
      m_attach[&inst] = std::move(attachment);
    }
  }

  // Longest-path ranks over the drawn entry instructions; an edge spanning too many becomes a stub.
  // Sources (parameters, constants) all of whose edges are cut are not drawn at their own place at all: each use
  // gets a copy next to it instead, as the DOT writer does. Otherwise hundreds of weights form one very wide
  // top row that makes the whole graph unreadable when fitted.
  void planLongEdges(const HloComputation& entry) {
    int64_t drawn = m_visible.empty() ? entry.instructionCount() : static_cast<int64_t>(m_visible.size());
    if (drawn <= m_options.longEdgeMinInstructions || m_options.maxEdgeSpan <= 0) return;
    auto order = entry.postOrder();
    if (!order.ok()) return;
    for (const HloInstruction* inst : *order) {
      int64_t rank = 0;
      for (const HloInstruction* operand : inst->operands()) {
        auto it = m_rank.find(operand);
        if (it != m_rank.end()) rank = std::max(rank, it->second + 1);
      }
      m_rank[inst] = rank;
    }
    m_cutting = true;
    for (const HloInstruction* inst : *order) {
      bool source = inst->operandCount() == 0 && inst->controlPredecessors().empty() &&
                    inst->controlSuccessors().empty() && !inst->isRoot() && !inst->users().empty() && visible(inst);
      if (!source) continue;
      bool allCut = true;
      for (const HloInstruction* user : inst->users()) {
        if (visible(user) && m_rank[user] - m_rank[inst] <= m_options.maxEdgeSpan) {
          allCut = false;
          break;
        }
      }
      if (allCut) m_copiedSources.insert(inst);
    }
  }

  int targetOf(const Attachment& to, int operandIndex) const {
    if (!to.expanded) return to.out;
    auto param = static_cast<size_t>(operandIndex);
    return operandIndex >= 0 && param < to.params.size() ? to.params[param] : -1;
  }

  bool isCut(const HloInstruction& user, const HloInstruction& operand, int depth) const {
    if (depth != 0) return false;
    if (m_copiedSources.count(&operand) > 0) return true;
    if (!m_cutting) return false;
    auto userRank = m_rank.find(&user);
    auto operandRank = m_rank.find(&operand);
    int64_t span =
        (userRank != m_rank.end() ? userRank->second : 0) - (operandRank != m_rank.end() ? operandRank->second : 0);
    return span > m_options.maxEdgeSpan;
  }

  int addStub(const HloInstruction& operand, const std::string& computation, bool copy, int target) {
    GraphNode stub;
    stub.kind = GraphNode::Kind::kStub;
    stub.name = operand.name();
    stub.computation = computation;
    if (copy) {
      // A copy of the source: it looks like the source (colours, label) but is drawn dashed.
      stub.lines = labelFor(operand);
      stub.category = operand.category();
      stub.opcode = std::string(operand.opcodeString());
    } else {
      stub.lines = {"from " + operand.name()};
    }
    stub.instruction = &operand;
    m_model.nodes.push_back(std::move(stub));
    int id = static_cast<int>(m_model.nodes.size()) - 1;
    m_model.edges.push_back(GraphEdge{id, target, false, true, {}, false, {}});
    return id;
  }

  void emitEdges(const HloComputation& computation, int depth) {
    for (const auto& owned : computation.instructions()) {
      const HloInstruction& user = *owned;
      auto to = m_attach.find(&user);
      if (to == m_attach.end()) continue;
      // A user with many far operands (the ROOT tuple of a training step returns hundreds of weights) gets one
      // summary stub instead of a row of hundreds that would make the graph as wide as the module is long.
      int cutCount = 0;
      for (const HloInstruction* operand : user.operands()) cutCount += isCut(user, *operand, depth) ? 1 : 0;
      bool summarise = cutCount > kMaxStubsPerUser && !to->second.expanded;
      if (summarise) {
        GraphNode stub;
        stub.kind = GraphNode::Kind::kStub;
        stub.name = user.name();
        stub.computation = computation.name();
        std::string names;
        for (const HloInstruction* operand : user.operands()) {
          if (!isCut(user, *operand, depth)) continue;
          if (names.size() > 40) {
            names += ", ...";
            break;
          }
          names += (names.empty() ? "" : ", ") + operand->name();
        }
        stub.lines = {"from " + std::to_string(cutCount) + " far operands", names};
        stub.instruction = &user;
        m_model.nodes.push_back(std::move(stub));
        int id = static_cast<int>(m_model.nodes.size()) - 1;
        m_model.edges.push_back(GraphEdge{id, to->second.out, false, true, {}, false, {}});
      }
      for (int i = 0; i < user.operandCount(); ++i) {
        const HloInstruction* operand = user.operand(i);
        bool cut = isCut(user, *operand, depth);
        if (cut && summarise) continue;
        auto from = m_attach.find(operand);
        bool copied = depth == 0 && m_copiedSources.count(operand) > 0;
        if (!copied && (from == m_attach.end() || from->second.out < 0)) continue;
        int target = targetOf(to->second, i);
        if (target < 0) continue;
        if (cut) {
          addStub(*operand, computation.name(), copied, target);
          continue;
        }
        m_model.edges.push_back(GraphEdge{from->second.out, target, false, false, {}, false, {}});
      }
      for (const HloInstruction* pred : user.controlPredecessors()) {
        auto from = m_attach.find(pred);
        if (from == m_attach.end() || from->second.out < 0) continue;
        int target = to->second.out;
        if (target >= 0) m_model.edges.push_back(GraphEdge{from->second.out, target, true, false, {}, false, {}});
      }
    }
  }

  void writeClusterContents(std::string& out, int cluster, const std::vector<std::vector<int>>& nodesOf,
                            const std::vector<std::vector<int>>& childrenOf, int depth) {
    std::string indent(static_cast<size_t>(2 * depth + 2), ' ');
    for (int child : childrenOf[static_cast<size_t>(cluster + 1)]) {
      const GraphCluster& box = m_model.clusters[static_cast<size_t>(child)];
      out += indent + "subgraph cluster_" + std::to_string(child) + " {\n";
      out += indent + "  label=" + dotLabel(box.lines) + "; labeljust=l; fontsize=11; style=rounded;\n";
      writeClusterContents(out, child, nodesOf, childrenOf, depth + 1);
      out += indent + "}\n";
    }
    for (int id : nodesOf[static_cast<size_t>(cluster + 1)]) {
      const GraphNode& node = m_model.nodes[static_cast<size_t>(id)];
      out += indent + "n" + std::to_string(id) + " [label=" + dotLabel(node.lines);
      if (node.kind == GraphNode::Kind::kStub) out += " fontsize=9";
      out += "];\n";
    }
  }

  void writeDot() {
    std::vector<std::vector<int>> nodesOf(m_model.clusters.size() + 1);
    std::vector<std::vector<int>> childrenOf(m_model.clusters.size() + 1);
    for (size_t i = 0; i < m_model.nodes.size(); ++i) {
      nodesOf[static_cast<size_t>(m_model.nodes[i].cluster + 1)].push_back(static_cast<int>(i));
    }
    for (size_t i = 0; i < m_model.clusters.size(); ++i) {
      childrenOf[static_cast<size_t>(m_model.clusters[i].parent + 1)].push_back(static_cast<int>(i));
    }
    std::string& out = m_model.dot;
    out.reserve(m_model.nodes.size() * 120 + m_model.edges.size() * 24 + 256);
    out += "digraph G {\n  graph [rankdir=TB";
    if (m_model.nodes.size() > static_cast<size_t>(m_options.fastLayoutAbove)) {
      out += " newrank=true nslimit=0.2 nslimit1=0.2 mclimit=0.5";
    }
    out += "];\n";
    out += "  node [shape=rect fontname=\"Helvetica\" fontsize=11 margin=\"0.12,0.05\"];\n";
    out += "  edge [arrowsize=0.7];\n";
    writeClusterContents(out, -1, nodesOf, childrenOf, 0);
    for (const GraphEdge& edge : m_model.edges) {
      out += "  n" + std::to_string(edge.from) + " -> n" + std::to_string(edge.to);
      out += edge.control || edge.stub ? " [style=dashed];\n" : ";\n";
    }
    out += "}\n";
  }

  const core::HloModule& m_module;
  const GraphOptions& m_options;
  GraphModel m_model;
  std::unordered_map<const HloInstruction*, Attachment> m_attach;
  std::unordered_set<const HloInstruction*> m_visible;
  std::unordered_map<const HloInstruction*, int64_t> m_rank;
  std::unordered_set<const HloInstruction*> m_copiedSources;
  bool m_cutting = false;
};

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
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind == GraphNode::Kind::kStub) continue;
    m_nodeByKey.emplace(nodeKey(nodes[i].computation, nodes[i].name), static_cast<int>(i));
  }
  for (size_t i = 0; i < clusters.size(); ++i) m_clusterByName.emplace(clusters[i].fusionName, static_cast<int>(i));
}

GraphModel buildGraph(const core::HloModule& module, const GraphOptions& options) {
  return Builder(module, options).build();
}

Status applyLayout(GraphModel& model, const graphviz::GraphLayout& layout) {
  double left = layout.lowerLeft.x;
  double top = layout.upperRight.y;
  auto flip = [&](const graphviz::PointF& p) { return GraphPoint{p.x - left, top - p.y}; };
  model.width = layout.upperRight.x - layout.lowerLeft.x;
  model.height = layout.upperRight.y - layout.lowerLeft.y;
  for (const graphviz::NodeLayout& node : layout.nodes) {
    int id = parseId(node.name, "n");
    if (id < 0 || static_cast<size_t>(id) >= model.nodes.size()) {
      return Status::error("layout names an unknown node '" + node.name + "'");
    }
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
  for (const GraphEdge& edge : model.edges) {
    if (edge.control) control.emplace(edge.from, edge.to);
  }
  std::vector<GraphEdge> edges;
  edges.reserve(layout.edges.size());
  for (const graphviz::EdgeLayout& edge : layout.edges) {
    GraphEdge drawn;
    drawn.from = parseId(edge.tail, "n");
    drawn.to = parseId(edge.head, "n");
    if (drawn.from < 0 || drawn.to < 0) continue;
    drawn.control = control.count({drawn.from, drawn.to}) > 0;
    drawn.stub = model.nodes[static_cast<size_t>(drawn.from)].kind == GraphNode::Kind::kStub;
    for (const graphviz::PointF& p : edge.controlPoints) drawn.spline.push_back(flip(p));
    drawn.hasArrow = edge.hasArrowHead;
    if (edge.hasArrowHead) drawn.arrowTip = flip(edge.arrowHead);
    edges.push_back(std::move(drawn));
  }
  model.edges = std::move(edges);
  model.laidOut = true;
  return okStatus();
}

StatusOr<GraphModel> layoutModule(const core::HloModule& module, const GraphOptions& options) {
  GraphModel model = buildGraph(module, options);
  std::string source = module.name() + ".dot";
  StatusOr<graphviz::GraphLayout> layout = graphviz::layoutDot(model.dot, source);
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

CategoryColors colorsFor(core::OpCategory category) {
  using core::OpCategory;
  switch (category) {
    case OpCategory::kDataMovement: return {0xc8e6c9, 0x97b498, 0x000000};
    case OpCategory::kReduction: return {0xe1bee7, 0xaf8eb5, 0x000000};
    case OpCategory::kContraction: return {0x1565c0, 0x003c8f, 0xffffff};
    case OpCategory::kNormalization: return {0xfff9c4, 0xcbc693, 0x000000};
    case OpCategory::kParameter: return {0xffe0b2, 0xcbae82, 0x000000};
    case OpCategory::kConstant: return {0xf5f5f5, 0x9e9e9e, 0x000000};
    case OpCategory::kControlFlow: return {0x2e7d32, 0x005005, 0xffffff};
    case OpCategory::kFusion: return {0xcfd8dc, 0x9ea7aa, 0x000000};
    case OpCategory::kCollective: return {0xbcaaa4, 0x8c7b75, 0x000000};
    case OpCategory::kCustomCall: return {0xffcdd2, 0xcb9ca1, 0x000000};
    case OpCategory::kRandom: return {0xffb74d, 0xc88719, 0x000000};
    case OpCategory::kElementwise:
    case OpCategory::kTuple:
    case OpCategory::kOther: break;
  }
  return {0xffffff, 0x9e9e9e, 0x000000};
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
