#include "core/dot/dot_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <vector>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/opcode.h"

namespace fusionscope::core {
namespace {

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

// A palette colour as DOT spells it: the names XLA's dumps use for white and black, "#rrggbb" otherwise.
void appendColor(std::string& out, uint32_t rgb) {
  if (rgb == 0xffffff) {
    out += "white";
  } else if (rgb == 0x000000) {
    out += "black";
  } else {
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("#{:06x}"), rgb);
  }
}

std::string_view parentName(const HloInstruction& inst) {
  return inst.parent() != nullptr ? std::string_view(inst.parent()->name()) : std::string_view();
}

// Renders one DotGraph. The clusters and instruction nodes come first, nested as the graph nests them, then the
// copies; then the edges, each stub declared right before its edge. Declared after every cluster closed, copies and
// stubs sit at the top level, and an edge never declares a node inside the wrong cluster.
class DotRenderer {
 public:
  explicit DotRenderer(const DotGraph& graph) : m_graph(graph) {}

  std::string render();

 private:
  void renderScope(int cluster, int depth);
  void renderCluster(int cluster);
  void renderNode(int node, int depth);
  void renderStub(int node);
  void renderEdge(const DotEdge& edge);
  void appendLabel(const std::vector<std::string>& lines, bool root);
  void appendTooltip(const HloInstruction& inst);
  void indent(int depth) { m_out.append(static_cast<size_t>(2 * depth + 2), ' '); }

