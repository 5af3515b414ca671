#include "core/dot/scope_groups.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {
namespace {

// Stretches: about this many at the top level, each cut into about kSubStretches, down to kLeafStretch.
constexpr int kTopStretches = 48;
constexpr int kMinTopStretches = 12;
constexpr int kTopStretchSize = 40;
constexpr int kSubStretches = 8;
constexpr int kLeafStretch = 12;
// A scope with more instructions of its own than this (a JAX program without named layers: everything directly in
// jit(step), jvp() and transpose(jvp())) has them cut into stretches of about kTopStretchSize.
constexpr size_t kMaxDirectMembers = 48;

// The op_name a group reads: the instruction's own, else (a fusion a pass made) its fused root's.
std::string_view opNameOf(const HloInstruction& inst) {
  if (const OpMetadata* metadata = inst.metadata(); metadata != nullptr && !metadata->opName.empty())
    return metadata->opName;
  if (inst.isFusion() && inst.fusedComputation() != nullptr && inst.fusedComputation()->root() != nullptr) {
    if (const OpMetadata* metadata = inst.fusedComputation()->root()->metadata();
        metadata != nullptr && !metadata->opName.empty())
      return metadata->opName;
    // A root a pass made without metadata (a multi-output fusion's tuple, a reshape): the last fused instruction
    // that has an op_name, in text order (the one nearest the root).
    const auto& fused = inst.fusedComputation()->instructions();
    for (auto it = fused.rbegin(); it != fused.rend(); ++it) {
      if (std::string_view name = opNameOf(**it); !name.empty()) return name;
    }
  }
  return {};
}

// A PyTorch/XLA op name without its namespace: "aten__native_batch_norm" -> "native_batch_norm".
std::string shortOpName(std::string_view name) {
  for (std::string_view prefix : {"aten__", "xla__", "prim__"}) {
    if (name.substr(0, prefix.size()) == prefix) return std::string(name.substr(prefix.size()));
  }
  return std::string(name);
}

class Builder {
 public:
  explicit Builder(const HloComputation& computation) {
    for (const auto& inst : computation.instructions()) {
      if (inst.get() != computation.root()) m_order.push_back(inst.get());
    }
  }

  ScopeTree build(const ScopeTree* reference) {
    size_t scoped = 0;
    for (const HloInstruction* inst : m_order) {
      if (opNameOf(*inst).find('/') != std::string_view::npos) ++scoped;
    }
    if (m_order.empty()) return std::move(m_tree);
    // Grouped as the document's first stage was (its tree is `reference`): a module whose op_names made the scopes
    // keeps them at a later stage where fewer instructions carry one (fused roots made by passes), so a group and
    // its expansion survive the step.
    const bool byScope = reference != nullptr ? reference->source == ScopeTree::Source::kOpName && scoped > 0
                                              : scoped * 2 >= m_order.size();
    if (byScope) {
      m_tree.source = ScopeTree::Source::kOpName;
      byOpName(reference);
    } else if (reference != nullptr && reference->source == ScopeTree::Source::kStructure) {
      m_tree.source = ScopeTree::Source::kStructure;
      fromReference(*reference);
    } else {
      m_tree.source = ScopeTree::Source::kStructure;
      stretches(0, m_order.size(), -1, 0);
    }
    count();
    for (const auto& [inst, g] : m_tree.groupOf) m_tree.groupOfName.emplace(inst->name(), g);
    return std::move(m_tree);
  }

 private:
  int group(const std::string& path, std::string label, int parent) {
    if (auto found = m_index.find(path); found != m_index.end()) return found->second;
    int index = static_cast<int>(m_tree.groups.size());
    ScopeGroup g;
    g.path = path;
    g.label = std::move(label);
    g.parent = parent;
    g.depth = parent < 0 ? 0 : m_tree.groups[static_cast<size_t>(parent)].depth + 1;
    m_tree.groups.push_back(std::move(g));
    m_index.emplace(path, index);
    (parent < 0 ? m_tree.roots : m_tree.groups[static_cast<size_t>(parent)].children).push_back(index);
    return index;
  }

