#include "app/cli/compare_command.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/base/json_output.h"
#include "app/cli/cli_output.h"
#include "app/cli/pipeline_commands.h"
#include "core/pipeline/stage.h"

namespace fusionscope::cli {

struct CompareCommand {
  CLI::App* command = nullptr;
  std::string a;
  std::string b;
  PipelineArgs pipeline;
  bool json = false;
  std::string output;
};

namespace {

constexpr size_t kColumnWidth = 58;

// Breaks `text` at spaces into lines of at most `width` (a longer word gets a line of its own); continuation
// lines are indented by two.
std::vector<std::string> wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line = "  " + word;
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

std::vector<std::string> columnLines(const std::vector<core::ComparedGroup>& groups, bool showCounterpart) {
  std::vector<std::string> lines;
  for (const core::ComparedGroup& group : groups) {
    for (std::string& line : wrap(core::comparedGroupText(group, showCounterpart), kColumnWidth))
      lines.push_back(std::move(line));
  }
  return lines;
}

std::string ratio(const std::optional<double>& value) {
  return value ? fmt::format("{:.3f}", *value) : std::string("n/a");
}

constexpr size_t kUnmatchedShown = 12;
constexpr size_t kPairsShown = 24;

// "  fused only in A: x+y x+z ..." wrapped to the width of both columns, the first kPairsShown pairs.
std::string pairsText(const char* which, const std::vector<std::pair<std::string, std::string>>& pairs) {
  if (pairs.empty()) return "";
  std::string text = fmt::format("fused only in {}:", which);
  for (size_t i = 0; i < std::min(pairs.size(), kPairsShown); ++i) {
    text += fmt::format(" {}+{}", pairs[i].first, pairs[i].second);
  }
  if (pairs.size() > kPairsShown) text += fmt::format(" and {} more (--json lists all)", pairs.size() - kPairsShown);
  std::string out;
  for (const std::string& line : wrap(text, 2 * kColumnWidth + 3)) out += "  " + line + "\n";
  return out;
}

std::string sideText(const char* which, const std::string& label, const core::ComparedSide& side) {
  std::string out = fmt::format(
      "{}: {}: {} ops in {} groups ({} fusions); {} matched, {:.1f}% ({} by name, {} as parts of one source op, {} to "
      "a bitcast or folded into their user there)\n",
      which, label, side.ops, side.groups, side.fusions, side.matched, 100 * side.matchedFraction(),
      side.matchedByName, side.matchedBySource, side.matchedToPlumbing);
  if (side.unmatched.empty()) return out;
  std::vector<std::string> kinds;
  for (const auto& [opcode, count] : side.unmatchedByKind) kinds.push_back(fmt::format("{} {}", opcode, count));
  out += fmt::format("   unmatched by kind: {}\n", fmt::join(kinds, ", "));
  out += fmt::format("   no counterpart ({}):", side.unmatched.size());
  for (size_t i = 0; i < std::min(side.unmatched.size(), kUnmatchedShown); ++i) {
    out += fmt::format(" {} ({})", side.unmatched[i].name, side.unmatched[i].opcode);
  }
  if (side.unmatched.size() > kUnmatchedShown)
    out += fmt::format(" and {} more", side.unmatched.size() - kUnmatchedShown);
  return out + "\n";
}

nlohmann::ordered_json sideJson(const std::string& file, const core::ComparedSide& side) {
  nlohmann::ordered_json j;
  j["file"] = file;
  j["ops"] = side.ops;
  j["matched"] = side.matched;
  j["matched_by_name"] = side.matchedByName;
  j["matched_by_source_op"] = side.matchedBySource;
  j["matched_to_plumbing"] = side.matchedToPlumbing;
  j["matched_fraction"] = side.matchedFraction();
  nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
  for (const auto& [opcode, count] : side.unmatchedByKind) kinds[opcode] = count;
  j["unmatched_by_kind"] = std::move(kinds);
  j["groups"] = side.groups;
  j["fusions"] = side.fusions;
  nlohmann::ordered_json unmatched = nlohmann::ordered_json::array();
  for (const core::ComparedMember& op : side.unmatched) unmatched.push_back({{"name", op.name}, {"opcode", op.opcode}});
  j["unmatched"] = std::move(unmatched);
  return j;
}

nlohmann::ordered_json groupsJson(const std::vector<core::ComparedGroup>& groups) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const core::ComparedGroup& group : groups) {
    nlohmann::ordered_json members = nlohmann::ordered_json::array();
    for (const core::ComparedMember& member : group.members) {
      members.push_back({{"name", member.name},
                         {"opcode", member.opcode},
                         {"counterpart", member.counterpart.empty() ? nlohmann::ordered_json(nullptr)
                                                                    : nlohmann::ordered_json(member.counterpart)}});
    }
    list.push_back({{"name", group.name}, {"fusion", group.fusion}, {"members", std::move(members)}});
  }
  return list;
}

