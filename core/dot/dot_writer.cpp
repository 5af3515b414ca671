#include "core/dot/dot_writer.h"

#include <charconv>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "core/ir/attributes.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/literal.h"
#include "core/ir/opcode.h"
#include "core/ir/shape.h"

namespace fusionscope::core {
namespace {

// Fill, border and font colour of one category, taken from XLA's hlo_graph_dumper (Material palette) so
// that graphs look like the ones users already know from `--xla_dump_hlo_as_dot`.
struct NodeColors {
  std::string_view fill;
  std::string_view border;
  std::string_view font;
};

// Fusion clusters get a lighter fill than a (collapsed) fusion node; nested ones a shade darker so the
// nesting stays visible.
constexpr std::string_view kClusterFill = "#f5f5f5";
constexpr std::string_view kNestedClusterFill = "#eceff1";
constexpr std::string_view kClusterBorder = "#9ea7aa";

// Labels stay readable: long tuples, long computation lists and long literals are abbreviated.
constexpr int kMaxTupleElementsShown = 4;
constexpr size_t kMaxShortTupleChars = 60;
constexpr size_t kMaxCalledShown = 4;
constexpr int64_t kMaxPreviewElements = 8;
constexpr size_t kMaxPreviewChars = 48;
constexpr size_t kMaxTargetChars = 48;
// Guards against a fusion that (directly or not) calls its own computation in malformed input.
constexpr int kMaxFusionDepth = 32;

NodeColors colorsFor(OpCategory category) {
  switch (category) {
    case OpCategory::kDataMovement: return {"#c8e6c9", "#97b498", "black"};
    case OpCategory::kReduction: return {"#e1bee7", "#af8eb5", "black"};
    case OpCategory::kContraction: return {"#1565c0", "#003c8f", "white"};
    case OpCategory::kNormalization: return {"#fff9c4", "#cbc693", "black"};
    case OpCategory::kParameter: return {"#ffe0b2", "#cbae82", "black"};
    case OpCategory::kConstant: return {"#f5f5f5", "#9e9e9e", "black"};
    case OpCategory::kControlFlow: return {"#2e7d32", "#005005", "white"};
    case OpCategory::kFusion: return {"#cfd8dc", "#9ea7aa", "black"};
    case OpCategory::kCollective: return {"#bcaaa4", "#8c7b75", "black"};
    case OpCategory::kCustomCall: return {"#ffcdd2", "#cb9ca1", "black"};
    // Darker than parameters' orange so that random sources stand out from inputs.
    case OpCategory::kRandom: return {"#ffb74d", "#c88719", "black"};
    case OpCategory::kElementwise:
    case OpCategory::kTuple:
    case OpCategory::kOther: break;
  }
  return {"white", "#9e9e9e", "black"};
}

void appendInt(std::string& out, int64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

// Text inside an HTML-like label. Control characters would end the label in some Graphviz versions, so
// they become spaces.
// Both escapers copy runs of plain characters in one append: per-character `+=` was a third of writeDot.
bool isPlainHtml(char c) {
  return c != '&' && c != '<' && c != '>' && c != '"' && static_cast<unsigned char>(c) >= 0x20;
}
bool isPlainQuoted(char c) {
  return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20;
}

void appendHtml(std::string& out, std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t run = i;
    while (run < text.size() && isPlainHtml(text[run])) ++run;
    out.append(text.data() + i, run - i);
    if (run == text.size()) break;
    char c = text[run];
    i = run + 1;
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ' ';  // control character
    }
  }
}

// Text inside a double-quoted DOT string. Backslashes are doubled because Graphviz expands escString
// sequences (`\N`, `\G`, ...) in labels and tooltips.
void appendQuoted(std::string& out, std::string_view text) {
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    size_t run = i;
    while (run < text.size() && isPlainQuoted(text[run])) ++run;
    out.append(text.data() + i, run - i);
    if (run == text.size()) break;
    char c = text[run];
    i = run + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': break;
      default: out += ' ';  // other control character
    }
  }
  out += '"';
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