  void byOpName(const ScopeTree* reference) {
    for (const HloInstruction* inst : m_order) {
      std::string_view name = opNameOf(*inst);
      size_t last = name.rfind('/');
      if (last == std::string_view::npos) continue;
      int parent = -1;
      size_t start = 0;
      while (start < last) {
        size_t end = name.find('/', start);
        if (end == std::string_view::npos || end > last) end = last;
        if (end > start)
          parent = group(std::string(name.substr(0, end)), std::string(name.substr(start, end - start)), parent);
        start = end + 1;
      }
      if (parent >= 0) m_tree.groupOf[inst] = parent;
    }
    adoptUngrouped();
    splitBigScopes(reference);
  }

  // A scope holding more than kMaxDirectMembers instructions of its own gets them cut into stretches of the text
  // order (sub-groups "SCOPE/#first-last", labelled by their main op_name), so that opening it draws a few dozen
  // nodes, not hundreds. With a `reference` (the document's first stage), an instruction goes to the stretch of
  // the same path that held the instruction of its name there, a new one to its first user's (else first operand's)
  // stretch of the same scope: a stretch is the same group at every stage.
  void splitBigScopes(const ScopeTree* reference) {
    const size_t scopes = m_tree.groups.size();
    std::vector<std::vector<size_t>> direct(scopes);  // positions in m_order
    for (size_t i = 0; i < m_order.size(); ++i) {
      auto found = m_tree.groupOf.find(m_order[i]);
      if (found != m_tree.groupOf.end()) direct[static_cast<size_t>(found->second)].push_back(i);
    }
    std::set<std::string> referenceScopes;  // scopes the reference cut into stretches
    if (reference != nullptr) {
      for (const ScopeGroup& g : reference->groups) {
        if (g.stretch && g.parent >= 0) referenceScopes.insert(reference->groups[static_cast<size_t>(g.parent)].path);
      }
    }
    for (size_t g = 0; g < scopes; ++g) {
      if (referenceScopes.count(m_tree.groups[g].path) != 0) {
        keepStretches(static_cast<int>(g), direct[g], *reference);
      } else if (direct[g].size() > kMaxDirectMembers) {
        cutStretches(static_cast<int>(g), direct[g]);
      }
    }
    // Labels and ranges from what each stretch holds now.
    std::vector<std::vector<size_t>> members(m_tree.groups.size());
    for (size_t i = 0; i < m_order.size(); ++i) {
      auto found = m_tree.groupOf.find(m_order[i]);
      if (found != m_tree.groupOf.end()) members[static_cast<size_t>(found->second)].push_back(i);
    }
    for (size_t g = scopes; g < m_tree.groups.size(); ++g) {
      if (members[g].empty()) continue;
      m_tree.groups[g].label = dominantOpName(members[g]);
      m_tree.groups[g].detail = "#" + std::to_string(members[g].front() + 1) + "-" + std::to_string(members[g].back() + 1);
    }
  }

  int stretchGroup(const std::string& path, int scope) {
    const int g = group(path, std::string(), scope);
    m_tree.groups[static_cast<size_t>(g)].stretch = true;
    return g;
  }

  // A cut of the run [first, end) of instructions `at(p)` near `cut`: the nearest place within `slack` of it where
  // the op_name changes, else `cut` itself.
  template <typename At>
  static size_t nearestOpNameChange(const At& at, size_t first, size_t cut, size_t end, size_t slack) {
    for (size_t d = 0; d <= slack; ++d) {
      if (cut + d < end && opNameOf(*at(cut + d)) != opNameOf(*at(cut + d - 1))) return cut + d;
      if (cut - d > first + 1 && opNameOf(*at(cut - d)) != opNameOf(*at(cut - d - 1))) return cut - d;
    }
    return cut;
  }

