#include "core/dot/dot_writer.h"

#include <charconv>
#include <string_view>
#include <unordered_map>
#include <vector>

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

constexpr NodeColors kWhite{"white", "#9e9e9e", "black"};
constexpr NodeColors kGreen{"#c8e6c9", "#97b498", "black"};
constexpr NodeColors kPurple{"#e1bee7", "#af8eb5", "black"};
constexpr NodeColors kDarkBlue{"#1565c0", "#003c8f", "white"};
constexpr NodeColors kYellow{"#fff9c4", "#cbc693", "black"};
constexpr NodeColors kOrange{"#ffe0b2", "#cbae82", "black"};
constexpr NodeColors kDarkOrange{"#ffb74d", "#c88719", "black"};
constexpr NodeColors kDarkGreen{"#2e7d32", "#005005", "white"};
constexpr NodeColors kBrown{"#bcaaa4", "#8c7b75", "black"};
constexpr NodeColors kRed{"#ffcdd2", "#cb9ca1", "black"};
constexpr NodeColors kGray{"#cfd8dc", "#9ea7aa", "black"};
constexpr NodeColors kLightGray{"#f5f5f5", "#9e9e9e", "black"};

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
    case OpCategory::kElementwise: return kWhite;
    case OpCategory::kDataMovement: return kGreen;
    case OpCategory::kReduction: return kPurple;
    case OpCategory::kContraction: return kDarkBlue;
    case OpCategory::kNormalization: return kYellow;
    case OpCategory::kParameter: return kOrange;
    case OpCategory::kConstant: return kLightGray;
    case OpCategory::kControlFlow: return kDarkGreen;
    case OpCategory::kFusion: return kGray;
    case OpCategory::kCollective: return kBrown;
    case OpCategory::kCustomCall: return kRed;
    case OpCategory::kRandom: return kDarkOrange;
    case OpCategory::kTuple: return kWhite;
    case OpCategory::kOther: return kWhite;
  }
  return kWhite;
}

void appendInt(std::string& out, int64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

// Text inside an HTML-like label. Control characters would end the label in some Graphviz versions, so
// they become spaces.
void appendHtml(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
}

// Text inside a double-quoted DOT string. Backslashes are doubled because Graphviz expands escString
// sequences (`\N`, `\G`, ...) in labels and tooltips.
void appendQuoted(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': break;
      default: out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
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
  if (text.size() <= maxChars) {
    out += text;
    return;
  }
  out += text.substr(0, maxChars);
  out += "...";
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
    if (element.isTuple()) {
      appendShapeText(out, element);
    } else {
      element.appendTo(out, false);
    }
  }
  out += " ... ";
  appendInt(out, shape.tupleSize());
  out += " elements)";
}

bool hasControlEdges(const HloInstruction& inst) {
  return !inst.controlPredecessors().empty() || !inst.controlSuccessors().empty();
}

