#include "core/pipeline/fusion_comparison.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_utils.h"
#include "core/pipeline/fusion_correspondence.h"
#include "core/pipeline/stage.h"

namespace fusionscope::core {
namespace {

constexpr int kUnmatched = -1;

// One compared op where it ends up: which group of its side, and the instruction matched across.
struct Occurrence {
  const HloInstruction* inst = nullptr;
  int group = 0;
  int identity = kUnmatched;
  bool byName = false;
};

struct Side {
  std::vector<ComparedGroup> groups;  // members filled once identities are known
  std::vector<Occurrence> ops;
};

void collectFused(const HloInstruction& fusion, int group, Side& side) {
  for (const HloInstruction* member : fusedInstructions(fusion)) {
    if (member->isFusion() && member->fusedComputation()) {
      collectFused(*member, group, side);
    } else if (isComparedOp(*member)) {
      side.ops.push_back({member, group});
    }
  }
}

Side collectSide(const HloModule& module) {
  Side side;
  for (const HloComputation* computation : computationsToFuseIn(module)) {
    for (const auto& inst : computation->instructions()) {
      bool fusion = inst->isFusion() && inst->fusedComputation();
      if (!fusion && !isComparedOp(*inst)) continue;
      int group = static_cast<int>(side.groups.size());
      side.groups.push_back({inst->name(), fusion, {}});
      if (fusion) {
        collectFused(*inst, group, side);
      } else {
        side.ops.push_back({inst.get(), group});
      }
    }
  }
  return side;
}

bool hasMetadata(const HloInstruction& inst) {
  return inst.metadata() && !inst.metadata()->empty();
}

// Two instructions with one normalized name are the same op when nothing else about them disagrees.
bool sameOpByName(const HloInstruction& x, const HloInstruction& y) {
  if (x.opcode() != y.opcode() || x.shape().toString(false) != y.shape().toString(false)) return false;
  return !hasMetadata(x) || !hasMetadata(y) || *x.metadata() == *y.metadata();
}

// Opcode, shape and the last component of op_name ("" without an op_name).
std::string looseKey(const HloInstruction& inst) {
  const std::string& opName = inst.metadata()->opName;
  if (opName.empty()) return "";
  return std::string(inst.opcodeString()) + " " + inst.shape().toString(false) + " " +
         opName.substr(opName.rfind('/') + 1);
}

size_t distinctNames(const std::vector<Occurrence*>& ops) {
  std::set<std::string> names;
  for (const Occurrence* op : ops) names.insert(normalizedInstructionName(op->inst->name()));
  return names.size();
}

// Gives every op of `a` and `b` that has a counterpart an identity shared with it; returns how many there are.
int matchIdentities(Side& a, Side& b) {
  int next = 0;
  std::map<std::string, std::vector<Occurrence*>> byNameB;
  for (Occurrence& op : b.ops) byNameB[normalizedInstructionName(op.inst->name())].push_back(&op);
  std::map<std::string, int> nameIdentity;
  for (Occurrence& op : a.ops) {
    std::string name = normalizedInstructionName(op.inst->name());
    auto found = byNameB.find(name);
    if (found == byNameB.end() || !sameOpByName(*op.inst, *found->second.front()->inst)) continue;
    auto [it, added] = nameIdentity.emplace(name, next);
    if (added) ++next;
    op.identity = it->second;
    op.byName = true;
    for (Occurrence* other : found->second) {
      if (!sameOpByName(*op.inst, *other->inst)) continue;
      other->identity = it->second;
      other->byName = true;
    }
  }
  // The rest by what they compute and where in the source they come from.
  std::map<std::string, std::vector<Occurrence*>> byKeyB;
  for (Occurrence& op : b.ops) {
    if (op.identity == kUnmatched && hasMetadata(*op.inst)) byKeyB[opKey(*op.inst)].push_back(&op);
  }
  std::map<std::string, int> keyIdentity;
  for (Occurrence& op : a.ops) {
    if (op.identity != kUnmatched || !hasMetadata(*op.inst)) continue;
    std::string key = opKey(*op.inst);
    auto found = byKeyB.find(key);
    if (found == byKeyB.end()) continue;
    auto [it, added] = keyIdentity.emplace(key, next);
    if (added) {
      ++next;
      for (Occurrence* other : found->second) other->identity = it->second;
    }
    op.identity = it->second;
  }
  // Last, ops whose metadata an inliner rewrote: XLA's call inliner prefixes the op_name of the call and merges
  // the stack frames (`mul`, frame 1 becomes `jit(f)/while/body/closed_call/mul`, frame 13), ours keeps the
  // callee's. Opcode, shape and the last component of op_name, when exactly one op (by name) on each side has them.
  std::map<std::string, std::vector<Occurrence*>> looseA;
  std::map<std::string, std::vector<Occurrence*>> looseB;
  for (auto [side, loose] : {std::pair{&a, &looseA}, std::pair{&b, &looseB}}) {
    for (Occurrence& op : side->ops) {
      if (op.identity == kUnmatched && hasMetadata(*op.inst)) (*loose)[looseKey(*op.inst)].push_back(&op);
    }
  }
  for (auto& [key, opsA] : looseA) {
    auto found = looseB.find(key);
    if (key.empty() || found == looseB.end() || distinctNames(opsA) != 1 || distinctNames(found->second) != 1) continue;
    for (Occurrence* op : opsA) op->identity = next;
    for (Occurrence* op : found->second) op->identity = next;
    ++next;
  }
  return next;
}

ComparedSide countSide(const Side& side) {
  ComparedSide counts;
  counts.ops = static_cast<int64_t>(side.ops.size());
  std::set<std::string> listed;
  for (const Occurrence& op : side.ops) {
    if (op.identity == kUnmatched) {
      std::string name = normalizedInstructionName(op.inst->name());
      if (listed.insert(name).second) counts.unmatched.push_back({name, std::string(op.inst->opcodeString()), ""});
      continue;
    }
    ++counts.matched;
    if (op.byName) ++counts.matchedByName;
  }
  counts.groups = static_cast<int64_t>(side.groups.size());
  counts.fusions = std::count_if(side.groups.begin(), side.groups.end(), [](const auto& g) { return g.fusion; });
  return counts;
}

// Every unordered pair of distinct identities that some group of the side holds together.
std::set<std::pair<int, int>> fusedPairs(const Side& side) {
  std::vector<std::set<int>> members(side.groups.size());
  for (const Occurrence& op : side.ops) {
    if (op.identity != kUnmatched) members[static_cast<size_t>(op.group)].insert(op.identity);
  }
  std::set<std::pair<int, int>> pairs;
  for (const std::set<int>& group : members) {
    for (auto i = group.begin(); i != group.end(); ++i) {
      for (auto j = std::next(i); j != group.end(); ++j) pairs.emplace(*i, *j);
    }
  }
  return pairs;
}

int findRoot(std::vector<int>& parent, int x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

// The name of each identity on one side (its first occurrence), for ComparedMember::counterpart.
std::vector<std::string> identityNames(const Side& side, int identities) {
  std::vector<std::string> names(static_cast<size_t>(identities));
  for (const Occurrence& op : side.ops) {
    if (op.identity != kUnmatched && names[static_cast<size_t>(op.identity)].empty()) {
      names[static_cast<size_t>(op.identity)] = op.inst->name();
    }
  }
  return names;
}

void fillMembers(Side& side, const std::vector<std::string>& otherNames) {
  for (const Occurrence& op : side.ops) {
    std::string counterpart = op.identity == kUnmatched ? "" : otherNames[static_cast<size_t>(op.identity)];
    side.groups[static_cast<size_t>(op.group)].members.push_back(
        {op.inst->name(), std::string(op.inst->opcodeString()), std::move(counterpart)});
  }
}

std::vector<FusionDecision> decisionsAbout(const PipelineRun& run, const GroupDifference& difference) {
  std::set<std::string> names;
  for (const ComparedGroup& group : difference.a) {
    names.insert(group.name);
    for (const ComparedMember& member : group.members) names.insert(member.name);
  }
  std::vector<FusionDecision> decisions;
  std::set<std::string> seen;
  for (const PassRun& pass : run.passes) {
    for (const FusionDecision& decision : pass.decisions) {
      if (!names.count(decision.producer) || !names.count(decision.consumer)) continue;
      if (seen.insert(decision.pass + "\n" + decision.reason).second) decisions.push_back(decision);
    }
  }
  return decisions;
}

}  // namespace

std::string normalizedInstructionName(std::string_view name) {
  for (;;) {
    size_t dot = name.rfind('.');
    if (dot == std::string_view::npos) break;
    std::string_view tail = name.substr(dot + 1);
    if (tail == "clone") {
      name = name.substr(0, dot);
      continue;
    }
    // `.N` after `.clone`: the clone's own numbering.
    bool digits = !tail.empty() && std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; });
    std::string_view head = name.substr(0, dot);
    if (digits && head.size() >= 6 && head.substr(head.size() - 6) == ".clone") {
      name = head.substr(0, head.size() - 6);
      continue;
    }
    break;
  }
  return std::string(name);
}

