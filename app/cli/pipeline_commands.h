#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/ir/hlo_module.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"

namespace fusionscope::cli {

// What to run and how, shared by dump, explain and verify.
struct PipelineArgs {
  std::string pipeline = "gpu";  // gpu, cpu or none
  std::vector<std::string> passes;
  std::vector<std::string> disabled;
  bool checkPasses = false;
  bool progress = false;  // a one-line progress display on stderr (terminals only)
  bool pipelineGiven = false;  // whether --pipeline was on the command line (set by addPipelineOptions' callback)
};

// Adds the options that choose a pipeline (dump, explain, verify and compare-fusions share them); the
// default shown for --pipeline is the one `args` holds.
void addPipelineOptions(CLI::App* command, PipelineArgs& args);

// Runs the pipeline the arguments describe on `module` (modified in place); `pipeline=none` gives stage 0
// only. Errors (unknown pass, a pass failing) come back as a Status.
StatusOr<core::PipelineRun> runPipelineFor(core::HloModule& module, const PipelineArgs& args);

// Console label of a stage: "GPU: after fusion, before dce" for the presets, the bare label otherwise.
std::string consoleLabel(const core::PipelineRun& run, const core::Stage& stage);

// `--stages`: one row per stage with pass, instruction and fusion counts, change and time.
std::string stagesTable(const core::PipelineRun& run);

// `--list-passes`: every pass with its description and the presets that run it.
std::string listPasses();

struct ExplainFilter {
  std::string instruction;  // only decisions naming this instruction or fusion
  bool fusedOnly = false;
  bool refusedOnly = false;
};
// `explain`: every fusion decision of the run, grouped by the pass run that made it.
std::string explainText(const core::PipelineRun& run, const ExplainFilter& filter, const std::string& source);
std::string explainJson(const core::PipelineRun& run, const ExplainFilter& filter);

}  // namespace fusionscope::cli
