#include "core/dot/dot_graph.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <iterator>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "core/ir/attributes.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/literal.h"
#include "core/ir/shape.h"

namespace fusionscope::core {
namespace {

// Labels stay readable: long tuples, long computation lists and long literals are abbreviated.
constexpr int kMaxTupleElementsShown = 4;
constexpr size_t kMaxShortTupleChars = 60;
constexpr size_t kMaxCalledShown = 4;
constexpr int64_t kMaxPreviewElements = 8;
constexpr size_t kMaxPreviewChars = 48;
constexpr size_t kMaxTargetChars = 48;
constexpr size_t kMaxSummaryNamesChars = 40;
// Guards against a fusion that (directly or not) calls its own computation in malformed input.
constexpr int kMaxFusionDepth = 32;

void appendInt(std::string& out, int64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

void appendIntList(std::string& out, const std::vector<int64_t>& values) {
  out += '{';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    appendInt(out, values[i]);
  }
  out += '}';
}

void appendTruncated(std::string& out, std::string_view text, size_t maxChars) {
  out += text.substr(0, maxChars);
  if (text.size() > maxChars) out += "...";
}

// Arrays print as XLA does; tuples past a few elements print the first two and a count, e.g.
// `(f32[2], s32[] ... 40 elements)`, because a 200-element tuple would make the node wider than the graph.
void appendShapeText(std::string& out, const Shape& shape) {
  if (!shape.isTuple()) {
    shape.appendTo(out, true);
    return;
  }
  if (shape.tupleSize() <= kMaxTupleElementsShown) {
    size_t start = out.size();
    shape.appendTo(out, true);
    if (out.size() - start <= kMaxShortTupleChars) return;
    out.resize(start);
    shape.appendTo(out, false);
    return;
  }
  out += '(';
  for (int i = 0; i < 2; ++i) {
    if (i > 0) out += ", ";
    const Shape& element = shape.tupleElement(i);
    element.isTuple() ? appendShapeText(out, element) : element.appendTo(out, false);
  }
  out += " ... ";
  appendInt(out, shape.tupleSize());
  out += " elements)";
}

// Small constants are noise as nodes (every reduce has its init value), so they become a line in each
// user's label instead, as in XLA's dumps. Roots, unused constants and constants on control edges keep
// their node: otherwise they would vanish from the picture.
bool isInlinedConstant(const HloInstruction& inst, const DotOptions& options) {
  if (inst.opcode() != HloOpcode::kConstant || inst.isRoot() || inst.users().empty()) return false;
  if (!inst.controlPredecessors().empty() || !inst.controlSuccessors().empty()) return false;
  const Shape& shape = inst.shape();
  return shape.isArray() && shape.elementCount() <= options.inlineConstantMaxElements;
}

// The value text of an inlined constant: the literal itself, or the constant's name where the value is not
// known (elided `{...}` or a raw form we do not decode).
void appendInlinedValue(std::string& out, const HloInstruction& constant) {
  const Literal* literal = constant.literal();
  if (literal == nullptr || literal->kind() == Literal::Kind::kElided || literal->kind() == Literal::Kind::kRaw) {
    out += constant.name();
    return;
  }
  appendTruncated(out, literal->toString(kMaxPreviewElements), kMaxPreviewChars);
}

std::string opcodeLine(const HloInstruction& inst) {
  std::string line(inst.opcodeString());
  const InstructionAttributes& attrs = inst.attributes();
  std::string detail;
  switch (inst.opcode()) {
    case HloOpcode::kParameter:
      if (inst.parameterNumber() >= 0) appendInt(detail, inst.parameterNumber());
      break;
    case HloOpcode::kFusion:
      if (attrs.fusionKind) detail += fusionKindName(*attrs.fusionKind);
      break;
    case HloOpcode::kCompare:
      if (attrs.direction) detail += comparisonDirectionName(*attrs.direction);
      break;
    case HloOpcode::kCustomCall:
      if (attrs.customCallTarget) appendTruncated(detail, *attrs.customCallTarget, kMaxTargetChars);
      break;
    case HloOpcode::kGetTupleElement:
      if (attrs.tupleIndex) appendInt(detail, *attrs.tupleIndex);
      break;
    case HloOpcode::kIota:
      if (attrs.iotaDimension) {
        detail += "dim=";
        appendInt(detail, *attrs.iotaDimension);
      }
      break;
    default:
      if (attrs.dimensions) {
        detail += "dims=";
        appendIntList(detail, *attrs.dimensions);
      }
      break;
  }
  if (!detail.empty()) {
    line += ' ';
    line += detail;
  }
  return line;
}

// Contracting/batch dimensions, convolution dim_labels, slices and called computations (other than an expanded
// fusion body, which is drawn, not named).
void appendDetailLines(std::vector<std::string>& lines, const HloInstruction& inst, bool skipFusedCalls) {
  const InstructionAttributes& attrs = inst.attributes();
  auto lhsRhs = [&](std::string_view what, const std::vector<int64_t>& lhs, const std::vector<int64_t>& rhs) {
    if (lhs.empty() && rhs.empty()) return;
    lines.push_back(
        fmt::format(FMT_COMPILE("{} lhs={{{}}} rhs={{{}}}"), what, fmt::join(lhs, ","), fmt::join(rhs, ",")));
  };
  if (attrs.dot) {
    lhsRhs("contracting", attrs.dot->lhsContracting, attrs.dot->rhsContracting);
    lhsRhs("batch", attrs.dot->lhsBatch, attrs.dot->rhsBatch);
  }
  if (inst.opcode() == HloOpcode::kConvolution) {
    if (const std::string* labels = attrs.findRaw("dim_labels")) lines.push_back("dim_labels=" + *labels);
  }
  if (attrs.slice) {
    std::string line = "slice={";
    for (size_t i = 0; i < attrs.slice->size(); ++i) {
      const SliceDim& dim = (*attrs.slice)[i];
      fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}[{}:{}"), i > 0 ? ", " : "", dim.start, dim.limit);
      if (dim.stride != 1) fmt::format_to(std::back_inserter(line), FMT_COMPILE(":{}"), dim.stride);
      line += ']';
    }
    line += '}';
    lines.push_back(std::move(line));
  }
  for (const CalledComputationRef& ref : inst.calledComputationRefs()) {
    if (skipFusedCalls && ref.key == "calls") continue;
    std::string line = ref.key;
    line += '=';
    bool braced = ref.braced || ref.computations.size() != 1;
    if (braced) line += '{';
    for (size_t i = 0; i < ref.computations.size() && i < kMaxCalledShown; ++i) {
      if (i > 0) line += ", ";
      line += ref.computations[i] != nullptr ? std::string_view(ref.computations[i]->name()) : "?";
    }
    if (ref.computations.size() > kMaxCalledShown) {
      line += ", ... ";
      appendInt(line, static_cast<int64_t>(ref.computations.size()));
      line += " total";
    }
    if (braced) line += '}';
    lines.push_back(std::move(line));
  }
}

std::string shapeLine(const Shape& shape) {
  std::string line;
  appendShapeText(line, shape);
  return line;
}

// Where edges attach to a drawn instruction (`out` < 0: not drawn). For an expanded fusion, edges leave
// from the fused root's node and enter at the fused parameters' nodes; `cluster` is then its cluster index.
struct NodeInfo {
  int out = -1;
  int cluster = -1;
  std::vector<int> params;
};

// Builds one DotGraph. Instruction nodes and clusters are made in text order; each computation's edges once all
// of its nodes exist, so nested fusions' edges come before the entry's, and stubs and copies with the entry's.
class Builder {
 public:
  Builder(const HloModule& module, const DotOptions& options) : m_module(module), m_options(options) {}