bool isComparedOp(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kBitcast:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall: return false;
    default: return !(inst.isFusion() && inst.fusedComputation());
  }
}

std::optional<double> FusionComparison::precision() const {
  if (pairsBoth + pairsOnlyA == 0) return std::nullopt;
  return static_cast<double>(pairsBoth) / static_cast<double>(pairsBoth + pairsOnlyA);
}

std::optional<double> FusionComparison::recall() const {
  if (pairsBoth + pairsOnlyB == 0) return std::nullopt;
  return static_cast<double>(pairsBoth) / static_cast<double>(pairsBoth + pairsOnlyB);
}

std::string comparedGroupText(const ComparedGroup& group, bool showCounterpart) {
  std::string text = group.fusion ? group.name + ":" : group.name;
  if (!group.fusion) {
    if (group.members.empty()) return text;
    const ComparedMember& member = group.members.front();
    if (member.counterpart.empty()) return text + "*";
    if (showCounterpart && member.counterpart != member.name) text += "=" + member.counterpart;
    return text;
  }
  for (const ComparedMember& member : group.members) {
    text += " " + member.name;
    if (member.counterpart.empty()) {
      text += "*";
    } else if (showCounterpart && member.counterpart != member.name) {
      text += "=" + member.counterpart;
    }
  }
  return text;
}

