#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/dot/dot_graph.h"
#include "core/ir/opcode.h"

namespace fusionscope::core {

// A scope group: the instructions of a computation that share a prefix of their `metadata={op_name=...}` scope
// path (JAX `jit(step)/transpose(jvp(block_0))/attn/dot_general` -> groups `jit(step)`, `.../transpose(jvp(block_0))`
// and `.../attn`), or, for modules whose op_names carry no hierarchy, a stretch of consecutive instructions
// (ScopeTree::Source::kStructure). Drawn collapsed as one node, expanded as a labelled box around its members.
struct ScopeGroup {
  std::string path;    // unique key: the scope path ("jit(step)/jvp(block_0)"), or "#first-last" for a stretch
  std::string label;   // what the node says first: the last path component, or a stretch's dominant op_name
  std::string detail;  // a stretch's instruction range ("#120-193"); empty for op_name scopes
  int parent = -1;
  int depth = 0;
  bool stretch = false;  // a stretch of the text order (not an op_name scope), e.g. "jit(step)/#1-40"
  std::vector<int> children;                                 // child groups
  int instructionCount = 0;                                  // every instruction inside, nested groups included
  int directCount = 0;                                       // instructions whose innermost group this is
  std::vector<std::pair<OpCategory, int>> categories;  // by count, most frequent first
};

// The scope hierarchy of one computation (a stage's entry). Plain data, built in linear time; groups are in
// preorder (a parent before its children).
struct ScopeTree {
  enum class Source { kNone, kOpName, kStructure };
  Source source = Source::kNone;
  std::vector<ScopeGroup> groups;
  std::vector<int> roots;  // top-level groups
  int ungrouped = 0;       // instructions in no group (drawn on their own at the top level)
  // Innermost group of each instruction of the computation; absent: not in a group.
  std::unordered_map<const HloInstruction*, int> groupOf;
  // The same by instruction name (what buildScopeTree's `reference` reads).
  std::unordered_map<std::string, int> groupOfName;

  int find(const std::string& path) const;
  // Nodes drawn (groups plus instructions outside collapsed groups) when exactly the groups in `expanded` are open.
  int visibleCount(const std::set<std::string>& expanded) const;
  // The groups to open for a first view: every group above the deepest depth at which at most `maxNodes` nodes
  // are drawn (at least the top level).
  std::set<std::string> autoExpanded(int maxNodes) const;
  // The group `inst` is drawn as (its outermost collapsed group), or -1 when it is drawn itself.
  int representative(const HloInstruction* inst, const std::set<std::string>& expanded) const;
};

// Groups `computation`'s instructions by op_name scope when at least half of them carry a scope path (a '/'),
// otherwise by structure: the instructions in text order, cut into stretches (one per ~40 instructions, 12 to
// 48 of them; then each into about 8),
// preferring cuts where the op_name changes. Instructions without a scope join their first user's group (else
// their first operand's), so parameters and constants sit with the layer that reads them; the root stays outside.
// A scope with more than 48 instructions of its own (a JAX program without named layers: everything directly in
// `jit(step)`) has them cut into stretches of about 40 ("jit(step)/#120-161", labelled by their main op_name).
//
// With a reference grouped by op_name, every stage is grouped by op_name (a later stage where fewer instructions
// carry a scope keeps its groups), and the stretches inside a scope are the reference's, by instruction name.
//
// With a `reference` (the tree of another stage of the same program, e.g. the first) whose groups are stretches,
// a computation grouped by structure keeps the reference's stretches instead of cutting its own: each instruction
// goes to the stretch that held the instruction of its name, new ones to their first user's (else first
// operand's), empty stretches are dropped, and labels and ranges are those of what a stretch holds now. A stretch
// is then the same group (same path) at every stage, as an op_name scope is, so a stage step keeps it in place.
ScopeTree buildScopeTree(const HloComputation& computation, const ScopeTree* reference = nullptr);

// Scope grouping as a transformation of a module's DOT graph (`graph`: buildDotGraph of the module whose entry
// `tree` groups): every group in `expanded` whose ancestors are all expanded becomes a cluster around what it holds
// (DotCluster::group), every other group one node (DotNode::Kind::kGroup, labelled with its name, size and main op
// categories) standing for the instructions it holds; edges between instructions stay, edges to or from a group node
// are merged into one per pair of nodes with their count (DotEdge::count). Stubs and copies stay when their user is
// drawn. Node ids are renumbered by index. The result is rendered by renderDot like any other DotGraph.
DotGraph groupByScope(const DotGraph& graph, const ScopeTree& tree, const std::set<std::string>& expanded,
                      int fastLayoutAbove = 500);

// The grouped graph of `module`'s entry (grouped by `tree`, the groups in `expanded` open): buildDotGraph then
// groupByScope. Long edges are cut into stubs only when the grouped graph still draws more than twice
// `options.longEdgeMinInstructions` nodes: an edge into a collapsed group must reach it whole.
DotGraph buildGroupedDotGraph(const HloModule& module, DotOptions options, const ScopeTree& tree,
                              const std::set<std::string>& expanded);

// The groups a first view opens: grouped by `tree`, every group above the deepest depth at which at most this many
// nodes are drawn (ScopeTree::autoExpanded). The viewer's first view and `dump --group-scopes` use it.
inline constexpr int kFirstViewNodes = 80;

}  // namespace fusionscope::core