  // Each of `instructions` not yet in a group `accepts` joins the first such group of its users (users first, so
  // that chains such as constant -> broadcast -> add follow), else of its operands.
  template <typename Accepts>
  void adopt(const std::vector<const HloInstruction*>& instructions, const Accepts& accepts) {
    auto placed = [&](const HloInstruction* inst) {
      auto found = m_tree.groupOf.find(inst);
      return found != m_tree.groupOf.end() && accepts(found->second);
    };
    auto join = [&](const HloInstruction* inst, const std::vector<HloInstruction*>& neighbours) {
      for (const HloInstruction* neighbour : neighbours) {
        auto found = m_tree.groupOf.find(neighbour);
        if (found != m_tree.groupOf.end() && accepts(found->second)) {
          m_tree.groupOf[inst] = found->second;
          return;
        }
      }
    };
    for (auto it = instructions.rbegin(); it != instructions.rend(); ++it) {
      if (!placed(*it)) join(*it, (*it)->users());
    }
    for (const HloInstruction* inst : instructions) {
      if (!placed(inst)) join(inst, inst->operands());
    }
  }

  void cutStretches(int scope, const std::vector<size_t>& positions) {
    const size_t size = positions.size();
    const size_t target = kTopStretchSize;
    size_t i = 0;
    while (i < size) {
      size_t cut = std::min(size, i + target);
      if (cut < size) {
        cut = nearestOpNameChange([&](size_t p) { return m_order[positions[p]]; }, i, cut, size, target / 4);
      }
      if (size - cut < target / 2) cut = size;  // no runt at the end
      const std::string path = m_tree.groups[static_cast<size_t>(scope)].path + "/#" +
                               std::to_string(positions[i] + 1) + "-" + std::to_string(positions[cut - 1] + 1);
      const int g = stretchGroup(path, scope);
      for (size_t k = i; k < cut; ++k) m_tree.groupOf[m_order[positions[k]]] = g;
      i = cut;
    }
  }

  void keepStretches(int scope, const std::vector<size_t>& positions, const ScopeTree& reference) {
    const std::string scopePath = m_tree.groups[static_cast<size_t>(scope)].path;  // a copy: groups grow below
    auto isStretchOf = [&](int g) {
      const ScopeGroup& group = m_tree.groups[static_cast<size_t>(g)];
      return group.stretch && group.parent == scope;
    };
    std::vector<const HloInstruction*> unplaced;
    for (size_t position : positions) {
      const HloInstruction* inst = m_order[position];
      auto found = reference.groupOfName.find(inst->name());
      if (found != reference.groupOfName.end()) {
        const ScopeGroup& old = reference.groups[static_cast<size_t>(found->second)];
        if (old.stretch && old.parent >= 0 && reference.groups[static_cast<size_t>(old.parent)].path == scopePath) {
          m_tree.groupOf[inst] = stretchGroup(old.path, scope);
          continue;
        }
      }
      unplaced.push_back(inst);
    }
    // New instructions: their first user's stretch of this scope, else their first operand's; otherwise they stay
    // in the scope itself.
    adopt(unplaced, isStretchOf);
  }

  // Instructions without a scope (parameters, constants, JAX's unnamed helpers) join their users' or operands' group.
  void adoptUngrouped() {
    adopt(m_order, [](int) { return true; });
  }