FusionComparison compareFusions(const HloModule& a, const HloModule& b, const PipelineRun* run) {
  Side sideA = collectSide(a);
  Side sideB = collectSide(b);
  int identities = matchIdentities(sideA, sideB);
  FusionComparison result;
  result.a = countSide(sideA);
  result.b = countSide(sideB);

  std::set<std::pair<int, int>> pairsA = fusedPairs(sideA);
  std::set<std::pair<int, int>> pairsB = fusedPairs(sideB);
  std::vector<std::pair<int, int>> onlyA;
  std::vector<std::pair<int, int>> onlyB;
  std::set_difference(pairsA.begin(), pairsA.end(), pairsB.begin(), pairsB.end(), std::back_inserter(onlyA));
  std::set_difference(pairsB.begin(), pairsB.end(), pairsA.begin(), pairsA.end(), std::back_inserter(onlyB));
  result.pairsOnlyA = static_cast<int64_t>(onlyA.size());
  result.pairsOnlyB = static_cast<int64_t>(onlyB.size());
  result.pairsBoth = static_cast<int64_t>(pairsA.size()) - result.pairsOnlyA;

  // Components of groups linked by a shared matched instruction: A's groups are 0..nA-1, B's follow.
  const int groupsA = static_cast<int>(sideA.groups.size());
  std::vector<int> parent(sideA.groups.size() + sideB.groups.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> someGroup(static_cast<size_t>(identities), -1);
  auto link = [&](const Occurrence& op, int offset) {
    if (op.identity == kUnmatched) return;
    int node = op.group + offset;
    int& first = someGroup[static_cast<size_t>(op.identity)];
    if (first < 0) {
      first = node;
    } else {
      parent[static_cast<size_t>(findRoot(parent, node))] = findRoot(parent, first);
    }
  };
  for (const Occurrence& op : sideA.ops) link(op, 0);
  for (const Occurrence& op : sideB.ops) link(op, groupsA);

  std::map<int, std::pair<int64_t, int64_t>> differing;  // component root -> pairs only in A, only in B
  for (const auto& pair : onlyA) differing[findRoot(parent, someGroup[static_cast<size_t>(pair.first)])].first++;
  for (const auto& pair : onlyB) differing[findRoot(parent, someGroup[static_cast<size_t>(pair.first)])].second++;
  if (differing.empty()) return result;

  fillMembers(sideA, identityNames(sideB, identities));
  fillMembers(sideB, identityNames(sideA, identities));
  std::map<int, size_t> differenceOf;  // component root -> index in result.differences, in A's text order
  for (int node = 0; node < static_cast<int>(parent.size()); ++node) {
    int root = findRoot(parent, node);
    auto counts = differing.find(root);
    if (counts == differing.end()) continue;
    auto [it, added] = differenceOf.emplace(root, result.differences.size());
    if (added) {
      result.differences.emplace_back();
      result.differences.back().pairsOnlyA = counts->second.first;
      result.differences.back().pairsOnlyB = counts->second.second;
    }
    GroupDifference& difference = result.differences[it->second];
    if (node < groupsA) {
      difference.a.push_back(std::move(sideA.groups[static_cast<size_t>(node)]));
    } else {
      difference.b.push_back(std::move(sideB.groups[static_cast<size_t>(node - groupsA)]));
    }
  }
  if (run) {
    for (GroupDifference& difference : result.differences) difference.decisions = decisionsAbout(*run, difference);
  }
  return result;
}

}  // namespace fusionscope::core
