// fusionscope-cli: headless access to everything FusionScope does. Exit codes: 0 ok, 1 the work failed
// (e.g. a file could not be written), 2 bad usage or bad input (unknown flag, malformed HLO, missing file).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/cli/cli_output.h"
#include "app/cli/compare_command.h"
#include "app/cli/compile_command.h"
#include "app/cli/info_command.h"
#include "app/cli/pipeline_commands.h"
#include "app/cli/run_commands.h"
#include "app/cli/trace_commands.h"
#include "app/cli/xla_commands.h"
#include "core/base/file_util.h"
#include "core/base/memory_limit.h"
#include "core/base/oom_reserve.h"
#include "core/dump/dump_directory.h"
#include "core/eval/evaluator.h"
#include "core/ir/hlo_verifier.h"
#include "core/pipeline/stage_check.h"
#include "core/pipeline/stages_json.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"

namespace {

using namespace fusionscope;
using cli::emit;
using cli::kExitBadInput;
using cli::kExitFailed;
using cli::kExitOk;
using cli::loadModule;

int runDump(core::HloModule& module, const std::string& input, const std::string& output, const cli::PipelineArgs& args,
            const std::string& passRegex, bool png, bool svg, bool stagesSummary, int jobs, bool groupScopes) {
  std::regex filter;
  try {
    filter = std::regex(passRegex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fmt::print(stderr, "--dump-pass-re: invalid regular expression '{}': {}\n", passRegex, e.what());
    return kExitBadInput;
  }
  StatusOr<core::PipelineRun> run = cli::runPipelineFor(module, args);
  if (!run.ok()) {
    fmt::print(stderr, "{}: {}\n", input, run.message());
    return kExitBadInput;
  }
  // Stage 0 is always written (the input as loaded); later stages when their pass matches the filter.
  std::vector<core::StageDumpRequest> requests;
  core::StagesJsonInfo info;
  info.source = input;
  info.backend = std::string(core::backendName(core::backendFor({args.pipeline, args.passes, args.disabled})));
  info.files.resize(run->stages.size());
  for (const core::Stage& stage : run->stages) {
    if (stage.index > 0 && !std::regex_search(stage.pass, filter)) continue;
    requests.push_back({stage.module.get(), stage.index, cli::consoleLabel(*run, stage)});
    core::StageFiles& files = info.files[static_cast<size_t>(stage.index)];
    files.dot = fmt::format("hlo_graph_{}.dot", stage.index);
    files.module = fmt::format("module_{}.txt", stage.index);
    if (png) files.png = fmt::format("hlo_graph_{}.png", stage.index);
    if (svg) files.svg = fmt::format("hlo_graph_{}.svg", stage.index);
  }
  core::StagesDumpOptions options;
  options.png = png;
  options.svg = svg;
  options.processes = jobs;
  options.groupScopes = groupScopes;
  StatusOr<std::vector<core::DumpedStage>> dumped =
      core::dumpStages(requests, output, options, {{"stages.json", core::stagesToJson(*run, info)}});
  if (!dumped.ok()) {
    fmt::print(stderr, "{}\n", dumped.message());
    return kExitFailed;
  }
  for (const core::DumpedStage& stage : *dumped) fmt::print("{}\n", stage.consoleLine);
  if (stagesSummary) fmt::print("\n{}", cli::stagesTable(*run));
  return kExitOk;
}

// `verify`: every stage must compute what stage 0 computes on the same random inputs.
int runVerify(core::HloModule& module, const std::string& input, const cli::PipelineArgs& args, uint64_t seed,
              int trials, double maxWork) {
  if (Status evaluable = core::checkEvaluable(module); !evaluable.ok()) {
    fmt::print(stderr, "{}: {}\n", input, evaluable.message());
    return kExitBadInput;
  }
  // The evaluator keeps every value of the module: a module whose values cannot fit in this machine's memory is
  // refused up front (half of it, as the stages are evaluated side by side with the inputs they share).
  if (Status memory = core::checkEvaluationMemory(module, memoryLimitBytes() / 2); !memory.ok()) {
    fmt::print(stderr, "{}: {}\n", input, memory.message());
    return kExitBadInput;
  }
  StatusOr<core::PipelineRun> run = cli::runPipelineFor(module, args);
  if (!run.ok()) {
    fmt::print(stderr, "{}: {}\n", input, run.message());
    return kExitBadInput;
  }
  int64_t work = core::estimateEvaluationWork(*run->stages.front().module);
  // Refused up front when even the estimate (loops of unknown trip count counted 10 times) is over the budget; a loop
  // that runs longer than estimated stops at the budget while it runs.
  if (static_cast<double>(work) > maxWork) {
    fmt::print(stderr,
               "{}: evaluating it would take about {:.1e} operations per stage, over the budget of {:.1e}; "
               "raise it with --max-work\n",
               input, static_cast<double>(work), maxWork);
    return kExitBadInput;
  }
  if (work > 2'000'000'000) {
    fmt::print(stderr, "note: about {:.1e} operations per evaluation; this will take a while\n",
               static_cast<double>(work));
  }
  bool allAgree = true;
  for (int trial = 0; trial < trials; ++trial) {
    uint64_t trialSeed = seed + static_cast<uint64_t>(trial);
    StatusOr<std::vector<core::StageCheck>> checks = core::checkStagesAgree(*run, trialSeed, maxWork);
    if (!checks.ok()) {
      fmt::print(stderr, "{}: {}\n", input, checks.message());
      return kExitBadInput;
    }
    for (const core::StageCheck& check : *checks) {
      if (check.stage == 0) continue;
      const std::string label = cli::consoleLabel(*run, run->stages[static_cast<size_t>(check.stage)]);
      if (check.agrees) {
        if (trial == 0) fmt::print("stage {} [{}]: same results as stage 0\n", check.stage, label);
        continue;
      }
      allAgree = false;
      if (!check.error.empty()) {
        fmt::print("stage {} [{}]: cannot be evaluated (seed {}): {}\n", check.stage, label, trialSeed, check.error);
      } else {
        fmt::print("stage {} [{}]: DIFFERS from stage 0 (seed {}): {}\n", check.stage, label, trialSeed,
                   check.difference);
        if (!check.instruction.empty()) fmt::print("  first differing instruction: {}\n", check.instruction);
      }
      // The first stage that goes wrong is the pass to look at; later stages inherit its error.
      fmt::print("{}: verification failed at stage {} (after {})\n", input, check.stage,
                 run->stages[static_cast<size_t>(check.stage)].pass);
      return kExitFailed;
    }
  }
  if (allAgree) {
    fmt::print("{}: all {} stage(s) agree with stage 0 on {} random input set(s) (seed {})\n", input,
               run->stages.size(), trials, seed);
  }
  return kExitOk;
}

}  // namespace

int runCli(int argc, char** argv) {
  CLI::App app{"FusionScope: watch a tensor compiler fuse an HLO graph.", "fusionscope-cli"};
  app.set_version_flag("--version", std::string("fusionscope-cli ") + FS_VERSION);
  app.require_subcommand(0, 1);
  app.fallthrough(false);
  bool listPasses = false;
  app.add_flag("--list-passes", listPasses, "List every pass and the pipelines that run it");

  std::string input;
  std::string output;
  bool noVerify = false;

  CLI::App* dump = app.add_subcommand(
      "dump",
      "Run a pass pipeline and write every stage: DIR/hlo_graph_N.dot, module_N.txt, stages.json; or, given a "
      "directory XLA wrote (--xla_dump_to), write XLA's own stages that way");
  bool png = false;
  bool svg = false;
  bool dot = false;
  bool stagesSummary = false;
  std::string passRegex = ".*";
  int jobs = 0;
  cli::PipelineArgs pipelineArgs;
  bool dumpText = false;
  std::string xlaModule;
  dump->add_option("module", input, "HLO text file, or a directory XLA's --xla_dump_to wrote")
      ->required()
      ->check(CLI::ExistingPath);
  dump->add_option("-o,--output,--xla_dump_to", output, "Dump directory (created if missing)")->required();
  cli::addPipelineOptions(dump, pipelineArgs);
  dump->add_option("--dump-pass-re,--xla_dump_hlo_pass_re", passRegex,
                   "Write only stages whose pass name matches (stage 0 always)");
  dump->add_flag("--png,--xla_dump_hlo_as_png", png, "Also render hlo_graph_N.png with Graphviz");
  dump->add_flag("--svg", svg, "Also render hlo_graph_N.svg with Graphviz");
  bool groupScopes = false;
  dump->add_flag("--group-scopes", groupScopes,
                 "Draw hlo_graph_N.dot grouped by op_name scope (else stretches of the program) as the viewer opens a "
                 "big module: about 80 nodes, each collapsed group one node");
  dump->add_flag("--xla_dump_hlo_as_dot", dot, "Accepted for XLA users: DOT files are always written");
  dump->add_flag("--xla_dump_hlo_as_text", dumpText, "Accepted for XLA users: module_N.txt is always written");
  dump->add_option("--module", xlaModule,
                   "With an XLA dump directory: the module by name or number (default: the one with the most passes)");
  std::shared_ptr<cli::IgnoredXlaFlags> ignoredXlaFlags = cli::addIgnoredXlaFlags(dump);
  dump->add_flag("--stages", stagesSummary, "Print a table of the stages (counts, changes, times)");
  dump->add_option("-j,--jobs", jobs, "Render worker processes (default: one per core)")->check(CLI::NonNegativeNumber);
  dump->add_flag("--no-verify", noVerify, "Skip the verifier (draw malformed modules as they are)");

  CLI::App* explain = app.add_subcommand("explain", "Run a pipeline and show every fusion decision and its reason");
  cli::ExplainFilter explainFilter;
  bool explainJson = false;
  explain->add_option("module", input, "HLO text file")->required()->check(CLI::ExistingFile);
  cli::addPipelineOptions(explain, pipelineArgs);
  explain->add_option("--instruction", explainFilter.instruction, "Only decisions about this instruction or fusion");
  auto* fusedOnly = explain->add_flag("--fused", explainFilter.fusedOnly, "Only decisions that fused");
  explain->add_flag("--refused", explainFilter.refusedOnly, "Only decisions that did not fuse")->excludes(fusedOnly);
  explain->add_flag("--json", explainJson, "Machine-readable JSON");
  explain->add_flag("--no-verify", noVerify, "Skip the verifier");

  CLI::App* print = app.add_subcommand("print", "Print the module as canonical HLO text");
  print->add_option("module", input, "HLO text file")->required()->check(CLI::ExistingFile);
  print->add_option("-o,--output", output, "Write to this file instead of stdout (atomically)");
  print->add_flag("--no-verify", noVerify, "Skip the verifier");

  CLI::App* info = app.add_subcommand("info", "Summarise computations, opcodes, parameters and outputs");
  bool json = false;
  info->add_option("module", input, "HLO text file")->required()->check(CLI::ExistingFile);
  info->add_flag("--json", json, "Machine-readable JSON");
  info->add_flag("--no-verify", noVerify, "Skip the verifier");

  CLI::App* verify = app.add_subcommand(
      "verify", "Run a pipeline and check with the reference evaluator that every stage computes the same results");
  uint64_t seed = 1;
  int trials = 1;
  double maxWork = core::EvalOptions{}.maxWork;
  verify->add_option("module", input, "HLO text file")->required()->check(CLI::ExistingFile);
  cli::addPipelineOptions(verify, pipelineArgs);
  verify->add_option("--seed", seed, "Seed of the random inputs")->capture_default_str();
  verify->add_option("--trials", trials, "Random input sets to try (seed, seed+1, ...)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  verify
      ->add_option("--max-work", maxWork,
                   "Most operations one evaluation may do before it stops with an error (elements computed; about 1e8 "
                   "a second for elementwise ops, 1.5e9 for dots)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  verify->add_flag("--no-verify", noVerify, "Skip the verifier");

  std::shared_ptr<cli::TraceCommands> traceCommands = cli::addTraceCommands(app);
  std::shared_ptr<cli::RunCommands> runCommands = cli::addRunCommands(app);
  std::shared_ptr<cli::XlaCommands> xlaCommands = cli::addXlaCommands(app);
  std::shared_ptr<cli::CompareCommand> compareCommand = cli::addCompareCommand(app);
  std::shared_ptr<cli::CompileCommand> compileCommand = cli::addCompileCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // --help and --version are successes; every real usage error is exit 2.
    return code == 0 ? kExitOk : kExitBadInput;
  }

  if (listPasses) return emit(cli::listPasses(), "");
  if (app.get_subcommands().empty()) {
    fmt::print(stderr, "A subcommand is required (or --list-passes)\nRun with --help for more information.\n");
    return kExitBadInput;
  }

  if (std::optional<int> code = cli::runTraceCommands(*traceCommands)) return *code;
  if (std::optional<int> code = cli::runRunCommands(*runCommands)) return *code;
  if (std::optional<int> code = cli::runXlaCommands(*xlaCommands)) return *code;
  if (std::optional<int> code = cli::runCompareCommand(*compareCommand)) return *code;
  if (std::optional<int> code = cli::runCompileCommand(*compileCommand)) return *code;
  if (*dump) {
    cli::noteIgnoredXlaFlags(*ignoredXlaFlags);
    std::error_code error;
    if (std::filesystem::is_directory(input, error)) {
      return cli::runXlaDump({input, xlaModule, output, passRegex == ".*" ? "" : passRegex, png, svg, jobs, groupScopes});
    }
  }

  std::unique_ptr<core::HloModule> module = loadModule(input, !noVerify);
  if (!module) return kExitBadInput;
  pipelineArgs.progress = true;
  if (noVerify && (*dump || *explain || *verify)) {
    // Passes and the evaluator assume a module that verifies: --no-verify shows a broken one, it never runs them.
    if (Status verified = core::verifyModule(*module); !verified.ok()) {
      if (!*dump) {
        fmt::print(stderr,
                   "{}\n(passes need a module that verifies; --no-verify only lets print, info and dump show it)\n",
                   verified.message());
        return kExitBadInput;
      }
      fmt::print(stderr, "{}\n(--no-verify: drawn as it is; no passes run on a module that does not verify)\n",
                 verified.message().substr(0, verified.message().find('\n')));
      pipelineArgs.pipeline = "none";
      pipelineArgs.passes.clear();
      pipelineArgs.disabled.clear();
    }
  }

  if (*dump) return runDump(*module, input, output, pipelineArgs, passRegex, png, svg, stagesSummary, jobs, groupScopes);
  if (*verify) return runVerify(*module, input, pipelineArgs, seed, trials, maxWork);
  if (*explain) {
    StatusOr<core::PipelineRun> run = cli::runPipelineFor(*module, pipelineArgs);
    if (!run.ok()) {
      fmt::print(stderr, "{}: {}\n", input, run.message());
      return kExitBadInput;
    }
    return emit(explainJson ? cli::explainJson(*run, explainFilter) : cli::explainText(*run, explainFilter, input), "");
  }
  if (*print) return emit(core::printModule(*module), output);
  if (*info) return emit(json ? cli::moduleInfoJson(*module) : cli::moduleInfoText(*module), "");
  return kExitBadInput;
}

int main(int argc, char** argv) {
  fusionscope::installOutOfMemoryReserve();
  try {
    return fusionscope::cli::finishOutput(runCli(argc, argv));
  } catch (const std::length_error&) {  // a container asked for more than it can hold: the same thing
    std::fputs("fusionscope-cli: out of memory\n", stderr);
    return fusionscope::cli::kExitFailed;
  } catch (const std::bad_alloc&) {
    // The size guards refuse what input asks for before allocating; this is the last line behind them.
    std::fputs("fusionscope-cli: out of memory\n", stderr);
    return fusionscope::cli::kExitFailed;
  }
}
