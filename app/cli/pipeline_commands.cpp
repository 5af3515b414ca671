#include "app/cli/pipeline_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/base/json_output.h"
#include "core/passes/fusion_cost.h"
#include "core/pipeline/pass_pipeline.h"

namespace fusionscope::cli {
namespace {

bool mentions(const core::FusionDecision& d, const std::string& name) {
  return d.producer == name || d.consumer == name || d.fusion == name;
}

bool selected(const core::FusionDecision& d, const ExplainFilter& filter) {
  if (filter.fusedOnly && !d.fused) return false;
  if (filter.refusedOnly && d.fused) return false;
  return filter.instruction.empty() || mentions(d, filter.instruction);
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

void addPipelineOptions(CLI::App* command, PipelineArgs& args) {
  command
      ->add_option_function<std::string>(
          "--pipeline",
          [&args](const std::string& value) {
            args.pipeline = value;
            args.pipelineGiven = true;
          },
          "Pass pipeline: gpu, cpu or none (just the input); with --passes, whose backend's fusion rules they use")
      ->check(CLI::IsMember({"gpu", "cpu", "none"}))
      ->default_str(args.pipeline);
  command->add_option("--passes", args.passes, "Run exactly these passes, in this order (comma-separated)")
      ->delimiter(',');
  command->add_option("--disable-passes,--xla_disable_hlo_passes", args.disabled, "Skip these passes")->delimiter(',');
  command->add_flag("--check-passes", args.checkPasses,
                    "Verify the module after every changing pass and check that unchanged passes changed nothing");
}

StatusOr<core::PipelineRun> runPipelineFor(core::HloModule& module, const PipelineArgs& args) {
  core::PipelineSpec spec;
  spec.preset = args.pipeline;
  spec.passes = args.passes;
  spec.disabled = args.disabled;
  std::unique_ptr<core::PassPipeline> pipeline;
  if (args.pipeline == "none" && args.passes.empty()) {
    pipeline = std::make_unique<core::PassPipeline>("none");
  } else {
    StatusOr<std::unique_ptr<core::PassPipeline>> built = core::buildPipeline(spec);
    if (!built.ok()) return built.status();
    pipeline = std::move(*built);
  }
  core::PassContext context(core::fusionConfigFor(core::backendFor(spec)));
  if (!args.passes.empty() && !args.pipelineGiven) {
    // The fusion passes' rules differ by backend; a list of passes alone does not say which, so say it.
    fmt::print(stderr, "note: --passes {} run with the {} backend's fusion rules; --pipeline cpu or gpu chooses\n",
               fmt::join(args.passes, ","), args.pipeline);
  }
  core::RunOptions options;
  options.checkPasses = options.checkPasses || args.checkPasses;
  bool showProgress = args.progress && ::isatty(STDERR_FILENO);
  if (showProgress) {
    options.progress = [](const std::string& passPath, int done) {
      fmt::print(stderr, "\r\033[Krunning {} ({} passes done)", passPath, done);
      std::fflush(stderr);
    };
  }
  StatusOr<core::PipelineRun> run = core::runPipeline(*pipeline, module, context, options);
  if (showProgress) fmt::print(stderr, "\r\033[K");
  return run;
}

std::string consoleLabel(const core::PipelineRun& run, const core::Stage& stage) {
  if (run.pipeline == "gpu" || run.pipeline == "cpu") return fmt::format("{}: {}", upper(run.pipeline), stage.label());
  return stage.label();
}

std::string stagesTable(const core::PipelineRun& run) {
  std::string out = fmt::format("{:>5}  {:<22} {:>12} {:>8} {:>8} {:>10}\n", "stage", "pass", "instructions", "fusions",
                                "change", "time");
  for (const core::Stage& stage : run.stages) {
    std::string pass = stage.pass.empty() ? "(pipeline start)" : stage.pass;
    std::string change = stage.index == 0 ? "" : fmt::format("{:+d}", stage.changes.instructionDelta);
    std::string time = stage.index == 0 ? "" : fmt::format("{:.2f} ms", stage.passMilliseconds);
    out += fmt::format("{:>5}  {:<22} {:>12} {:>8} {:>8} {:>10}\n", stage.index, pass, stage.instructionCount,
                       stage.fusionCount, change, time);
  }
  int unchanged = static_cast<int>(
      std::count_if(run.passes.begin(), run.passes.end(), [](const core::PassRun& p) { return p.stage < 0; }));
  out += fmt::format("{} passes ran, {} changed nothing; pipeline took {:.1f} ms\n", run.passes.size(), unchanged,
                     run.totalMilliseconds);
  return out;
}

std::string listPasses() {
  std::map<std::string, std::vector<std::string>> presetsOf;
  for (const std::string& preset : core::presetNames()) {
    core::PipelineSpec spec;
    spec.preset = preset;
    StatusOr<std::unique_ptr<core::PassPipeline>> pipeline = core::buildPipeline(spec);
    if (!pipeline.ok()) continue;
    std::set<std::string> seen;
    for (const std::string& name : (*pipeline)->leafPassNames()) {
      if (seen.insert(name).second) presetsOf[name].push_back(preset);
    }
  }
  std::string out;
  for (const core::PassInfo& info : core::registeredPasses()) {
    const auto& presets = presetsOf[info.name];
    out += fmt::format("{:<20} {}  [{}]\n", info.name, info.description,
                       presets.empty() ? std::string("no preset") : fmt::format("{}", fmt::join(presets, ", ")));
  }
  for (const std::string& preset : core::presetNames()) {
    core::PipelineSpec spec;
    spec.preset = preset;
    StatusOr<std::unique_ptr<core::PassPipeline>> pipeline = core::buildPipeline(spec);
    if (!pipeline.ok()) continue;
    out += fmt::format("\npipeline {}: {}", preset, fmt::join((*pipeline)->leafPassNames(), " -> "));
  }
  out += "\n";
  return out;
}

std::string explainText(const core::PipelineRun& run, const ExplainFilter& filter, const std::string& source) {
  int fused = 0;
  int refused = 0;
  std::string body;
  for (const core::PassRun& pass : run.passes) {
    std::string lines;
    for (const core::FusionDecision& d : pass.decisions) {
      if (!selected(d, filter)) continue;
      (d.fused ? fused : refused)++;
      lines += fmt::format("  {} {}\n", d.fused ? "+" : "-", d.reason);
    }
    if (lines.empty()) continue;
    std::string where = pass.stage >= 0 ? fmt::format("stage {}", pass.stage) : std::string("no change");
    body += fmt::format("\n{} ({}):\n{}", pass.passPath, where, lines);
  }
  std::string subject = filter.instruction.empty() ? std::string() : fmt::format(" about {}", filter.instruction);
  std::string head = fmt::format("{} pipeline on {}: {} fusion decision(s){} ({} fused, {} not fused)\n", run.pipeline,
                                 source, fused + refused, subject, fused, refused);
  if (fused + refused == 0 && !filter.instruction.empty()) {
    head += fmt::format("no fusion pass considered {} (is the name right? try `fusionscope-cli info`)\n",
                        filter.instruction);
  }
  return head + body;
}

std::string explainJson(const core::PipelineRun& run, const ExplainFilter& filter) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const core::PassRun& pass : run.passes) {
    for (const core::FusionDecision& d : pass.decisions) {
      if (!selected(d, filter)) continue;
      nlohmann::ordered_json j;
      j["pass_path"] = pass.passPath;
      j["stage"] = pass.stage >= 0 ? nlohmann::ordered_json(pass.stage) : nlohmann::ordered_json(nullptr);
      j["computation"] = d.computation;
      j["producer"] = d.producer;
      j["consumer"] = d.consumer;
      j["fused"] = d.fused;
      j["fusion"] = d.fusion;
      j["kind"] = d.kind ? std::string(core::fusionKindName(*d.kind)) : std::string();
      j["bytes_saved"] = d.bytesSaved;
      j["reason"] = d.reason;
      list.push_back(std::move(j));
    }
  }
  nlohmann::ordered_json root;
  root["pipeline"] = run.pipeline;
  root["decisions"] = std::move(list);
  return jsonOutputText(root, 1) + "\n";
}

}  // namespace fusionscope::cli