  // The stretches of `reference` (another stage of the same program), each instruction in the stretch that held
  // the instruction of its name there; new instructions join their first user's stretch, else their first
  // operand's. Stretches left empty are dropped; the others keep their path (what identifies a group from stage
  // to stage) and get their label and instruction range from what they hold now.
  void fromReference(const ScopeTree& reference) {
    for (const HloInstruction* inst : m_order) {
      if (auto found = reference.groupOfName.find(inst->name()); found != reference.groupOfName.end())
        m_tree.groupOf[inst] = found->second;
    }
    adoptUngrouped();
    const size_t count = reference.groups.size();
    std::vector<std::vector<size_t>> members(count);  // positions in m_order, nested groups included
    for (size_t i = 0; i < m_order.size(); ++i) {
      auto found = m_tree.groupOf.find(m_order[i]);
      if (found == m_tree.groupOf.end()) continue;
      for (int g = found->second; g >= 0; g = reference.groups[static_cast<size_t>(g)].parent)
        members[static_cast<size_t>(g)].push_back(i);
    }
    std::vector<int> newIndex(count, -1);
    for (size_t g = 0; g < count; ++g) {  // preorder: a parent is made before its children
      if (members[g].empty()) continue;
      const ScopeGroup& old = reference.groups[g];
      const int parent = old.parent < 0 ? -1 : newIndex[static_cast<size_t>(old.parent)];
      const int made = group(old.path, dominantOpName(members[g]), parent);
      ScopeGroup& now = m_tree.groups[static_cast<size_t>(made)];
      now.stretch = old.stretch;
      now.detail = "#" + std::to_string(members[g].front() + 1) + "-" + std::to_string(members[g].back() + 1);
      newIndex[g] = made;
    }
    for (auto& [inst, g] : m_tree.groupOf) g = newIndex[static_cast<size_t>(g)];
  }

  // Instructions [begin, end) of the text order as consecutive stretches under `parent`.
  void stretches(size_t begin, size_t end, int parent, int depth) {
    size_t size = end - begin;
    // At the top about one stretch per kTopStretchSize instructions, between kMinTopStretches and kTopStretches.
    size_t parts =
        depth == 0 ? std::clamp<size_t>(size / kTopStretchSize, kMinTopStretches, kTopStretches) : kSubStretches;
    size_t target = (size + parts - 1) / parts;
    if (size <= static_cast<size_t>(kLeafStretch) || target < 4) {
      for (size_t i = begin; i < end && parent >= 0; ++i) m_tree.groupOf[m_order[i]] = parent;
      return;
    }
    size_t i = begin;
    while (i < end) {
      size_t cut = std::min(end, i + target);
      if (cut < end) {
        cut = nearestOpNameChange([&](size_t p) { return m_order[p]; }, i, cut, end, std::max<size_t>(1, target / 4));
      }
      if (end - cut < target / 2) cut = end;  // no runt at the end
      std::string range = "#" + std::to_string(i + 1) + "-" + std::to_string(cut);
      std::vector<size_t> positions(cut - i);
      for (size_t k = i; k < cut; ++k) positions[k - i] = k;
      int g = group(range, dominantOpName(positions), parent);
      m_tree.groups[static_cast<size_t>(g)].detail = range;
      m_tree.groups[static_cast<size_t>(g)].stretch = true;
      stretches(i, cut, g, depth + 1);
      i = cut;
    }
  }

  // The most frequent op_name among the instructions at `positions` of the text order, leaving out data feeds and
  // constants while others exist.
  std::string dominantOpName(const std::vector<size_t>& positions) const {
    std::map<std::string_view, int> counts;
    for (size_t i : positions) {
      OpCategory category = opcodeCategory(m_order[i]->opcode());
      if (category == OpCategory::kParameter || category == OpCategory::kConstant) continue;
      ++counts[opNameOf(*m_order[i])];
    }
    std::string_view best;
    int most = 0;
    for (const auto& [name, n] : counts) {
      if (n > most && !name.empty()) {
        best = name;
        most = n;
      }
    }
    if (best.empty()) return "stretch";
    // Its last component: a stretch inside jit(step) is "mul +5", not "jit(step)/mul +5".
    if (const size_t slash = best.rfind('/'); slash != std::string_view::npos) best.remove_prefix(slash + 1);
    std::string label = shortOpName(best);
    if (counts.size() > 1) label += " +" + std::to_string(counts.size() - 1);
    return label;
  }

