#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/hlo_module.h"
#include "core/ir/opcode.h"

namespace fusionscope::core {

class HloInstruction;

// What part of a module's entry computation a graph shows, and how. The defaults are the CLI's and the stage
// dumps'; the viewer adds collapsing, neighbourhoods, summary stubs and fast-layout attributes.
struct DotOptions {
  // Constants with at most this many elements are drawn inside their users' labels, not as nodes.
  int64_t inlineConstantMaxElements = 1;
  // Graph label shown at the top; empty means "MODULE, computation ENTRY". No label at all without showTitle
  // (the viewer draws no title, and an undrawn one would only leave space at the top of the layout).
  std::string title;
  bool showTitle = true;
  // In computations with more than `longEdgeMinInstructions` instructions, an edge that must span more than
  // `maxEdgeSpan` ranks is drawn as a short stub ("from NAME") next to its user. Training graphs
  // keep forward activations for the backward pass; left whole, those long edges make Graphviz's
  // crossing minimisation take minutes (mobilenet: > 5 min, with stubs 1.5 s) and are unreadable anyway.
  int64_t longEdgeMinInstructions = 200;
  int maxEdgeSpan = 12;
  // A user with more than this many cut operands (the ROOT tuple of a training step returns hundreds of weights)
  // gets one "from N far operands" stub instead of a row of stubs as wide as the module is long. 0: never.
  int maxStubsPerUser = 0;
  // Fusions are drawn as single nodes, except those named in `expanded`; otherwise as clusters of their fused
  // instructions, except those named in `collapsed`.
  bool collapseFusions = false;
  std::set<std::string> expanded;
  std::set<std::string> collapsed;
  // Neighbourhood mode: only instructions within `hops` operand/user steps of `focus` (an entry instruction).
  std::string focus;
  int hops = 2;
  // Above this many nodes Graphviz is told to trade some straightness for speed (newrank, bounded network-simplex
  // and crossing-minimisation iterations): mobilenet's 4k-node stage 0 goes from ~2 s to ~0.6 s of layout.
  // 0: never.
  int fastLayoutAbove = 0;

  bool operator==(const DotOptions&) const = default;
};

// One drawn box. An instruction node stands for an instruction of the entry or of an expanded fusion; a
// collapsed fusion is an instruction node too. Copies and stubs exist only in the entry when long edges are cut
// (DotOptions): a copy repeats a source (parameter, constant) next to a far user, a stub says "from NAME", a
// summary stub stands for all of one user's far operands.
//
// A grouped graph (groupByScope) adds group nodes: one box standing for every instruction of a collapsed scope group.
struct DotNode {
  enum class Kind { kInstruction, kCollapsedFusion, kCopy, kStub, kStubSummary, kGroup };
  Kind kind = Kind::kInstruction;
  // The instruction drawn (copy: the source; stub: the far operand; summary stub: the user); null for a group.
  const HloInstruction* instruction = nullptr;
  std::string group;  // a group node's scope path (ScopeGroup::path)
  // Label lines as plain text. Instructions: name (without "ROOT"), opcode line, detail lines, inlined
  // operands, shape[, literal]. Stubs: "from NAME"; summary stubs: "from N far operands" and the names.
  std::vector<std::string> lines;
  OpCategory category = OpCategory::kOther;
  bool root = false;  // root of its computation (never for copies and stubs)
  int cluster = -1;   // innermost enclosing cluster; -1 at the top level
  int id = 0;         // the DOT name is "n<id>" ("s<id>" for stubs and summary stubs)

  bool isStub() const { return kind == Kind::kStub || kind == Kind::kStubSummary; }
};

// An expanded fusion: a cluster around its fused instructions' nodes (DOT name "cluster_<index>"); in a grouped graph
// also an expanded scope group (fusion null, `group` its path) around what it holds.
struct DotCluster {
  const HloInstruction* fusion = nullptr;
  std::string group;       // an expanded group's scope path; empty for a fusion
  std::string groupLabel;  // and its name (ScopeGroup::label)
  std::vector<std::string> lines;  // name, opcode line, detail lines, shape
  int parent = -1;
  int depth = 0;  // 0 for a fusion of the entry
  // Index of the first node created inside the cluster: orders clusters among their siblings' nodes.
  int firstNode = 0;
  bool root = false;
};

struct DotEdge {
  int from = -1;  // node indices
  int to = -1;
  int operandIndex = -1;  // the user's operand slot; -1 for control edges and summary stubs
  bool labelled = false;  // the user has several operands: the slot is shown at the head
  bool control = false;
  bool stub = false;  // from a copy, a stub or a summary stub
  int lhead = -1;     // clipped at this cluster's border (an edge into an expanded fusion without a parameter)
  int ltail = -1;     // clipped at this cluster's border (a control edge from an expanded fusion)
  int count = 1;      // a grouped graph's merged edge: how many operand edges it stands for
};

// A module's entry computation as plain data: what the DOT writer renders and the viewer maps into its scene.
// Nodes are in creation order (text order; stubs and copies, each with one edge, after every instruction node);
// edges in DOT statement order. Points into the module, which must outlive it.
struct DotGraph {
  const HloModule* module = nullptr;
  std::string title;  // plain text; empty when not shown
  bool fastLayout = false;
  std::vector<DotNode> nodes;
  std::vector<DotCluster> clusters;
  std::vector<DotEdge> edges;
  // A grouped graph: each entry instruction a collapsed group hides -> that group's node.
  std::unordered_map<std::string, int> heldBy;

  // "n3" or "s1".
  std::string dotName(int node) const;
};

DotGraph buildDotGraph(const HloModule& module, const DotOptions& options = {});

// Fill, border and text colours (0xRRGGBB) of a category, taken from XLA's hlo_graph_dumper (Material palette)
// so that graphs look like the ones users already know from `--xla_dump_hlo_as_dot`. Used by the DOT writer and
// the viewer alike.
struct CategoryColors {
  uint32_t fill;
  uint32_t border;
  uint32_t text;
};
constexpr CategoryColors colorsFor(OpCategory category) {
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
    // Darker than parameters' orange so that random sources stand out from inputs.
    case OpCategory::kRandom: return {0xffb74d, 0xc88719, 0x000000};
    case OpCategory::kElementwise:
    case OpCategory::kTuple:
    case OpCategory::kOther: break;
  }
  return {0xffffff, 0x9e9e9e, 0x000000};
}
// Fusion clusters get a lighter fill than a (collapsed) fusion node; nested ones a shade darker so the
// nesting stays visible.
inline constexpr uint32_t kClusterFill = 0xf5f5f5;
inline constexpr uint32_t kNestedClusterFill = 0xeceff1;
inline constexpr uint32_t kClusterBorder = 0x9ea7aa;
// An expanded scope group's box: lighter still, so the fusions inside it stand out.
inline constexpr uint32_t kGroupClusterFill = 0xfafafa;

}  // namespace fusionscope::core