// Small constants are noise as nodes (every reduce has its init value), so they become a line in each
// user's label instead, as in XLA's dumps. Roots, unused constants and constants on control edges keep
// their node: otherwise they would vanish from the picture.
bool isInlinedConstant(const HloInstruction& inst, const DotOptions& options) {
  if (inst.opcode() != HloOpcode::kConstant || inst.isRoot() || inst.users().empty() || hasControlEdges(inst)) {
    return false;
  }
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

// Writes one digraph. Nodes (and fusion clusters) are written in text order into m_out; edges go into
// m_edges and are appended at the end, so that an edge never declares a node inside the wrong cluster.
class DotWriter {
 public:
  DotWriter(const HloModule& module, const DotOptions& options) : m_module(module), m_options(options) {}

  std::string write();

 private:
  // Where edges attach to a drawn instruction. For an expanded fusion, edges leave from the fused root's
  // node and enter at the fused parameters' nodes; `cluster` is then its cluster number.
  struct NodeInfo {
    int out = -1;
    int cluster = -1;
    size_t paramBegin = 0;
    size_t paramCount = 0;
  };

  void emitComputation(const HloComputation& computation, const HloInstruction* fusion, int depth);
  void emitNode(const HloInstruction& inst, const HloInstruction* fusion, int depth);
  void emitFusionCluster(const HloInstruction& fusion, const HloComputation& fused, int depth);
  void emitEdges(const HloComputation& computation);
  // operandIndex < 0 marks a control edge.
  void emitEdge(const NodeInfo& from, const NodeInfo& to, int operandIndex, bool labelled);
  bool canExpand(const HloInstruction& inst) const;

  void appendNodeId(std::string& out, int id) const {
    out += 'n';
    appendInt(out, id);
  }
  void indent(int depth) { m_out.append(static_cast<size_t>(2 * depth + 2), ' '); }
  void appendOpcodeLine(const HloInstruction& inst);
  void appendDetailLines(const HloInstruction& inst, bool skipFusedCalls);
  void appendInlinedOperandLines(const HloInstruction& inst, const HloInstruction* fusion);
  void appendTooltip(const HloInstruction& inst);
  void appendShapeLine(const Shape& shape);

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
};

std::string DotWriter::write() {
  const HloComputation* entry = m_module.entry();
  int64_t count = m_module.instructionCount();
  // About 350 bytes per node and 60 per edge in practice; one reservation avoids most regrowth.
  m_out.reserve(static_cast<size_t>(count) * 400 + 1024);
  m_edges.reserve(static_cast<size_t>(count) * 80);
  m_info.reserve(static_cast<size_t>(count));

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
  for (const auto& owned : computation.instructions()) {
    const HloInstruction& inst = *owned;
    if (isInlinedConstant(inst, m_options)) {
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

void DotWriter::emitNode(const HloInstruction& inst, const HloInstruction* fusion, int depth) {
  int id = m_nextNode++;
  m_info[&inst] = NodeInfo{id, -1, 0, 0};
  bool unknown = inst.opcode() == HloOpcode::kUnknown;
  NodeColors colors = colorsFor(inst.category());

  indent(depth);
  appendNodeId(m_out, id);
  m_out += " [label=<";
  if (inst.isRoot()) m_out += "<i>ROOT</i> ";
  m_out += "<b>";
  appendHtml(m_out, inst.name());
  m_out += "</b><br/>";
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
  m_out += "> fillcolor=\"";
  m_out += colors.fill;
  m_out += "\" color=\"";
  m_out += colors.border;
  m_out += '"';
  if (colors.font != "black") {
    m_out += " fontcolor=\"";
    m_out += colors.font;
    m_out += '"';
  }
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
  m_out += "];\n";
}

void DotWriter::emitFusionCluster(const HloInstruction& fusion, const HloComputation& fused, int depth) {
  int cluster = m_nextCluster++;
  indent(depth);
  m_out += "subgraph cluster_";
  appendInt(m_out, cluster);
  m_out += " {\n";
  indent(depth + 1);
  m_out += "label=<";
  if (fusion.isRoot()) m_out += "<i>ROOT</i> ";
  m_out += "<b>";
  appendHtml(m_out, fusion.name());
  m_out += "</b><br/>";
  appendOpcodeLine(fusion);
  appendDetailLines(fusion, true);
  appendShapeLine(fusion.shape());
  m_out += ">;\n";
  indent(depth + 1);
  m_out += "style=\"rounded,filled\"; fillcolor=\"";
  m_out += depth == 0 ? kClusterFill : kNestedClusterFill;
  m_out += "\"; color=\"";
  m_out += kClusterBorder;
  m_out += fusion.isRoot() && depth == 0 ? "\"; penwidth=3; " : "\"; penwidth=1; ";
  m_out += "labeljust=l; fontname=\"Helvetica\"; fontsize=11;\n";
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
  info.paramBegin = m_paramIds.size();
  info.paramCount = params.size();
  for (const HloInstruction* param : params) {
    m_paramIds.push_back(param != nullptr ? m_info[param].out : -1);
  }
  m_info[&fusion] = info;
}

void DotWriter::emitEdges(const HloComputation& computation) {
  for (const auto& owned : computation.instructions()) {
    const HloInstruction& user = *owned;
    auto userIt = m_info.find(&user);
    if (userIt == m_info.end()) continue;
    const NodeInfo& to = userIt->second;
    bool labelled = user.operandCount() > 1;
    for (int i = 0; i < user.operandCount(); ++i) {
      auto it = m_info.find(user.operand(i));
      // Inlined constants have no node; operands from another computation (malformed input) are skipped.
      if (it == m_info.end() || it->second.out < 0) continue;
      emitEdge(it->second, to, i, labelled);
    }
    for (const HloInstruction* pred : user.controlPredecessors()) {
      auto it = m_info.find(pred);
      if (it == m_info.end() || it->second.out < 0) continue;
      emitEdge(it->second, to, -1, false);
    }
  }
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
  m_edges += "  ";
  appendNodeId(m_edges, from.out);
  m_edges += " -> ";
  appendNodeId(m_edges, target);
  bool open = false;
  auto attribute = [&](std::string_view text) {
    m_edges += open ? " " : " [";
    open = true;
    m_edges += text;
  };
  if (labelled) {
    attribute("headlabel=\"");
    appendInt(m_edges, operandIndex);
    m_edges += '"';
  }
  if (control) attribute("style=dashed color=\"#9e9e9e\"");
  if (toCluster) {
    attribute("lhead=cluster_");
    appendInt(m_edges, to.cluster);
  }
  if (control && from.cluster >= 0) {
    attribute("ltail=cluster_");
    appendInt(m_edges, from.cluster);
  }
  m_edges += open ? "];\n" : ";\n";
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
  if (attrs.dot) {
    const DotDimensionNumbers& dims = *attrs.dot;
    if (!dims.lhsContracting.empty() || !dims.rhsContracting.empty()) {
      m_out += "contracting lhs=";
      m_scratch.clear();
      appendIntList(m_scratch, dims.lhsContracting);
      m_scratch += " rhs=";
      appendIntList(m_scratch, dims.rhsContracting);
      m_out += m_scratch;
      m_out += "<br/>";
    }
    if (!dims.lhsBatch.empty() || !dims.rhsBatch.empty()) {
      m_out += "batch lhs=";
      m_scratch.clear();
      appendIntList(m_scratch, dims.lhsBatch);
      m_scratch += " rhs=";
      appendIntList(m_scratch, dims.rhsBatch);
      m_out += m_scratch;
      m_out += "<br/>";
    }
  }
  if (inst.opcode() == HloOpcode::kConvolution) {
    if (const std::string* labels = attrs.findRaw("dim_labels")) {
      m_out += "dim_labels=";
      appendHtml(m_out, *labels);
      m_out += "<br/>";
    }
  }
  if (attrs.slice) {
    m_scratch.clear();
    m_scratch += "slice={";
    for (size_t i = 0; i < attrs.slice->size(); ++i) {
      const SliceDim& dim = (*attrs.slice)[i];
      if (i > 0) m_scratch += ", ";
      m_scratch += '[';
      appendInt(m_scratch, dim.start);
      m_scratch += ':';
      appendInt(m_scratch, dim.limit);
      if (dim.stride != 1) {
        m_scratch += ':';
        appendInt(m_scratch, dim.stride);
      }
      m_scratch += ']';
    }
    m_scratch += '}';
    appendHtml(m_out, m_scratch);
    m_out += "<br/>";
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
    m_scratch += "operand ";
    appendInt(m_scratch, index);
    m_scratch += " = ";
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
  m_scratch += inst.name();
  m_scratch += " = ";
  m_scratch += inst.opcodeString();
  if (const OpMetadata* metadata = inst.metadata()) {
    if (!metadata->opType.empty()) {
      m_scratch += "\nop_type: ";
      m_scratch += metadata->opType;
    }
    if (!metadata->opName.empty()) {
      m_scratch += "\nop_name: ";
      m_scratch += metadata->opName;
    }
    if (!metadata->sourceFile.empty()) {
      m_scratch += '\n';
      m_scratch += metadata->sourceFile;
      if (metadata->sourceLine) {
        m_scratch += ':';
        appendInt(m_scratch, *metadata->sourceLine);
      }
    }
  }
  appendQuoted(m_out, m_scratch);
}

}  // namespace

std::string writeDot(const HloModule& module, const DotOptions& options) {
  DotWriter writer(module, options);
  return writer.write();
}

}  // namespace fusionscope::core