  void count() {
    std::vector<std::array<int, 16>> categories(m_tree.groups.size());
    for (auto& row : categories) row.fill(0);
    m_tree.ungrouped = 1;  // the root
    for (const HloInstruction* inst : m_order) {
      auto found = m_tree.groupOf.find(inst);
      if (found == m_tree.groupOf.end()) {
        ++m_tree.ungrouped;
        continue;
      }
      ++m_tree.groups[static_cast<size_t>(found->second)].directCount;
      auto category = static_cast<size_t>(opcodeCategory(inst->opcode()));
      for (int g = found->second; g >= 0; g = m_tree.groups[static_cast<size_t>(g)].parent) {
        ++m_tree.groups[static_cast<size_t>(g)].instructionCount;
        if (category < 16) ++categories[static_cast<size_t>(g)][category];
      }
    }
    for (size_t g = 0; g < m_tree.groups.size(); ++g) {
      auto& list = m_tree.groups[g].categories;
      for (size_t c = 0; c < 16; ++c) {
        if (categories[g][c] > 0) list.emplace_back(static_cast<OpCategory>(c), categories[g][c]);
      }
      std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    }
  }

  std::vector<const HloInstruction*> m_order;
  std::unordered_map<std::string, int> m_index;
  ScopeTree m_tree;
};

}  // namespace

int ScopeTree::find(const std::string& path) const {
  // Linear lookups are rare (expansion toggles); building uses the builder's own index.
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].path == path) return static_cast<int>(i);
  }
  return -1;
}

int ScopeTree::visibleCount(const std::set<std::string>& expanded) const {
  int total = ungrouped;
  std::vector<int> open = roots;
  while (!open.empty()) {
    const ScopeGroup& g = groups[static_cast<size_t>(open.back())];
    open.pop_back();
    if (expanded.count(g.path) == 0) {
      ++total;
      continue;
    }
    total += g.directCount;
    open.insert(open.end(), g.children.begin(), g.children.end());
  }
  return total;
}

std::set<std::string> ScopeTree::autoExpanded(int maxNodes) const {
  int deepest = 0;
  for (const ScopeGroup& g : groups) deepest = std::max(deepest, g.depth);
  std::set<std::string> best;
  std::set<std::string> candidate;
  for (int depth = 0; depth <= deepest; ++depth) {
    for (const ScopeGroup& g : groups) {
      if (g.depth == depth) candidate.insert(g.path);
    }
    if (visibleCount(candidate) > maxNodes) break;
    best = candidate;
  }
  return best;
}

int ScopeTree::representative(const HloInstruction* inst, const std::set<std::string>& expanded) const {
  auto found = groupOf.find(inst);
  if (found == groupOf.end()) return -1;
  int shown = -1;
  for (int g = found->second; g >= 0; g = groups[static_cast<size_t>(g)].parent) {
    if (expanded.count(groups[static_cast<size_t>(g)].path) == 0) shown = g;
  }
  return shown;
}

ScopeTree buildScopeTree(const HloComputation& computation, const ScopeTree* reference) {
  return Builder(computation).build(reference);
}

}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

// A group's three most frequent op categories, leaving out parameters and constants while it has other work.
std::vector<std::pair<OpCategory, int>> mainCategories(const ScopeGroup& group) {
  std::vector<std::pair<OpCategory, int>> result;
  for (const auto& entry : group.categories) {
    if (entry.first != OpCategory::kParameter && entry.first != OpCategory::kConstant) result.push_back(entry);
  }
  if (result.empty()) result = group.categories;
  if (result.size() > 3) result.resize(3);
  return result;
}

// The label lines of a collapsed scope group: its name, its size (and range), its main op categories.
std::vector<std::string> groupLines(const ScopeGroup& group) {
  std::vector<std::string> lines{group.label};
  std::string count =
      std::to_string(group.instructionCount) + (group.instructionCount == 1 ? " instruction" : " instructions");
  if (!group.detail.empty()) count += "  " + group.detail;
  lines.push_back(count);
  std::string categories;
  for (const auto& [category, n] : mainCategories(group)) {
    if (!categories.empty()) categories += " \u00b7 ";
    categories += std::string(categoryName(category)) + " " + std::to_string(n);
  }
  if (!categories.empty()) lines.push_back(categories);
  return lines;
}

}  // namespace