// Plain (unescaped) shape text. Arrays print as XLA does; tuples past a few elements print the first two
// and a count, e.g. `(f32[2], s32[] ... 40 elements)`, because a 200-element tuple would make the node
// wider than the graph.
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

// Where edges attach to a drawn instruction (`out` < 0: not drawn). For an expanded fusion, edges leave
// from the fused root's node and enter at the fused parameters' nodes; `cluster` is then its cluster number.
struct NodeInfo {
  int32_t out = -1;
  int32_t cluster = -1;
  uint32_t paramBegin = 0;
  uint32_t paramCount = 0;
};

// Writes one digraph. Nodes (and fusion clusters) are written in text order into m_out; edges go into
// m_edges and are appended at the end, so that an edge never declares a node inside the wrong cluster.
class DotWriter {
 public:
  DotWriter(const HloModule& module, const DotOptions& options)
      : m_module(module), m_options(options), m_info(static_cast<size_t>(module.instructionCount())) {}

  std::string write();

 private:
  void emitComputation(const HloComputation& computation, const HloInstruction* fusion, int depth);
  // Writes a node; returns its id. A copy (of a source drawn next to a far user) leaves m_info alone.
  int emitNode(const HloInstruction& inst, const HloInstruction* fusion, int depth, bool copy = false);
  void emitFusionCluster(const HloInstruction& fusion, const HloComputation& fused, int depth);
  void emitEdges(const HloComputation& computation);
  // Marks the operand slots of `computation` whose edges would span too many ranks (see DotOptions), and
  // the sources (parameters, constants, ...) all of whose edges are cut: those are drawn next to each user.
  void planLongEdges(const HloComputation& computation);
  // A cut edge: a copy of a source operand, or a "from NAME" stub, right above the user.
  void emitCutEdge(const HloInstruction& operand, const NodeInfo& to, int operandIndex, bool labelled);
  // operandIndex < 0 marks a control edge.
  void emitEdge(const NodeInfo& from, const NodeInfo& to, int operandIndex, bool labelled);
  bool canExpand(const HloInstruction& inst) const;

  void indent(int depth) { m_out.append(static_cast<size_t>(2 * depth + 2), ' '); }
  void appendNameLine(const HloInstruction& inst);
  void appendOpcodeLine(const HloInstruction& inst);
  void appendDetailLines(const HloInstruction& inst, bool skipFusedCalls);
  void appendInlinedOperandLines(const HloInstruction& inst, const HloInstruction* fusion);
  void appendTooltip(const HloInstruction& inst);
  void appendShapeLine(const Shape& shape);
  const NodeInfo* nodeInfo(const HloInstruction* inst) const {
    auto it = m_info.find(inst);
    return it == m_info.end() ? nullptr : &it->second;
  }

  const HloModule& m_module;
  const DotOptions& m_options;
  std::string m_out;
  std::string m_edges;
  std::string m_scratch;
  std::unordered_map<const HloInstruction*, NodeInfo> m_info;
  std::vector<int> m_paramIds;
  std::vector<const HloComputation*> m_expanding;
  int m_nextNode = 0;
  int m_nextCluster = 0;
  int m_nextStub = 0;
  const HloComputation* m_cutComputation = nullptr;
  std::vector<char> m_cutSlots;  // per operand slot of m_cutComputation, in instruction order
  std::unordered_set<const HloInstruction*> m_copiedSources;
};