nlohmann::ordered_json ratioJson(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::string comparisonText(const core::FusionComparison& comparison, const std::string& aLabel,
                           const std::string& bLabel, bool withDecisions) {
  std::string out = sideText("A", aLabel, comparison.a) + sideText("B", bLabel, comparison.b);
  out += fmt::format("pairs of matched ops fused together: {} in both, {} only in A, {} only in B\n",
                     comparison.pairsBoth, comparison.pairsOnlyA, comparison.pairsOnlyB);
  if (!comparison.coverageSufficient()) {
    out += comparison.coverageShortfall() + "\n";
    if (comparison.differences.empty()) return out + "\nThe matched ops are grouped alike; the unmatched are not compared.\n";
  } else {
    out += fmt::format("precision {} (of A's fused pairs, B fuses {} of {})\n", ratio(comparison.precision()),
                       comparison.pairsBoth, comparison.pairsBoth + comparison.pairsOnlyA);
    out += fmt::format("recall    {} (of B's fused pairs, A fuses {} of {})\n", ratio(comparison.recall()),
                       comparison.pairsBoth, comparison.pairsBoth + comparison.pairsOnlyB);
    if (comparison.differences.empty()) return out + "\nA and B group every matched op alike.\n";
  }
  out += fmt::format(
      "\n{} difference(s); a group is `fusion: ops` or an unfused op; B's ops show A's name after `=` where it "
      "differs; `*` marks an op with no counterpart:\n",
      comparison.differences.size());
  int number = 0;
  for (const core::GroupDifference& difference : comparison.differences) {
    out += fmt::format("\n#{}: {} pair(s) fused only in A, {} only in B\n", ++number, difference.pairsOnlyA,
                       difference.pairsOnlyB);
    std::vector<std::string> left = columnLines(difference.a, false);
    std::vector<std::string> right = columnLines(difference.b, true);
    out += fmt::format("  {:<{}} | {}\n", "A", kColumnWidth, "B");
    for (size_t i = 0; i < std::max(left.size(), right.size()); ++i) {
      std::string l = i < left.size() ? left[i] : "";
      std::string r = i < right.size() ? right[i] : "";
      out += fmt::format("  {:<{}} | {}\n", l, kColumnWidth, r);
    }
    out += pairsText("A", difference.onlyA) + pairsText("B", difference.onlyB);
    if (!withDecisions) continue;
    if (difference.decisions.empty()) {
      out += "  our pipeline: no decision between these ops (no fusion pass tried them as producer and consumer)\n";
      continue;
    }
    out += "  our pipeline:\n";
    for (const core::FusionDecision& decision : difference.decisions) {
      out += fmt::format("    {} {}: {}\n", decision.fused ? "+" : "-", decision.pass, decision.reason);
    }
  }
  return out;
}

std::string comparisonJson(const core::FusionComparison& comparison, const std::string& aFile, const std::string& bFile,
                           const std::string& pipeline) {
  nlohmann::ordered_json root;
  root["pipeline"] = pipeline;
  root["a"] = sideJson(aFile, comparison.a);
  root["b"] = sideJson(bFile, comparison.b);
  root["pairs"] = {
      {"both", comparison.pairsBoth}, {"only_a", comparison.pairsOnlyA}, {"only_b", comparison.pairsOnlyB}};
  root["coverage_sufficient"] = comparison.coverageSufficient();
  root["coverage_needed"] = core::kCoverageForAgreement;
  if (!comparison.coverageSufficient()) root["agreement_withheld"] = comparison.coverageShortfall();
  root["precision"] = ratioJson(comparison.precision());
  root["recall"] = ratioJson(comparison.recall());
  nlohmann::ordered_json differences = nlohmann::ordered_json::array();
  for (const core::GroupDifference& difference : comparison.differences) {
    nlohmann::ordered_json d;
    d["pairs_only_a"] = difference.pairsOnlyA;
    d["pairs_only_b"] = difference.pairsOnlyB;
    d["only_a"] = difference.onlyA;
    d["only_b"] = difference.onlyB;
    d["a_groups"] = groupsJson(difference.a);
    d["b_groups"] = groupsJson(difference.b);
    nlohmann::ordered_json decisions = nlohmann::ordered_json::array();
    for (const core::FusionDecision& decision : difference.decisions) {
      decisions.push_back({{"pass", decision.pass},
                           {"producer", decision.producer},
                           {"consumer", decision.consumer},
                           {"fused", decision.fused},
                           {"reason", decision.reason}});
    }
    d["decisions"] = std::move(decisions);
    differences.push_back(std::move(d));
  }
  root["differences"] = std::move(differences);
  return jsonOutputText(root, 1) + "\n";
}

std::shared_ptr<CompareCommand> addCompareCommand(CLI::App& app) {
  auto command = std::make_shared<CompareCommand>();
  command->pipeline.pipeline = "none";
  command->command = app.add_subcommand(
      "compare-fusions",
      "Compare how two modules group the same ops into fusions (A: ours, B: e.g. XLA's "
      "*.cpu_after_optimizations.txt); with --pipeline, A is run through that pipeline first (give XLA's "
      "*.before_optimizations.txt) and each difference shows our pipeline's decisions");
  command->command->add_option("a", command->a, "HLO text file A (ours)")->required()->check(CLI::ExistingFile);
  command->command->add_option("b", command->b, "HLO text file B (e.g. XLA's after_optimizations)")
      ->required()
      ->check(CLI::ExistingFile);
  addPipelineOptions(command->command, command->pipeline);
  command->command->add_flag("--json", command->json, "Machine-readable JSON");
  command->command->add_option("-o,--output", command->output, "Write to this file instead of stdout (atomically)");
  return command;
}

std::optional<int> runCompareCommand(const CompareCommand& command) {
  if (!*command.command) return std::nullopt;
  const bool runsPipeline = command.pipeline.pipeline != "none" || !command.pipeline.passes.empty();
  // Both are verified: the comparison walks fusions and their computations as the verifier guarantees them
  // (XLA's after_optimizations dumps verify).
  std::unique_ptr<core::HloModule> a = loadModule(command.a, true, false);
  if (!a) return kExitBadInput;
  std::unique_ptr<core::HloModule> b = loadModule(command.b, true, false);
  if (!b) return kExitBadInput;
  std::optional<core::PipelineRun> run;
  std::string aLabel = command.a;
  if (runsPipeline) {
    PipelineArgs args = command.pipeline;
    args.progress = true;
    StatusOr<core::PipelineRun> ran = runPipelineFor(*a, args);
    if (!ran.ok()) {
      fmt::print(stderr, "{}: {}\n", command.a, ran.message());
      return kExitBadInput;
    }
    run = std::move(*ran);
    aLabel = fmt::format("{} after the {} pipeline", command.a, run->pipeline);
  }
  core::FusionComparison comparison = core::compareFusions(*a, *b, run ? &*run : nullptr);
  std::string text = command.json ? comparisonJson(comparison, command.a, command.b, run ? run->pipeline : "none")
                                  : comparisonText(comparison, aLabel, command.b, run.has_value());
  return emit(text, command.output);
}

}  // namespace fusionscope::cli