DotGraph groupByScope(const DotGraph& graph, const ScopeTree& tree, const std::set<std::string>& expanded,
                      int fastLayoutAbove) {
  DotGraph out;
  out.module = graph.module;
  out.title = graph.title;
  const size_t n = graph.nodes.size();
  // The entry instruction each node belongs to: itself, or the outermost fusion around it.
  auto entryInstruction = [&](const DotNode& node) {
    if (node.cluster < 0) return node.instruction;
    int top = node.cluster;
    while (graph.clusters[static_cast<size_t>(top)].parent >= 0) top = graph.clusters[static_cast<size_t>(top)].parent;
    return graph.clusters[static_cast<size_t>(top)].fusion;
  };
  std::vector<int> stubUser(n, -1);
  for (const DotEdge& edge : graph.edges) {
    const DotNode& from = graph.nodes[static_cast<size_t>(edge.from)];
    if (from.kind == DotNode::Kind::kCopy || from.isStub()) stubUser[static_cast<size_t>(edge.from)] = edge.to;
  }
  auto depthUnder = [&](int parent) { return parent >= 0 ? out.clusters[static_cast<size_t>(parent)].depth + 1 : 0; };
  // Group clusters: every expanded group whose ancestors are all expanded (parents come first in the tree).
  std::vector<int> groupCluster(tree.groups.size(), -1);
  for (size_t g = 0; g < tree.groups.size(); ++g) {
    const ScopeGroup& group = tree.groups[g];
    if (expanded.count(group.path) == 0) continue;
    if (group.parent >= 0 && groupCluster[static_cast<size_t>(group.parent)] < 0) continue;
    DotCluster box;
    box.group = group.path;
    box.groupLabel = group.label;
    box.lines = {group.label + "  (" + std::to_string(group.instructionCount) + ")"};
    box.parent = group.parent >= 0 ? groupCluster[static_cast<size_t>(group.parent)] : -1;
    box.depth = depthUnder(box.parent);
    groupCluster[g] = static_cast<int>(out.clusters.size());
    out.clusters.push_back(std::move(box));
  }
  auto clusterOfGroup = [&](int group) { return group >= 0 ? groupCluster[static_cast<size_t>(group)] : -1; };
  auto innermostGroup = [&](const HloInstruction* inst) {
    auto found = tree.groupOf.find(inst);
    return found == tree.groupOf.end() ? -1 : found->second;
  };
  // Fusion clusters whose fusion is drawn (not hidden in a collapsed group), inside their group's box.
  std::vector<int> fusionCluster(graph.clusters.size(), -1);
  for (size_t c = 0; c < graph.clusters.size(); ++c) {
    const DotCluster& source = graph.clusters[c];
    const HloInstruction* top = source.fusion;
    for (int parent = source.parent; parent >= 0; parent = graph.clusters[static_cast<size_t>(parent)].parent)
      top = graph.clusters[static_cast<size_t>(parent)].fusion;
    if (tree.representative(top, expanded) >= 0) continue;
    DotCluster box = source;
    box.parent = source.parent >= 0 ? fusionCluster[static_cast<size_t>(source.parent)]
                                    : clusterOfGroup(innermostGroup(source.fusion));
    box.depth = depthUnder(box.parent);
    box.firstNode = 0;  // clusters before the nodes of their scope
    fusionCluster[c] = static_cast<int>(out.clusters.size());
    out.clusters.push_back(std::move(box));
  }
  // Nodes: drawn instructions, a collapsed group's node where its first instruction was, then stubs and copies of
  // drawn users (at the top level, as the renderer declares them).
  std::vector<int> mapped(n, -1);
  std::vector<int> groupNode(tree.groups.size(), -1);
  auto add = [&](DotNode node) {
    node.id = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(node));
    return static_cast<int>(out.nodes.size()) - 1;
  };
  for (size_t i = 0; i < n; ++i) {
    const DotNode& source = graph.nodes[i];
    if (source.kind == DotNode::Kind::kCopy || source.isStub()) continue;
    const HloInstruction* top = entryInstruction(source);
    const int shown = tree.representative(top, expanded);
    if (shown < 0) {
      DotNode node = source;
      node.cluster = source.cluster >= 0 ? fusionCluster[static_cast<size_t>(source.cluster)]
                                         : clusterOfGroup(innermostGroup(top));
      mapped[i] = add(std::move(node));
      continue;
    }
    if (groupNode[static_cast<size_t>(shown)] < 0) {
      const ScopeGroup& group = tree.groups[static_cast<size_t>(shown)];
      DotNode node;
      node.kind = DotNode::Kind::kGroup;
      node.group = group.path;
      const auto main = mainCategories(group);
      node.category = main.empty() ? OpCategory::kOther : main.front().first;
      node.lines = groupLines(group);
      node.cluster = clusterOfGroup(group.parent);
      groupNode[static_cast<size_t>(shown)] = add(std::move(node));
    }
    mapped[i] = groupNode[static_cast<size_t>(shown)];
    if (source.cluster < 0) out.heldBy.emplace(top->name(), mapped[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    const DotNode& source = graph.nodes[i];
    if (source.kind != DotNode::Kind::kCopy && !source.isStub()) continue;
    const int user = stubUser[i];
    if (user < 0 || mapped[static_cast<size_t>(user)] < 0) continue;
    if (out.nodes[static_cast<size_t>(mapped[static_cast<size_t>(user)])].kind == DotNode::Kind::kGroup)
      continue;  // the group's merged edges stand for it
    DotNode node = source;
    node.cluster = -1;
    mapped[i] = add(std::move(node));
  }
  // Edges: kept between drawn instructions, merged (one per pair, counted) when a group is involved.
  std::map<std::pair<int, int>, std::pair<int, bool>> merged;  // -> (count, all control)
  std::vector<std::pair<int, int>> mergedOrder;
  for (const DotEdge& edge : graph.edges) {
    const int from = mapped[static_cast<size_t>(edge.from)];
    const int to = mapped[static_cast<size_t>(edge.to)];
    if (from < 0 || to < 0 || from == to) continue;
    if (out.nodes[static_cast<size_t>(from)].kind != DotNode::Kind::kGroup &&
        out.nodes[static_cast<size_t>(to)].kind != DotNode::Kind::kGroup) {
      DotEdge kept = edge;
      kept.from = from;
      kept.to = to;
      kept.ltail = edge.ltail >= 0 ? fusionCluster[static_cast<size_t>(edge.ltail)] : -1;
      kept.lhead = edge.lhead >= 0 ? fusionCluster[static_cast<size_t>(edge.lhead)] : -1;
      out.edges.push_back(kept);
      continue;
    }
    auto [it, inserted] = merged.try_emplace({from, to}, 0, true);
    if (inserted) mergedOrder.emplace_back(from, to);
    ++it->second.first;
    it->second.second = it->second.second && edge.control;
  }
  for (const auto& pair : mergedOrder) {
    const auto& [count, control] = merged[pair];
    DotEdge edge;
    edge.from = pair.first;
    edge.to = pair.second;
    edge.control = control;
    edge.count = count;
    out.edges.push_back(edge);
  }
  out.fastLayout = fastLayoutAbove > 0 && out.nodes.size() > static_cast<size_t>(fastLayoutAbove);
  return out;
}

DotGraph buildGroupedDotGraph(const HloModule& module, DotOptions options, const ScopeTree& tree,
                              const std::set<std::string>& expanded) {
  if (tree.visibleCount(expanded) <= options.longEdgeMinInstructions * 2)
    options.longEdgeMinInstructions = std::numeric_limits<int64_t>::max();
  return groupByScope(buildDotGraph(module, options), tree, expanded, options.fastLayoutAbove);
}

}  // namespace fusionscope::core