std::string DotWriter::write() {
  const HloComputation* entry = m_module.entry();
  int64_t count = m_module.instructionCount();
  // About 350 bytes per node and 60 per edge in practice; one reservation avoids most regrowth.
  m_out.reserve(static_cast<size_t>(count) * 400 + 1024);
  m_edges.reserve(static_cast<size_t>(count) * 80);

  m_out += "digraph G {\n";
  m_out += "  graph [rankdir=TB compound=true labelloc=t fontname=\"Helvetica\" label=<";
  if (!m_options.title.empty()) {
    appendHtml(m_out, m_options.title);
  } else {
    appendHtml(m_out, m_module.name());
    if (entry != nullptr) {
      m_out += ", computation ";
      appendHtml(m_out, entry->name());
    } else {
      m_out += " (no ENTRY computation)";
    }
  }
  m_out += ">];\n";
  m_out += "  node [shape=rect style=\"rounded,filled\" fontname=\"Helvetica\" fontsize=11 margin=\"0.12,0.05\"];\n";
  m_out += "  edge [fontname=\"Helvetica\" labelfontsize=9 labeldistance=2 color=\"#616161\" arrowsize=0.7];\n";
  if (entry != nullptr) emitComputation(*entry, nullptr, 0);
  m_out += m_edges;
  m_out += "}\n";
  return std::move(m_out);
}

bool DotWriter::canExpand(const HloInstruction& inst) const {
  const HloComputation* fused = inst.fusedComputation();
  if (fused == nullptr || fused->root() == nullptr) return false;
  if (static_cast<int>(m_expanding.size()) >= kMaxFusionDepth) return false;
  for (const HloComputation* open : m_expanding) {
    if (open == fused) return false;
  }
  return true;
}

void DotWriter::emitComputation(const HloComputation& computation, const HloInstruction* fusion, int depth) {
  m_expanding.push_back(&computation);
  if (fusion == nullptr) planLongEdges(computation);
  for (const auto& owned : computation.instructions()) {
    const HloInstruction& inst = *owned;
    if (isInlinedConstant(inst, m_options) || m_copiedSources.contains(&inst)) {
      m_info[&inst] = NodeInfo{};
      continue;
    }
    if (canExpand(inst)) {
      emitFusionCluster(inst, *inst.fusedComputation(), depth);
    } else {
      emitNode(inst, fusion, depth);
    }
  }
  // Every node of this computation now has its id, so its edges can be written.
  emitEdges(computation);
  m_expanding.pop_back();
}

int DotWriter::emitNode(const HloInstruction& inst, const HloInstruction* fusion, int depth, bool copy) {
  int id = m_nextNode++;
  if (!copy) m_info[&inst] = NodeInfo{id, -1, 0, 0};
  bool unknown = inst.opcode() == HloOpcode::kUnknown;
  NodeColors colors = colorsFor(inst.category());

  indent(depth);
  m_out += 'n';
  appendInt(m_out, id);
  m_out += " [label=<";
  appendNameLine(inst);
  appendOpcodeLine(inst);
  appendDetailLines(inst, false);
  appendInlinedOperandLines(inst, fusion);
  appendShapeLine(inst.shape());
  if (inst.opcode() == HloOpcode::kConstant && inst.literal() != nullptr) {
    const Literal& literal = *inst.literal();
    bool decoded = literal.kind() == Literal::Kind::kFloat || literal.kind() == Literal::Kind::kInteger;
    if (decoded && inst.shape().elementCount() <= kMaxPreviewElements) {
      m_out += "<br/>";
      m_scratch.clear();
      appendTruncated(m_scratch, literal.toString(kMaxPreviewElements), kMaxPreviewChars);
      appendHtml(m_out, m_scratch);
    }
  }
  fmt::format_to(std::back_inserter(m_out), FMT_COMPILE("> fillcolor=\"{}\" color=\"{}\""), colors.fill, colors.border);
  if (colors.font != "black") fmt::format_to(std::back_inserter(m_out), FMT_COMPILE(" fontcolor=\"{}\""), colors.font);
  // An opcode we do not know is drawn plainly but marked, so nobody mistakes it for a modelled op.
  if (unknown) m_out += " style=\"rounded,filled,dashed\"";
  if (inst.opcode() == HloOpcode::kConstant) m_out += " fontsize=9";
  if (inst.isRoot()) m_out += fusion == nullptr ? " penwidth=3" : " penwidth=2";
  m_out += " tooltip=";
  appendTooltip(inst);
  m_out += " fs_name=";
  appendQuoted(m_out, inst.name());
  m_out += " fs_opcode=";
  appendQuoted(m_out, inst.opcodeString());
  m_out += " fs_category=\"";
  m_out += categoryName(inst.category());
  m_out += '"';
  if (fusion != nullptr) {
    // Names are unique per computation only; the viewer needs the computation to find a fused node.
    m_out += " fs_computation=";
    appendQuoted(m_out, inst.parent() != nullptr ? inst.parent()->name() : std::string());
  }
  if (copy) m_out += " fs_copy=\"true\"";
  m_out += "];\n";
  return id;
}

