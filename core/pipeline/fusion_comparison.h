#pragma once

// How two compilations of one program group their ops into fusions: FusionScope's pipeline output against XLA's
// `*.cpu_after_optimizations.txt`, or any two modules. Answers "why did XLA fuse this and FusionScope not?" with
// pair counts, precision and recall, and the groups that differ side by side with our pipeline's reasons.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/passes/fusion_decision.h"

namespace fusionscope::core {

class HloInstruction;
class HloModule;
struct PipelineRun;

// An instruction's name without the suffixes fusion adds to the clones it makes: `add.3.clone.1` -> `add.3`,
// `mul.2.clone.clone` -> `mul.2`. The numbering `.N` of the name itself stays (`add.3` and `add.4` are different
// instructions).
std::string normalizedInstructionName(std::string_view name);

// Whether an instruction is an op a comparison counts: everything that computes, except parameters, constants
// (both compilers copy scalars into every fusion that reads them), tuples, get-tuple-element, bitcasts, reshapes
// that only add or drop dimensions of size 1 and transposes whose result layout keeps every element in place (pure
// plumbing: XLA turns such reshapes and transposes, and others after layout assignment, into bitcasts, or removes a
// pair that undoes itself), and control flow
// (while, conditional, call: the ops of their bodies are compared instead).
bool isComparedOp(const HloInstruction& inst);

// The share of each side's ops that must have a counterpart before a comparison states an agreement figure.
inline constexpr double kCoverageForAgreement = 0.95;

// One instruction of a group as the comparison shows it.
struct ComparedMember {
  std::string name;         // its name in its own module
  std::string opcode;       // "multiply"
  std::string counterpart;  // the matched instruction's name in the other module; "" when unmatched
};

// What an instruction ends up in: a fusion (its ops, nested fusions opened), or the instruction alone.
struct ComparedGroup {
  std::string name;  // the fusion instruction, or the unfused instruction itself
  bool fusion = false;
  std::vector<ComparedMember> members;  // compared ops only, in the fusion's post order
};

// A set of groups of A and of B that hold the same matched instructions and group them differently (the
// connected component of "shares a matched instruction" between A's groups and B's groups).
struct GroupDifference {
  std::vector<ComparedGroup> a;
  std::vector<ComparedGroup> b;
  int64_t pairsOnlyA = 0;  // matched pairs fused together in A and not in B
  int64_t pairsOnlyB = 0;
  // Those pairs, each named by A's instructions (B's name where A has none), sorted.
  std::vector<std::pair<std::string, std::string>> onlyA;
  std::vector<std::pair<std::string, std::string>> onlyB;
  // When A is our pipeline's output: the decisions whose producer and consumer are both among these groups'
  // instructions or fusions (what `explain` prints for them).
  std::vector<FusionDecision> decisions;
};

struct ComparedSide {
  int64_t ops = 0;            // compared ops, each copy of a duplicated op counted
  int64_t matched = 0;        // of those, the ones with a counterpart in the other module
  int64_t matchedByName = 0;  // ... found by normalized name (the rest by metadata or dataflow)
  int64_t matchedBySource = 0;  // ... as part of one source op that each side expanded its own way
  int64_t matchedToPlumbing = 0;  // ... to a bitcast of the other side, or folded into its user there
  // matched / ops (1 when there are no ops): how much of this side the pair counts see.
  double matchedFraction() const { return ops == 0 ? 1.0 : static_cast<double>(matched) / static_cast<double>(ops); }
  int64_t groups = 0;         // fusions plus unfused ops
  int64_t fusions = 0;
  std::vector<ComparedMember> unmatched;  // the ops without a counterpart, in text order (copies once)
  // The ops without a counterpart by opcode, most first (each copy counted, as in `ops`).
  std::vector<std::pair<std::string, int64_t>> unmatchedByKind;
};

// The result of compareFusions. Pairs are unordered pairs of matched instructions; "together" means some group
// of that side holds both.
struct FusionComparison {
  ComparedSide a;
  ComparedSide b;
  int64_t pairsBoth = 0;
  int64_t pairsOnlyA = 0;
  int64_t pairsOnlyB = 0;
  std::vector<GroupDifference> differences;  // in A's text order

  // Whether both sides have a counterpart for at least kCoverageForAgreement of their ops. Below it the pair counts
  // see too little of the program to stand for it: precision() and recall() are withheld (nullopt) and the
  // comparison says why (coverageShortfall()).
  bool coverageSufficient() const;
  // "" when coverageSufficient(), else the sentence that says how much each side matched.
  std::string coverageShortfall() const;
  // Of the pairs A fuses, the share B fuses too; nullopt when A fuses no matched pair or coverage is insufficient.
  std::optional<double> precision() const;
  // Of the pairs B fuses, the share A fuses too; nullopt when B fuses no matched pair or coverage is insufficient.
  std::optional<double> recall() const;
};

// A group as one line: "fusion.3: add.1 multiply.2 exp.4*" or, showing counterparts (B's side),
// "add_fusion: add.7=add.1 multiply.9=multiply.2": each member with its counterpart's name when that differs, `*`
// when it has none; an unfused op alone is just its name.
std::string comparedGroupText(const ComparedGroup& group, bool showCounterpart);

// Compares the fusion groupings of `a` and `b` (ops in the computations fusion works in: the entry and the bodies
// of control flow). Instructions are matched, in this order: by normalized name when the two agree on opcode,
// shape and metadata; by opKey (opcode, shape, metadata with source line), since XLA renames the instructions it
// fuses; by opcode, shape and the last component of op_name when one op on each side has them (XLA's call
// inliner rewrites the metadata of what it inlines, ours does not); then by dataflow, rounds outwards from the
// entry parameters and constants: opcode, shape, attributes and the matched origins of the operands, looking
// through fusion parameters, tuples, bitcasts, copies, reshapes and transposes (this survives renaming, inlining
// and helpers that leave no metadata); last, ops left over that each side made from one source op (same last
// op_name component: an rng-bit-generator or batch norm each compiler expands its own way) become one op, copies
// excepted (they compute nothing: a copy is matched as plumbing).
// Copies of one op (a producer duplicated into several fusions), and distinct ops with one opKey, count as one
// instruction. `run`, when A is the module it produced, supplies the decisions shown with each difference.
FusionComparison compareFusions(const HloModule& a, const HloModule& b, const PipelineRun* run = nullptr);

}  // namespace fusionscope::core