  DotGraph build();

 private:
  void computeVisible(const HloComputation& entry);
  bool visible(const HloInstruction* inst) const { return m_visible.empty() || m_visible.contains(inst); }
  bool canExpand(const HloInstruction& inst) const;
  bool chosenExpanded(const HloInstruction& inst) const {
    return m_options.collapseFusions ? m_options.expanded.contains(inst.name())
                                     : !m_options.collapsed.contains(inst.name());
  }
  void addComputation(const HloComputation& computation, const HloInstruction* fusion, int cluster, int depth);
  void addCluster(const HloInstruction& fusion, int parent, int depth);
  int addNode(DotNode node);
  std::vector<std::string> labelLines(const HloInstruction& inst, const HloInstruction* fusion);
  // Marks the operand slots of the entry whose edges would span too many ranks (see DotOptions), and the
  // sources (parameters, constants, ...) all of whose drawn edges are cut: those are drawn next to each user.
  void planLongEdges(const HloComputation& entry);
  void addEdges(const HloComputation& computation, bool cutting);
  void addCutEdge(const HloInstruction& operand, const NodeInfo& to, int operandIndex, bool labelled);
  void addSummaryStub(const HloInstruction& user, const std::vector<const HloInstruction*>& far, int target);
  void addEdge(const NodeInfo& from, const NodeInfo& to, int operandIndex, bool labelled);
  const NodeInfo* nodeInfo(const HloInstruction* inst) const {
    auto it = m_info.find(inst);
    return it == m_info.end() ? nullptr : &it->second;
  }