void DotWriter::emitFusionCluster(const HloInstruction& fusion, const HloComputation& fused, int depth) {
  int cluster = m_nextCluster++;
  indent(depth);
  fmt::format_to(std::back_inserter(m_out), FMT_COMPILE("subgraph cluster_{} {{\n"), cluster);
  indent(depth + 1);
  m_out += "label=<";
  appendNameLine(fusion);
  appendOpcodeLine(fusion);
  appendDetailLines(fusion, true);
  appendShapeLine(fusion.shape());
  m_out += ">;\n";
  indent(depth + 1);
  fmt::format_to(std::back_inserter(m_out),
                 FMT_COMPILE("style=\"rounded,filled\"; fillcolor=\"{}\"; color=\"{}\"; penwidth={}; labeljust=l; "
                             "fontname=\"Helvetica\"; fontsize=11;\n"),
                 depth == 0 ? kClusterFill : kNestedClusterFill, kClusterBorder, fusion.isRoot() && depth == 0 ? 3 : 1);
  indent(depth + 1);
  m_out += "tooltip=";
  appendTooltip(fusion);
  m_out += "; fs_name=";
  appendQuoted(m_out, fusion.name());
  m_out += "; fs_opcode=\"fusion\"; fs_category=\"fusion\";";
  if (depth > 0) {
    m_out += " fs_computation=";
    appendQuoted(m_out, fusion.parent() != nullptr ? fusion.parent()->name() : std::string());
    m_out += ';';
  }
  m_out += '\n';

  emitComputation(fused, &fusion, depth + 1);

  indent(depth);
  m_out += "}\n";

  NodeInfo info;
  info.cluster = cluster;
  info.out = m_info[fused.root()].out;
  std::vector<HloInstruction*> params = fused.parameters();
  info.paramBegin = static_cast<uint32_t>(m_paramIds.size());
  info.paramCount = static_cast<uint32_t>(params.size());
  for (const HloInstruction* param : params) {
    m_paramIds.push_back(param != nullptr ? m_info[param].out : -1);
  }
  m_info[&fusion] = info;
}

// An edge is cut when the user's longest-path rank is more than maxEdgeSpan below the operand's. That
// overestimates dot's real span for sources (which dot could pull down but in practice leaves high), and
// those are exactly the edges that make its crossing minimisation explode.
void DotWriter::planLongEdges(const HloComputation& computation) {
  m_cutComputation = &computation;
  m_cutSlots.clear();
  m_copiedSources.clear();
  if (computation.instructionCount() <= m_options.longEdgeMinInstructions || m_options.maxEdgeSpan <= 0) return;
  auto order = computation.postOrder();
  if (!order.ok()) return;
  std::unordered_map<const HloInstruction*, int64_t> rank(order->size());
  for (const HloInstruction* inst : *order) {
    int64_t r = 0;
    for (const HloInstruction* operand : inst->operands()) r = std::max(r, rank[operand] + 1);
    rank[inst] = r;
  }
  std::unordered_map<const HloInstruction*, int64_t> keptUses(order->size());
  for (const auto& owned : computation.instructions()) {
    for (const HloInstruction* operand : owned->operands()) {
      bool cut = rank[owned.get()] - rank[operand] > m_options.maxEdgeSpan;
      m_cutSlots.push_back(cut);
      keptUses[operand] += cut ? 0 : 1;
    }
  }
  for (const auto& owned : computation.instructions()) {
    const HloInstruction* inst = owned.get();
    bool source = inst->operandCount() == 0 && inst->controlPredecessors().empty() &&
                  inst->controlSuccessors().empty() && !inst->isRoot() && !inst->users().empty();
    if (source && keptUses[inst] == 0) m_copiedSources.insert(inst);
  }
}

