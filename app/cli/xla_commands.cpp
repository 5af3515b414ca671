#include "app/cli/xla_commands.h"

#include "app/cli/cli_output.h"

#include <unistd.h>

#include <cstdio>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "core/base/file_util.h"
#include "core/dump/dump_directory.h"
#include "core/pipeline/stages_json.h"
#include "core/pipeline/xla_stages.h"

namespace fusionscope::cli {

struct XlaCommands {
  CLI::App* stages = nullptr;
  std::string directory;
  std::string module;
  std::string output;
  bool json = false;
  bool list = false;
};

struct IgnoredXlaFlags {
  std::vector<std::pair<std::string, std::string>> flags;  // name, value given ("" when absent)
  std::vector<CLI::Option*> options;
};

namespace {


core::XlaStagesOptions progressOptions() {
  core::XlaStagesOptions options;
  if (::isatty(STDERR_FILENO)) {
    options.progress = [](const std::string& what, int done, int total) {
      if (done >= total) {
        fmt::print(stderr, "\r\033[K");
      } else {
        fmt::print(stderr, "\r\033[K{} ({}/{})", what, done + 1, total);
      }
      std::fflush(stderr);
    };
  }
  return options;
}

// Reads the directory and the chosen module's stages; prints the error and returns nullopt on bad input.
std::optional<core::XlaStages> loadStages(const std::string& directory, const std::string& selector,
                                          core::XlaDumpDirectory* scanned = nullptr) {
  StatusOr<core::XlaDumpDirectory> dir = core::scanXlaDumpDirectory(directory);
  if (!dir.ok()) {
    fmt::print(stderr, "{}\n", dir.message());
    return std::nullopt;
  }
  StatusOr<const core::XlaDumpModule*> module = core::selectXlaModule(*dir, selector);
  if (!module.ok()) {
    fmt::print(stderr, "{}", module.message());
    return std::nullopt;
  }
  StatusOr<core::XlaStages> stages = core::loadXlaStages(*dir, **module, progressOptions());
  if (!stages.ok()) {
    fmt::print(stderr, "{}\n", stages.message());
    return std::nullopt;
  }
  if (scanned) *scanned = std::move(*dir);
  return std::move(*stages);
}

std::string stagesText(const core::XlaStages& stages, const core::XlaDumpDirectory& directory) {
  std::string out = fmt::format("module {:04} {}: {} stage(s) of XLA's pipeline in {}\n", stages.moduleId,
                                stages.moduleName, stages.run.stages.size(), stages.directory);
  if (directory.modules.size() > 1) {
    out += fmt::format("({} other module(s) in this directory: --list lists them, --module NAME|N picks one)\n",
                       directory.modules.size() - 1);
  }
  for (size_t i = 0; i < stages.run.stages.size(); ++i) {
    const core::Stage& stage = stages.run.stages[i];
    std::string counts = fmt::format("{:>6} instr {:>4} fusions{}", stage.instructionCount, stage.fusionCount,
                                     stage.module ? "" : " (DOT only)");
    std::string change;
    if (i > 0 && !stages.changed[i]) {
      change = "unchanged";
    } else if (i > 0 && stage.module && stage.changes.added.empty() && stage.changes.removed.empty()) {
      change = "attributes only";
    } else if (i > 0 && stage.module) {
      change = fmt::format("+{} -{}", stage.changes.added.size(), stage.changes.removed.size());
    }
    out += fmt::format("{:>4}  {:<72} {}  {}\n", stage.index, stage.label(), counts, change);
    // One line per fusion XLA formed here (decisions share their group's reason).
    std::string last;
    for (const core::FusionDecision& decision : stage.decisions) {
      if (decision.reason == last) continue;
      last = decision.reason;
      std::string reason = decision.reason.substr(0, decision.reason.find(" (inferred"));
      out += fmt::format("        {}\n", reason);
    }
  }
  return out;
}

}  // namespace

std::shared_ptr<XlaCommands> addXlaCommands(CLI::App& app) {
  auto commands = std::make_shared<XlaCommands>();
  commands->stages = app.add_subcommand(
      "stages", "List XLA's own pipeline, stage by stage, from a directory written by --xla_dump_to");
  commands->stages->add_option("directory", commands->directory, "XLA dump directory (--xla_dump_to)")->required();
  commands->stages->add_option("--module", commands->module,
                               "Module by name (jit_step) or number (18); default: the one with the most passes");
  commands->stages->add_flag("--json", commands->json, "Machine-readable JSON (docs/STAGES_JSON.md)");
  commands->stages->add_flag("--list", commands->list, "List the modules in the directory");
  commands->stages->add_option("-o,--output", commands->output, "Write to this file instead of stdout (atomically)");
  return commands;
}

std::optional<int> runXlaCommands(const XlaCommands& commands) {
  if (!*commands.stages) return std::nullopt;
  if (commands.list) {
    StatusOr<core::XlaDumpDirectory> dir = core::scanXlaDumpDirectory(commands.directory);
    if (!dir.ok()) {
      fmt::print(stderr, "{}\n", dir.message());
      return kExitBadInput;
    }
    return emit(fmt::format("{} module(s) in {}:\n{}", dir->modules.size(), dir->path, core::describeXlaModules(*dir)),
                commands.output);
  }
  core::XlaDumpDirectory directory;
  std::optional<core::XlaStages> stages = loadStages(commands.directory, commands.module, &directory);
  if (!stages) return kExitBadInput;
  return emit(commands.json ? core::xlaStagesToJson(*stages) : stagesText(*stages, directory), commands.output);
}

int runXlaDump(const XlaDumpArgs& args) {
  std::regex filter;
  try {
    filter = std::regex(args.passRegex.empty() ? std::string(".*") : args.passRegex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fmt::print(stderr, "--dump-pass-re: invalid regular expression '{}': {}\n", args.passRegex, e.what());
    return kExitBadInput;
  }
  std::optional<core::XlaStages> stages = loadStages(args.directory, args.module);
  if (!stages) return kExitBadInput;
  std::vector<core::StageDumpRequest> requests;
  std::vector<std::pair<std::string, std::string>> extraFiles;
  core::StagesJsonInfo info;
  info.source = args.directory;
  info.backend = "xla";
  for (const core::XlaDumpFile& file : stages->files) {
    if (file.kind == core::XlaDumpFile::Kind::kAfterOptimizations) {
      info.backend = file.pass.find("gpu") != std::string::npos ? "gpu" : "cpu";
    }
  }
  info.files.resize(stages->run.stages.size());
  for (size_t i = 0; i < stages->run.stages.size(); ++i) {
    const core::Stage& stage = stages->run.stages[i];
    if (i > 0 && !std::regex_search(stage.pass, filter)) continue;
    core::StageFiles& files = info.files[i];
    files.dot = fmt::format("hlo_graph_{}.dot", stage.index);
    if (!stage.module) {
      // XLA wrote only a DOT file for this stage: it is copied as it is (no image: nothing to lay out it from).
      StatusOr<std::string> dot = readFile(stages->files[i].dotPath);
      if (!dot.ok()) {
        fmt::print(stderr, "{}\n", dot.message());
        return kExitBadInput;
      }
      extraFiles.emplace_back(files.dot, std::move(*dot));
      continue;
    }
    requests.push_back({stage.module.get(), stage.index, stage.label()});
    files.module = fmt::format("module_{}.txt", stage.index);
    if (args.png) files.png = fmt::format("hlo_graph_{}.png", stage.index);
    if (args.svg) files.svg = fmt::format("hlo_graph_{}.svg", stage.index);
  }
  extraFiles.emplace_back("stages.json", core::stagesToJson(stages->run, info));
  core::StagesDumpOptions options;
  options.png = args.png;
  options.svg = args.svg;
  options.processes = args.jobs;
  options.groupScopes = args.groupScopes;
  StatusOr<std::vector<core::DumpedStage>> dumped = core::dumpStages(requests, args.output, options, extraFiles);
  if (!dumped.ok()) {
    fmt::print(stderr, "{}\n", dumped.message());
    return kExitFailed;
  }
  for (const core::DumpedStage& stage : *dumped) fmt::print("{}\n", stage.consoleLine);
  return kExitOk;
}

std::shared_ptr<IgnoredXlaFlags> addIgnoredXlaFlags(CLI::App* command) {
  // XLA's dump flags that have no meaning here (protos, HTML, URLs, snapshots, timestamps, module filters, ...).
  static const char* const kNames[] = {
      "--xla_dump_hlo_as_proto",        "--xla_dump_hlo_as_html",          "--xla_dump_hlo_as_url",
      "--xla_dump_hlo_as_long_text",    "--xla_dump_hlo_module_re",        "--xla_dump_hlo_pipeline_re",
      "--xla_dump_hlo_snapshots",       "--xla_dump_include_timestamp",    "--xla_dump_max_hlo_modules",
      "--xla_dump_module_metadata",     "--xla_dump_compress_protos",      "--xla_dump_fusion_visualization",
      "--xla_dump_large_constants",     "--xla_dump_disable_metadata",     "--xla_dump_full_hlo_config",
      "--xla_dump_latency_hiding_schedule", "--xla_dump_enable_mlir_pretty_form", "--xla_dump_emitter_re",
      "--xla_dump_hlo_unoptimized_snapshots", "--xla_dump_hlo_as_metadata", "--xla_dump_hlo_graph_path",
  };
  auto flags = std::make_shared<IgnoredXlaFlags>();
  flags->flags.reserve(std::size(kNames));
  for (const char* name : kNames) {
    flags->flags.emplace_back(name, std::string());
    // A flag, so `--xla_dump_hlo_as_proto MODULE` never takes the module as its value; `--flag=value` works.
    flags->options.push_back(command->add_flag(name, flags->flags.back().second, "XLA flag: accepted and ignored")
                                 ->group(""));  // hidden from --help's option list
  }
  return flags;
}

void noteIgnoredXlaFlags(const IgnoredXlaFlags& flags) {
  for (size_t i = 0; i < flags.options.size(); ++i) {
    if (flags.options[i]->count() > 0) {
      fmt::print(stderr, "note: {} is not implemented by fusionscope-cli and is ignored\n", flags.flags[i].first);
    }
  }
}

}  // namespace fusionscope::cli