  const HloModule& m_module;
  const DotOptions& m_options;
  DotGraph m_graph;
  std::unordered_map<const HloInstruction*, NodeInfo> m_info;
  std::unordered_set<const HloInstruction*> m_visible;
  std::vector<const HloComputation*> m_expanding;
  int m_nextNode = 0;
  int m_nextStub = 0;
  std::vector<char> m_cutSlots;  // per operand slot of the entry, in instruction order
  std::unordered_set<const HloInstruction*> m_copiedSources;
};

DotGraph Builder::build() {
  const HloComputation* entry = m_module.entry();
  m_graph.module = &m_module;
  if (m_options.showTitle) {
    if (!m_options.title.empty()) {
      m_graph.title = m_options.title;
    } else {
      m_graph.title = m_module.name();
      m_graph.title += entry != nullptr ? ", computation " + entry->name() : " (no ENTRY computation)";
    }
  }
  if (entry != nullptr) {
    m_info.reserve(static_cast<size_t>(m_module.instructionCount()));
    m_graph.nodes.reserve(static_cast<size_t>(entry->instructionCount()));
    computeVisible(*entry);
    planLongEdges(*entry);
    addComputation(*entry, nullptr, -1, 0);
  }
  m_graph.fastLayout =
      m_options.fastLayoutAbove > 0 && m_graph.nodes.size() > static_cast<size_t>(m_options.fastLayoutAbove);
  return std::move(m_graph);
}

void Builder::computeVisible(const HloComputation& entry) {
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

bool Builder::canExpand(const HloInstruction& inst) const {
  const HloComputation* fused = inst.fusedComputation();
  if (fused == nullptr || fused->root() == nullptr) return false;
  if (static_cast<int>(m_expanding.size()) >= kMaxFusionDepth) return false;
  return std::find(m_expanding.begin(), m_expanding.end(), fused) == m_expanding.end();
}

void Builder::addComputation(const HloComputation& computation, const HloInstruction* fusion, int cluster, int depth) {
  m_expanding.push_back(&computation);
  for (const auto& owned : computation.instructions()) {
    const HloInstruction& inst = *owned;
    if (fusion == nullptr && !visible(&inst)) continue;
    if (isInlinedConstant(inst, m_options) || m_copiedSources.contains(&inst)) {
      m_info[&inst] = NodeInfo{};
      continue;
    }
    bool expandable = canExpand(inst);
    if (expandable && chosenExpanded(inst)) {
      addCluster(inst, cluster, depth);
      continue;
    }
    DotNode node;
    node.kind = inst.isFusion() ? DotNode::Kind::kCollapsedFusion : DotNode::Kind::kInstruction;
    node.instruction = &inst;
    node.lines = labelLines(inst, fusion);
    // A fusion collapsed by choice says how much it hides.
    if (expandable)
      node.lines.push_back(std::to_string(inst.fusedComputation()->instructionCount()) + " fused instructions");
    node.category = inst.category();
    node.root = inst.isRoot();
    node.cluster = cluster;
    node.id = m_nextNode++;
    m_info[&inst] = NodeInfo{addNode(std::move(node)), -1, {}};
  }
  // Every node of this computation now has its index, so its edges can be made.
  addEdges(computation, fusion == nullptr && !m_cutSlots.empty());
  m_expanding.pop_back();
}

void Builder::addCluster(const HloInstruction& fusion, int parent, int depth) {
  const HloComputation& fused = *fusion.fusedComputation();
  DotCluster box;
  box.fusion = &fusion;
  box.lines = {fusion.name(), opcodeLine(fusion)};
  appendDetailLines(box.lines, fusion, true);
  box.lines.push_back(shapeLine(fusion.shape()));
  box.parent = parent;
  box.depth = depth;
  box.firstNode = static_cast<int>(m_graph.nodes.size());
  box.root = fusion.isRoot();
  m_graph.clusters.push_back(std::move(box));
  int cluster = static_cast<int>(m_graph.clusters.size()) - 1;

  addComputation(fused, &fusion, cluster, depth + 1);

  NodeInfo info;
  info.cluster = cluster;
  info.out = m_info[fused.root()].out;
  for (const HloInstruction* param : fused.parameters())
    info.params.push_back(param != nullptr ? m_info[param].out : -1);
  m_info[&fusion] = std::move(info);
}

int Builder::addNode(DotNode node) {
  m_graph.nodes.push_back(std::move(node));
  return static_cast<int>(m_graph.nodes.size()) - 1;
}

std::vector<std::string> Builder::labelLines(const HloInstruction& inst, const HloInstruction* fusion) {
  std::vector<std::string> lines{inst.name(), opcodeLine(inst)};
  appendDetailLines(lines, inst, false);
  auto inlined = [&](int index, const HloInstruction& constant) {
    std::string line = fmt::format(FMT_COMPILE("operand {} = "), index);
    appendInlinedValue(line, constant);
    lines.push_back(std::move(line));
  };
  for (int i = 0; i < inst.operandCount(); ++i) {
    const HloInstruction* operand = inst.operand(i);
    if (isInlinedConstant(*operand, m_options)) inlined(i, *operand);
  }
  // A fused parameter stands for the fusion's operand of the same number; when that operand is an inlined
  // constant its value is shown here, where the edge would have arrived.
  if (fusion != nullptr && inst.opcode() == HloOpcode::kParameter) {
    int64_t number = inst.parameterNumber();
    if (number >= 0 && number < fusion->operandCount()) {
      const HloInstruction* operand = fusion->operand(static_cast<int>(number));
      if (isInlinedConstant(*operand, m_options)) inlined(static_cast<int>(number), *operand);
    }
  }
  lines.push_back(shapeLine(inst.shape()));
  if (inst.opcode() == HloOpcode::kConstant && inst.literal() != nullptr) {
    const Literal& literal = *inst.literal();
    bool decoded = literal.kind() == Literal::Kind::kFloat || literal.kind() == Literal::Kind::kInteger;
    if (decoded && inst.shape().elementCount() <= kMaxPreviewElements) {
      std::string line;
      appendTruncated(line, literal.toString(kMaxPreviewElements), kMaxPreviewChars);
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

// An edge is cut when the user's longest-path rank is more than maxEdgeSpan below the operand's. That
// overestimates dot's real span for sources (which dot could pull down but in practice leaves high), and
// those are exactly the edges that make its crossing minimisation explode.
void Builder::planLongEdges(const HloComputation& entry) {
  int64_t drawn = m_visible.empty() ? entry.instructionCount() : static_cast<int64_t>(m_visible.size());
  if (drawn <= m_options.longEdgeMinInstructions || m_options.maxEdgeSpan <= 0) return;
  auto order = entry.postOrder();
  if (!order.ok()) return;
  std::unordered_map<const HloInstruction*, int64_t> rank(order->size());
  for (const HloInstruction* inst : *order) {
    int64_t r = 0;
    for (const HloInstruction* operand : inst->operands()) r = std::max(r, rank[operand] + 1);
    rank[inst] = r;
  }
  std::unordered_map<const HloInstruction*, int64_t> keptUses(order->size());
  for (const auto& owned : entry.instructions()) {
    for (const HloInstruction* operand : owned->operands()) {
      bool cut = rank[owned.get()] - rank[operand] > m_options.maxEdgeSpan;
      m_cutSlots.push_back(cut);
      keptUses[operand] += cut || !visible(owned.get()) ? 0 : 1;
    }
  }
  for (const auto& owned : entry.instructions()) {
    const HloInstruction* inst = owned.get();
    bool source = inst->operandCount() == 0 && inst->controlPredecessors().empty() &&
                  inst->controlSuccessors().empty() && !inst->isRoot() && !inst->users().empty() && visible(inst);
    if (source && keptUses[inst] == 0) m_copiedSources.insert(inst);
  }
}

void Builder::addEdges(const HloComputation& computation, bool cutting) {
  size_t slot = 0;
  std::vector<const HloInstruction*> far;
  for (const auto& owned : computation.instructions()) {
    const HloInstruction& user = *owned;
    const NodeInfo* to = nodeInfo(&user);
    size_t firstSlot = slot;
    slot += static_cast<size_t>(user.operandCount());
    if (to == nullptr) continue;
    bool labelled = user.operandCount() > 1;
    auto isCut = [&](int i) {
      const HloInstruction& operand = *user.operand(i);
      return cutting && m_cutSlots[firstSlot + static_cast<size_t>(i)] && !isInlinedConstant(operand, m_options) &&
             (visible(&operand) || m_copiedSources.contains(&operand));
    };
    bool summarise = false;
    if (cutting && m_options.maxStubsPerUser > 0 && to->cluster < 0) {
      far.clear();
      for (int i = 0; i < user.operandCount(); ++i) {
        if (isCut(i)) far.push_back(user.operand(i));
      }
      summarise = static_cast<int>(far.size()) > m_options.maxStubsPerUser;
      if (summarise) addSummaryStub(user, far, to->out);
    }
    for (int i = 0; i < user.operandCount(); ++i) {
      const HloInstruction& operand = *user.operand(i);
      if (isCut(i)) {
        if (!summarise) addCutEdge(operand, *to, i, labelled);
        continue;
      }
      const NodeInfo* from = nodeInfo(&operand);
      // Inlined constants and instructions outside the neighbourhood have no node; operands from another
      // computation (malformed input) are skipped.
      if (from == nullptr || from->out < 0) continue;
      addEdge(*from, *to, i, labelled);
    }
    for (const HloInstruction* pred : user.controlPredecessors()) {
      const NodeInfo* from = nodeInfo(pred);
      if (from == nullptr || from->out < 0) continue;
      addEdge(*from, *to, -1, false);
    }
  }
}

void Builder::addCutEdge(const HloInstruction& operand, const NodeInfo& to, int operandIndex, bool labelled) {
  int target = to.out;
  if (to.cluster >= 0) {
    auto param = static_cast<size_t>(operandIndex);
    if (param < to.params.size() && to.params[param] >= 0) target = to.params[param];
  }
  if (target < 0) return;
  DotNode node;
  node.instruction = &operand;
  if (m_copiedSources.contains(&operand)) {
    node.kind = DotNode::Kind::kCopy;
    node.lines = labelLines(operand, nullptr);
    node.category = operand.category();
    node.id = m_nextNode++;
  } else {
    node.kind = DotNode::Kind::kStub;
    node.lines = {"from " + operand.name()};
    node.id = m_nextStub++;
  }
  int from = addNode(std::move(node));
  m_graph.edges.push_back(DotEdge{from, target, operandIndex, labelled, false, true, -1, -1});
}

void Builder::addSummaryStub(const HloInstruction& user, const std::vector<const HloInstruction*>& far, int target) {
  if (target < 0) return;
  std::string names;
  for (const HloInstruction* operand : far) {
    if (names.size() > kMaxSummaryNamesChars) {
      names += ", ...";
      break;
    }
    if (!names.empty()) names += ", ";
    names += operand->name();
  }
  DotNode node;
  node.kind = DotNode::Kind::kStubSummary;
  node.instruction = &user;
  node.lines = {fmt::format("from {} far operands", far.size()), std::move(names)};
  node.id = m_nextStub++;
  int from = addNode(std::move(node));
  m_graph.edges.push_back(DotEdge{from, target, -1, false, false, true, -1, -1});
}

void Builder::addEdge(const NodeInfo& from, const NodeInfo& to, int operandIndex, bool labelled) {
  bool control = operandIndex < 0;
  // Data enters an expanded fusion at the fused parameter with the operand's number. Without one (control
  // edges, or a fused computation missing that parameter) the edge points at the cluster's border.
  DotEdge edge{from.out, to.out, operandIndex, labelled, control, false, -1, -1};
  if (to.cluster >= 0) {
    auto param = static_cast<size_t>(operandIndex);
    if (!control && param < to.params.size() && to.params[param] >= 0) {
      edge.to = to.params[param];
    } else {
      edge.lhead = to.cluster;
    }
  }
  if (edge.to < 0) return;
  if (control && from.cluster >= 0) edge.ltail = from.cluster;
  m_graph.edges.push_back(edge);
}

}  // namespace

std::string DotGraph::dotName(int node) const {
  const DotNode& n = nodes[static_cast<size_t>(node)];
  return (n.isStub() ? "s" : "n") + std::to_string(n.id);
}

DotGraph buildDotGraph(const HloModule& module, const DotOptions& options) {
  return Builder(module, options).build();
}

}  // namespace fusionscope::core