void DotWriter::emitEdges(const HloComputation& computation) {
  bool cutting = &computation == m_cutComputation && !m_cutSlots.empty();
  size_t slot = 0;
  for (const auto& owned : computation.instructions()) {
    const HloInstruction& user = *owned;
    const NodeInfo* to = nodeInfo(&user);
    if (to == nullptr) {
      slot += static_cast<size_t>(user.operandCount());
      continue;
    }
    bool labelled = user.operandCount() > 1;
    for (int i = 0; i < user.operandCount(); ++i, ++slot) {
      const HloInstruction& operand = *user.operand(i);
      if (cutting && m_cutSlots[slot] && !isInlinedConstant(operand, m_options)) {
        emitCutEdge(operand, *to, i, labelled);
        continue;
      }
      const NodeInfo* from = nodeInfo(&operand);
      // Inlined constants have no node; operands from another computation (malformed input) are skipped.
      if (from == nullptr || from->out < 0) continue;
      emitEdge(*from, *to, i, labelled);
    }
    for (const HloInstruction* pred : user.controlPredecessors()) {
      const NodeInfo* from = nodeInfo(pred);
      if (from == nullptr || from->out < 0) continue;
      emitEdge(*from, *to, -1, false);
    }
  }
}

void DotWriter::emitCutEdge(const HloInstruction& operand, const NodeInfo& to, int operandIndex, bool labelled) {
  int target = to.out;
  if (to.cluster >= 0) {
    auto param = static_cast<size_t>(operandIndex);
    if (param < to.paramCount && m_paramIds[to.paramBegin + param] >= 0) target = m_paramIds[to.paramBegin + param];
  }
  if (target < 0) return;
  auto edges = std::back_inserter(m_edges);
  if (m_copiedSources.contains(&operand)) {
    // Edges are written after every cluster closed, so a node declared now sits at the top level.
    int copy = emitNode(operand, nullptr, 0, /*copy=*/true);
    fmt::format_to(edges, FMT_COMPILE("  n{} -> n{}"), copy, target);
    if (labelled) fmt::format_to(edges, FMT_COMPILE(" [headlabel=\"{}\"]"), operandIndex);
    m_edges += ";\n";
    return;
  }
  int stub = m_nextStub++;
  fmt::format_to(edges, FMT_COMPILE("  s{} [label=<from <b>"), stub);
  appendHtml(m_edges, operand.name());
  m_edges += "</b>> shape=rect style=\"dashed,rounded\" fontsize=9 color=\"#9e9e9e\" fs_stub_of=";
  appendQuoted(m_edges, operand.name());
  m_edges += "];\n";
  fmt::format_to(edges, FMT_COMPILE("  s{} -> n{} [style=dashed"), stub, target);
  if (labelled) fmt::format_to(edges, FMT_COMPILE(" headlabel=\"{}\""), operandIndex);
  m_edges += "];\n";
}

