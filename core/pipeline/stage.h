#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/ir/attributes.h"
#include "core/ir/hlo_module.h"
#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

class PassPipeline;

// One fusion instruction as a stage shows it: where it lives, what it computes and what it is made of.
struct FusionSummary {
  std::string name;
  std::string computation;       // the computation holding the fusion instruction
  std::string fusedComputation;  // the computation it calls
  FusionKind kind = FusionKind::kLoop;
  std::vector<std::string> members;  // fused instructions (not parameters), post order
  int64_t operandCount = 0;
  int64_t outputCount = 1;  // > 1 for a multi-output fusion
};

// What a pass changed, compared with the previous stage, in the non-fusion computations. Names of
// instructions outside the entry computation are qualified as `computation/instruction`.
struct StageChanges {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  struct FusedInto {
    std::string instruction;  // a removed instruction (or fusion) ...
    std::string fusion;       // ... whose work now happens inside this fusion
  };
  std::vector<FusedInto> fused;
  int64_t instructionDelta = 0;  // instruction count change, fusion computations included
};

// A pipeline stage: the module at the start, or after a pass that changed it.
struct Stage {
  int index = 0;
  std::string pass;      // leaf pass that produced it; empty for stage 0
  std::string passPath;  // with enclosing pipelines: "gpu/fusion"
  std::string nextPass;  // the pass that ran next, "" when the pipeline ended
  std::shared_ptr<const HloModule> module;
  double passMilliseconds = 0;
  int64_t instructionCount = 0;
  int64_t fusionCount = 0;
  int64_t computationCount = 0;
  StageChanges changes;
  std::vector<FusionDecision> decisions;  // made by the pass that produced the stage
  std::vector<FusionSummary> fusions;
  // Overrides label() when set (stages read from XLA's dumps say where in XLA's pipeline they are).
  std::string description;
  // A stage read from a file that could not be read or parsed (XlaStagesOptions::keepGoing): the message (with
  // file:line:col), no module.
  std::string loadError;

  // "pipeline start, before inline", "after fusion, before dce", "after dce, pipeline end".
  std::string label() const;
};

// Every leaf pass that ran, changed or not (decisions of passes that changed nothing are kept here).
struct PassRun {
  std::string pass;
  std::string passPath;
  bool changed = false;
  double milliseconds = 0;
  int stage = -1;  // the stage it produced, -1 when none
  std::vector<FusionDecision> decisions;
};

struct PipelineRun {
  std::string pipeline;  // "gpu", "cpu" or "custom"
  std::vector<Stage> stages;
  std::vector<PassRun> passes;
  double totalMilliseconds = 0;
};

struct RunOptions {
  // After every changing pass run the verifier; after every "unchanged" pass check the module really is
  // unchanged. On by default in debug builds; tests and `--check-passes` turn it on everywhere.
#ifdef NDEBUG
  bool checkPasses = false;
#else
  bool checkPasses = true;
#endif
  // Called before every leaf pass with its path ("gpu/fusion") and how many passes ran so far.
  std::function<void(const std::string& passPath, int passesDone)> progress;
};

// Runs `pipeline` on `module` (modified in place), recording stage 0 and a stage after every pass that
// changed the module. A pass that reports a change but leaves the module identical produces no stage.
StatusOr<PipelineRun> runPipeline(PassPipeline& pipeline, HloModule& module, PassContext& context,
                                  const RunOptions& options = {});

// Sets a stage's instruction, fusion and computation counts and its fusion list from `module`.
void fillStageCounts(Stage& stage, const HloModule& module);

// The fusions of a module (non-fusion computations only), in computation and text order.
std::vector<FusionSummary> summarizeFusions(const HloModule& module);

// The difference between two snapshots of one module, as StageChanges.
StageChanges diffModules(const HloModule& before, const HloModule& after);

}  // namespace fusionscope::core