  const DotGraph& m_graph;
  std::string m_out;
  std::string m_scratch;
  // Per scope (cluster + 1): its child clusters and its instruction nodes, each in creation order.
  std::vector<std::vector<int>> m_childClusters;
  std::vector<std::vector<int>> m_scopeNodes;
};

std::string DotRenderer::render() {
  size_t scopes = m_graph.clusters.size() + 1;
  m_childClusters.resize(scopes);
  m_scopeNodes.resize(scopes);
  for (size_t i = 0; i < m_graph.clusters.size(); ++i) {
    m_childClusters[static_cast<size_t>(m_graph.clusters[i].parent + 1)].push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < m_graph.nodes.size(); ++i) {
    const DotNode& node = m_graph.nodes[i];
    if (node.kind == DotNode::Kind::kInstruction || node.kind == DotNode::Kind::kCollapsedFusion ||
        node.kind == DotNode::Kind::kGroup) {
      m_scopeNodes[static_cast<size_t>(node.cluster + 1)].push_back(static_cast<int>(i));
    }
  }
  // About 350 bytes per node and 60 per edge in practice; one reservation avoids most regrowth.
  m_out.reserve(m_graph.nodes.size() * 400 + m_graph.edges.size() * 80 + 1024);

  m_out += "digraph G {\n";
  m_out += "  graph [rankdir=TB compound=true";
  if (!m_graph.title.empty()) m_out += " labelloc=t";
  m_out += " fontname=\"Helvetica\"";
  if (!m_graph.title.empty()) {
    m_out += " label=<";
    appendHtml(m_out, m_graph.title);
    m_out += '>';
  }
  if (m_graph.fastLayout) m_out += " newrank=true nslimit=0.2 nslimit1=0.2 mclimit=0.5";
  m_out += "];\n";
  m_out += "  node [shape=rect style=\"rounded,filled\" fontname=\"Helvetica\" fontsize=11 margin=\"0.12,0.05\"];\n";
  m_out += "  edge [fontname=\"Helvetica\" labelfontsize=9 labeldistance=2 color=\"#616161\" arrowsize=0.7];\n";
  renderScope(-1, 0);
  for (size_t i = 0; i < m_graph.nodes.size(); ++i) {
    if (m_graph.nodes[i].kind == DotNode::Kind::kCopy) renderNode(static_cast<int>(i), 0);
  }
  for (const DotEdge& edge : m_graph.edges) {
    if (m_graph.nodes[static_cast<size_t>(edge.from)].isStub()) renderStub(edge.from);
    renderEdge(edge);
  }
  m_out += "}\n";
  return std::move(m_out);
}

// A scope's clusters and nodes in the order they were made: a cluster goes before the nodes made after it opened.
void DotRenderer::renderScope(int cluster, int depth) {
  const std::vector<int>& clusters = m_childClusters[static_cast<size_t>(cluster + 1)];
  const std::vector<int>& nodes = m_scopeNodes[static_cast<size_t>(cluster + 1)];
  size_t c = 0;
  for (int node : nodes) {
    while (c < clusters.size() && m_graph.clusters[static_cast<size_t>(clusters[c])].firstNode <= node) {
      renderCluster(clusters[c++]);
    }
    renderNode(node, depth);
  }
  while (c < clusters.size()) renderCluster(clusters[c++]);
}

void DotRenderer::renderCluster(int cluster) {
  const DotCluster& box = m_graph.clusters[static_cast<size_t>(cluster)];
  int depth = box.depth;
  indent(depth);
  fmt::format_to(std::back_inserter(m_out), FMT_COMPILE("subgraph cluster_{} {{\n"), cluster);
  if (box.fusion == nullptr) {
    // An expanded scope group: a light box around what it holds, named by its scope.
    indent(depth + 1);
    m_out += "label=<";
    appendLabel(box.lines, false);
    m_out += ">;\n";
    indent(depth + 1);
    m_out += "style=\"rounded,filled\"; fillcolor=\"";
    appendColor(m_out, kGroupClusterFill);
    m_out += "\"; color=\"";
    appendColor(m_out, kClusterBorder);
    m_out += "\"; labeljust=l; fontname=\"Helvetica\"; fontsize=11; fs_group=";
    appendQuoted(m_out, box.group);
    m_out += ";\n";
    renderScope(cluster, depth + 1);
    indent(depth);
    m_out += "}\n";
    return;
  }
  const HloInstruction& fusion = *box.fusion;
  indent(depth + 1);
  m_out += "label=<";
  appendLabel(box.lines, box.root);
  m_out += ">;\n";
  indent(depth + 1);
  m_out += "style=\"rounded,filled\"; fillcolor=\"";
  appendColor(m_out, depth == 0 ? kClusterFill : kNestedClusterFill);
  m_out += "\"; color=\"";
  appendColor(m_out, kClusterBorder);
  fmt::format_to(std::back_inserter(m_out),
                 FMT_COMPILE("\"; penwidth={}; labeljust=l; fontname=\"Helvetica\"; fontsize=11;\n"),
                 box.root && depth == 0 ? 3 : 1);
  indent(depth + 1);
  m_out += "tooltip=";
  appendTooltip(fusion);
  m_out += "; fs_name=";
  appendQuoted(m_out, fusion.name());
  m_out += "; fs_opcode=\"fusion\"; fs_category=\"fusion\";";
  if (depth > 0) {
    m_out += " fs_computation=";
    appendQuoted(m_out, parentName(fusion));
    m_out += ';';
  }
  m_out += '\n';

  renderScope(cluster, depth + 1);

  indent(depth);
  m_out += "}\n";
}

void DotRenderer::renderNode(int index, int depth) {
  const DotNode& node = m_graph.nodes[static_cast<size_t>(index)];
  CategoryColors colors = colorsFor(node.category);
  // Name, label and the category's colours; then what only instructions or only groups have.
  indent(depth);
  m_out += 'n';
  appendInt(m_out, node.id);
  m_out += " [label=<";
  appendLabel(node.lines, node.root);
  m_out += "> fillcolor=\"";
  appendColor(m_out, colors.fill);
  m_out += "\" color=\"";
  appendColor(m_out, colors.border);
  m_out += '"';
  if (colors.text != 0x000000) {
    m_out += " fontcolor=\"";
    appendColor(m_out, colors.text);
    m_out += '"';
  }
  if (node.kind == DotNode::Kind::kGroup) {
    // A collapsed scope group: one wide box standing for what it holds.
    m_out += " margin=\"0.25,0.12\" penwidth=2 fs_group=";
    appendQuoted(m_out, node.group);
    m_out += "];\n";
    return;
  }
  const HloInstruction& inst = *node.instruction;
  // An opcode we do not know is drawn plainly but marked, so nobody mistakes it for a modelled op.
  if (inst.opcode() == HloOpcode::kUnknown) m_out += " style=\"rounded,filled,dashed\"";
  if (inst.opcode() == HloOpcode::kConstant) m_out += " fontsize=9";
  if (node.root) m_out += node.cluster < 0 ? " penwidth=3" : " penwidth=2";
  m_out += " tooltip=";
  appendTooltip(inst);
  m_out += " fs_name=";
  appendQuoted(m_out, inst.name());
  m_out += " fs_opcode=";
  appendQuoted(m_out, inst.opcodeString());
  m_out += " fs_category=\"";
  m_out += categoryName(node.category);
  m_out += '"';
  if (node.cluster >= 0) {
    // Names are unique per computation only; the viewer needs the computation to find a fused node.
    m_out += " fs_computation=";
    appendQuoted(m_out, parentName(inst));
  }
  if (node.kind == DotNode::Kind::kCopy) m_out += " fs_copy=\"true\"";
  m_out += "];\n";
}

void DotRenderer::renderStub(int index) {
  const DotNode& node = m_graph.nodes[static_cast<size_t>(index)];
  fmt::format_to(std::back_inserter(m_out), FMT_COMPILE("  s{} [label=<"), node.id);
  if (node.kind == DotNode::Kind::kStub) {
    m_out += "from <b>";
    appendHtml(m_out, node.instruction->name());
    m_out += "</b>";
  } else {
    for (size_t i = 0; i < node.lines.size(); ++i) {
      if (i > 0) m_out += "<br/>";
      appendHtml(m_out, node.lines[i]);
    }
  }
  m_out += "> shape=rect style=\"dashed,rounded\" fontsize=9 color=\"#9e9e9e\"";
  if (node.kind == DotNode::Kind::kStub) {
    m_out += " fs_stub_of=";
    appendQuoted(m_out, node.instruction->name());
  }
  m_out += "];\n";
}

void DotRenderer::renderEdge(const DotEdge& edge) {
  const DotNode& from = m_graph.nodes[static_cast<size_t>(edge.from)];
  const DotNode& to = m_graph.nodes[static_cast<size_t>(edge.to)];
  auto out = std::back_inserter(m_out);
  fmt::format_to(out, FMT_COMPILE("  {}{} -> n{}"), from.isStub() ? 's' : 'n', from.id, to.id);
  std::string_view separator = " [";
  auto attribute = [&]() {
    m_out += separator;
    separator = " ";
    return out;
  };
  if (from.isStub()) fmt::format_to(attribute(), FMT_COMPILE("style=dashed"));
  if (edge.labelled) fmt::format_to(attribute(), FMT_COMPILE("headlabel=\"{}\""), edge.operandIndex);
  if (edge.control) fmt::format_to(attribute(), FMT_COMPILE("style=dashed color=\"#9e9e9e\""));
  if (edge.lhead >= 0) fmt::format_to(attribute(), FMT_COMPILE("lhead=cluster_{}"), edge.lhead);
  if (edge.ltail >= 0) fmt::format_to(attribute(), FMT_COMPILE("ltail=cluster_{}"), edge.ltail);
  // A grouped graph's merged edge: thicker with its count, and the count at its head.
  if (edge.count > 1) {
    const int width = std::min(4, 1 + static_cast<int>(std::log2(edge.count)));
    fmt::format_to(attribute(), FMT_COMPILE("penwidth={} headlabel=\"×{}\" fs_count={}"), width, edge.count,
                   edge.count);
  }
  m_out += separator == " " ? "];\n" : ";\n";
}

// The first line is the name, in bold, after an italic ROOT for a computation's root.
void DotRenderer::appendLabel(const std::vector<std::string>& lines, bool root) {
  if (lines.empty()) return;
  if (root) m_out += "<i>ROOT</i> ";
  m_out += "<b>";
  appendHtml(m_out, lines.front());
  m_out += "</b>";
  for (size_t i = 1; i < lines.size(); ++i) {
    m_out += "<br/>";
    appendHtml(m_out, lines[i]);
  }
}

void DotRenderer::appendTooltip(const HloInstruction& inst) {
  m_scratch.clear();
  auto out = std::back_inserter(m_scratch);
  fmt::format_to(out, FMT_COMPILE("{} = {}"), inst.name(), inst.opcodeString());
  if (const OpMetadata* metadata = inst.metadata()) {
    if (!metadata->opType.empty()) fmt::format_to(out, FMT_COMPILE("\nop_type: {}"), metadata->opType);
    if (!metadata->opName.empty()) fmt::format_to(out, FMT_COMPILE("\nop_name: {}"), metadata->opName);
    if (m_graph.module != nullptr) {
      if (std::optional<SourceLocation> source = m_graph.module->sourceLocation(*metadata))
        fmt::format_to(out, FMT_COMPILE("\n{}"), source->toString());
    }
  }
  appendQuoted(m_out, m_scratch);
}

}  // namespace

std::string renderDot(const DotGraph& graph) {
  DotRenderer renderer(graph);
  return renderer.render();
}

std::string writeDot(const HloModule& module, const DotOptions& options) {
  return renderDot(buildDotGraph(module, options));
}

}  // namespace fusionscope::core