void DotWriter::emitEdge(const NodeInfo& from, const NodeInfo& to, int operandIndex, bool labelled) {
  bool control = operandIndex < 0;
  // Data enters an expanded fusion at the fused parameter with the operand's number. Without one (control
  // edges, or a fused computation missing that parameter) the edge points at the cluster's border.
  int target = to.out;
  bool toCluster = false;
  if (to.cluster >= 0) {
    auto param = static_cast<size_t>(operandIndex);
    if (!control && param < to.paramCount && m_paramIds[to.paramBegin + param] >= 0) {
      target = m_paramIds[to.paramBegin + param];
    } else {
      toCluster = true;
    }
  }
  if (target < 0) return;
  auto edges = std::back_inserter(m_edges);
  fmt::format_to(edges, FMT_COMPILE("  n{} -> n{}"), from.out, target);
  std::string_view separator = " [";
  auto attribute = [&]() {
    m_edges += separator;
    separator = " ";
    return edges;
  };
  if (labelled) fmt::format_to(attribute(), FMT_COMPILE("headlabel=\"{}\""), operandIndex);
  if (control) fmt::format_to(attribute(), FMT_COMPILE("style=dashed color=\"#9e9e9e\""));
  if (toCluster) fmt::format_to(attribute(), FMT_COMPILE("lhead=cluster_{}"), to.cluster);
  if (control && from.cluster >= 0) fmt::format_to(attribute(), FMT_COMPILE("ltail=cluster_{}"), from.cluster);
  m_edges += separator == " " ? "];\n" : ";\n";
}

void DotWriter::appendNameLine(const HloInstruction& inst) {
  if (inst.isRoot()) m_out += "<i>ROOT</i> ";
  m_out += "<b>";
  appendHtml(m_out, inst.name());
  m_out += "</b><br/>";
}

void DotWriter::appendOpcodeLine(const HloInstruction& inst) {
  appendHtml(m_out, inst.opcodeString());
  const InstructionAttributes& attrs = inst.attributes();
  m_scratch.clear();
  switch (inst.opcode()) {
    case HloOpcode::kParameter:
      if (inst.parameterNumber() >= 0) appendInt(m_scratch, inst.parameterNumber());
      break;
    case HloOpcode::kFusion:
      if (attrs.fusionKind) m_scratch += fusionKindName(*attrs.fusionKind);
      break;
    case HloOpcode::kCompare:
      if (attrs.direction) m_scratch += comparisonDirectionName(*attrs.direction);
      break;
    case HloOpcode::kCustomCall:
      if (attrs.customCallTarget) appendTruncated(m_scratch, *attrs.customCallTarget, kMaxTargetChars);
      break;
    case HloOpcode::kGetTupleElement:
      if (attrs.tupleIndex) appendInt(m_scratch, *attrs.tupleIndex);
      break;
    case HloOpcode::kIota:
      if (attrs.iotaDimension) {
        m_scratch += "dim=";
        appendInt(m_scratch, *attrs.iotaDimension);
      }
      break;
    default:
      if (attrs.dimensions) {
        m_scratch += "dims=";
        appendIntList(m_scratch, *attrs.dimensions);
      }
      break;
  }
  if (!m_scratch.empty()) {
    m_out += ' ';
    appendHtml(m_out, m_scratch);
  }
  m_out += "<br/>";
}

void DotWriter::appendDetailLines(const HloInstruction& inst, bool skipFusedCalls) {
  const InstructionAttributes& attrs = inst.attributes();
  auto lhsRhs = [&](std::string_view what, const std::vector<int64_t>& lhs, const std::vector<int64_t>& rhs) {
    if (lhs.empty() && rhs.empty()) return;
    fmt::format_to(std::back_inserter(m_out), FMT_COMPILE("{} lhs={{{}}} rhs={{{}}}<br/>"), what, fmt::join(lhs, ","),
                   fmt::join(rhs, ","));
  };
  if (attrs.dot) {
    lhsRhs("contracting", attrs.dot->lhsContracting, attrs.dot->rhsContracting);
    lhsRhs("batch", attrs.dot->lhsBatch, attrs.dot->rhsBatch);
  }
  if (inst.opcode() == HloOpcode::kConvolution) {
    if (const std::string* labels = attrs.findRaw("dim_labels")) {
      m_out += "dim_labels=";
      appendHtml(m_out, *labels);
      m_out += "<br/>";
    }
  }
  if (attrs.slice) {
    m_out += "slice={";
    for (size_t i = 0; i < attrs.slice->size(); ++i) {
      const SliceDim& dim = (*attrs.slice)[i];
      fmt::format_to(std::back_inserter(m_out), FMT_COMPILE("{}[{}:{}"), i > 0 ? ", " : "", dim.start, dim.limit);
      if (dim.stride != 1) fmt::format_to(std::back_inserter(m_out), FMT_COMPILE(":{}"), dim.stride);
      m_out += ']';
    }
    m_out += "}<br/>";
  }
  // Called computations other than an expanded fusion body are named, not drawn.
  for (const CalledComputationRef& ref : inst.calledComputationRefs()) {
    if (skipFusedCalls && ref.key == "calls") continue;
    m_scratch.clear();
    m_scratch += ref.key;
    m_scratch += '=';
    bool braced = ref.braced || ref.computations.size() != 1;
    if (braced) m_scratch += '{';
    for (size_t i = 0; i < ref.computations.size() && i < kMaxCalledShown; ++i) {
      if (i > 0) m_scratch += ", ";
      m_scratch += ref.computations[i] != nullptr ? std::string_view(ref.computations[i]->name()) : "?";
    }
    if (ref.computations.size() > kMaxCalledShown) {
      m_scratch += ", ... ";
      appendInt(m_scratch, static_cast<int64_t>(ref.computations.size()));
      m_scratch += " total";
    }
    if (braced) m_scratch += '}';
    appendHtml(m_out, m_scratch);
    m_out += "<br/>";
  }
}

void DotWriter::appendInlinedOperandLines(const HloInstruction& inst, const HloInstruction* fusion) {
  auto line = [&](int index, const HloInstruction& constant) {
    m_scratch.clear();
    fmt::format_to(std::back_inserter(m_scratch), FMT_COMPILE("operand {} = "), index);
    appendInlinedValue(m_scratch, constant);
    appendHtml(m_out, m_scratch);
    m_out += "<br/>";
  };
  for (int i = 0; i < inst.operandCount(); ++i) {
    const HloInstruction* operand = inst.operand(i);
    if (isInlinedConstant(*operand, m_options)) line(i, *operand);
  }
  // A fused parameter stands for the fusion's operand of the same number; when that operand is an inlined
  // constant its value is shown here, where the edge would have arrived.
  if (fusion != nullptr && inst.opcode() == HloOpcode::kParameter) {
    int64_t number = inst.parameterNumber();
    if (number >= 0 && number < fusion->operandCount()) {
      const HloInstruction* operand = fusion->operand(static_cast<int>(number));
      if (isInlinedConstant(*operand, m_options)) line(static_cast<int>(number), *operand);
    }
  }
}

void DotWriter::appendShapeLine(const Shape& shape) {
  m_scratch.clear();
  appendShapeText(m_scratch, shape);
  appendHtml(m_out, m_scratch);
}

void DotWriter::appendTooltip(const HloInstruction& inst) {
  m_scratch.clear();
  auto out = std::back_inserter(m_scratch);
  fmt::format_to(out, FMT_COMPILE("{} = {}"), inst.name(), inst.opcodeString());
  if (const OpMetadata* metadata = inst.metadata()) {
    if (!metadata->opType.empty()) fmt::format_to(out, FMT_COMPILE("\nop_type: {}"), metadata->opType);
    if (!metadata->opName.empty()) fmt::format_to(out, FMT_COMPILE("\nop_name: {}"), metadata->opName);
    if (std::optional<SourceLocation> source = m_module.sourceLocation(*metadata))
      fmt::format_to(out, FMT_COMPILE("\n{}"), source->toString());
  }
  appendQuoted(m_out, m_scratch);
}

}  // namespace

std::string writeDot(const HloModule& module, const DotOptions& options) {
  DotWriter writer(module, options);
  return writer.write();
}

}  // namespace fusionscope::core
