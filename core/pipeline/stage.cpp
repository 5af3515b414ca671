#include "core/pipeline/stage.h"

#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/ir/hlo_clone.h"
#include "core/ir/hlo_equal.h"
#include "core/ir/hlo_verifier.h"
#include "core/passes/fusion_utils.h"
#include "core/pipeline/fusion_correspondence.h"
#include "core/pipeline/pass_pipeline.h"

namespace fusionscope::core {
namespace {

std::string qualifiedName(const HloComputation& computation, const HloInstruction& inst) {
  if (computation.isEntry()) return inst.name();
  return fmt::format("{}/{}", computation.name(), inst.name());
}

// Puts a changed module into the canonical form stages are compared and printed in: instructions and
// computations in post order, fusion flags up to date.
Status normalize(HloModule& module, std::string_view pass) {
  module.updateFusionComputationFlags();
  for (const auto& computation : module.computations()) {
    if (Status s = computation->sortInPostOrder(); !s.ok()) {
      return Status::error(fmt::format("after pass {}: {}", pass, s.message()));
    }
  }
  module.sortComputationsInPostOrder();
  return okStatus();
}

class StageRecorder : public PipelineObserver {
 public:
  StageRecorder(PipelineRun& run, const RunOptions& options) : m_run(run), m_options(options) {}

  void beforePass(const HloPass& pass, std::string_view pipeline, HloModule& module) override {
    if (m_options.progress) {
      m_options.progress(fmt::format("{}/{}", pipeline, pass.name()), static_cast<int>(m_run.passes.size()));
    }
    if (m_awaitingNext) {
      m_run.stages.back().nextPass = std::string(pass.name());
      m_awaitingNext = false;
    }
    if (m_options.checkPasses) m_before = cloneModule(module);
  }

  Status afterPass(const HloPass& pass, std::string_view pipeline, bool changed, double milliseconds, HloModule& module,
                   PassContext& context) override {
    PassRun record;
    record.pass = std::string(pass.name());
    record.passPath = fmt::format("{}/{}", pipeline, pass.name());
    record.changed = changed;
    record.milliseconds = milliseconds;
    record.decisions = context.takeDecisions();
    if (!changed) {
      std::string difference;
      if (m_before && !modulesEqual(*m_before, module, &difference)) {
        return Status::error(
            fmt::format("pass {} reported no change but changed the module: {}", pass.name(), difference));
      }
      m_run.passes.push_back(std::move(record));
      return okStatus();
    }
    FS_RETURN_IF_ERROR(normalize(module, pass.name()));
    if (m_options.checkPasses) {
      if (Status s = verifyModule(module); !s.ok()) {
        return Status::error(fmt::format("after pass {}: {}", pass.name(), s.message()));
      }
    }
    const Stage& previous = m_run.stages.back();
    if (modulesEqual(*previous.module, module)) {
      m_run.passes.push_back(std::move(record));
      return okStatus();
    }
    Stage stage;
    stage.index = static_cast<int>(m_run.stages.size());
    stage.pass = record.pass;
    stage.passPath = record.passPath;
    stage.passMilliseconds = milliseconds;
    std::shared_ptr<const HloModule> snapshot = cloneModule(module);
    stage.changes = diffModules(*previous.module, *snapshot);
    fillStageCounts(stage, *snapshot);
    stage.module = std::move(snapshot);
    stage.decisions = record.decisions;
    record.stage = stage.index;
    m_run.stages.push_back(std::move(stage));
    m_run.passes.push_back(std::move(record));
    m_awaitingNext = true;
    return okStatus();
  }

 private:
  PipelineRun& m_run;
  const RunOptions& m_options;
  std::unique_ptr<HloModule> m_before;
  bool m_awaitingNext = true;  // the first pass to run names what stage 0 comes before
};

}  // namespace

std::string Stage::label() const {
  if (!description.empty()) return description;
  if (pass.empty() && nextPass.empty()) return "pipeline start";
  std::string before = pass.empty() ? "pipeline start" : fmt::format("after {}", pass);
  std::string after = nextPass.empty() ? "pipeline end" : fmt::format("before {}", nextPass);
  return fmt::format("{}, {}", before, after);
}

void fillStageCounts(Stage& stage, const HloModule& module) {
  stage.instructionCount = module.instructionCount();
  stage.fusionCount = module.fusionCount();
  stage.computationCount = static_cast<int64_t>(module.computations().size());
  stage.fusions = summarizeFusions(module);
}

std::vector<FusionSummary> summarizeFusions(const HloModule& module) {
  std::vector<FusionSummary> fusions;
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) {
      if (!inst->isFusion() || !inst->fusedComputation()) continue;
      FusionSummary summary;
      summary.name = inst->name();
      summary.computation = computation->name();
      summary.fusedComputation = inst->fusedComputation()->name();
      summary.kind = inst->fusionKind();
      for (const HloInstruction* member : fusedInstructions(*inst)) summary.members.push_back(member->name());
      summary.operandCount = inst->operandCount();
      summary.outputCount = static_cast<int64_t>(fusionOutputs(*inst).size());
      fusions.push_back(std::move(summary));
    }
  }
  return fusions;
}

StageChanges diffModules(const HloModule& before, const HloModule& after) {
  StageChanges changes;
  changes.instructionDelta = after.instructionCount() - before.instructionCount();
  // Names per non-fusion computation; a computation that appears or disappears counts whole.
  auto collect = [](const HloModule& module) {
    std::unordered_map<std::string, const HloInstruction*> names;
    std::vector<std::string> order;
    for (const auto& computation : module.computations()) {
      if (computation->isFusionComputation()) continue;
      for (const auto& inst : computation->instructions()) {
        std::string name = qualifiedName(*computation, *inst);
        order.push_back(name);
        names.emplace(std::move(name), inst.get());
      }
    }
    return std::make_pair(std::move(names), std::move(order));
  };
  auto [beforeNames, beforeOrder] = collect(before);
  auto [afterNames, afterOrder] = collect(after);
  for (const std::string& name : afterOrder) {
    if (!beforeNames.count(name)) changes.added.push_back(name);
  }
  // Which fusion now holds each fused instruction name (in the after module).
  std::unordered_map<std::string, std::string> memberOf;
  // XLA renames what it clones into a fusion (`add_any.0` becomes `add_any.2` inside the fused computation), so a
  // removed instruction whose name no fusion holds is matched to a look-alike member of a fusion that is new in
  // this stage: same opKey (opcode, shape, metadata) and name stem, each member claimed once.
  std::unordered_map<std::string, std::vector<std::pair<std::string, bool>>> lookAlikes;  // key -> (fusion, claimed)
  auto stem = [](std::string_view name) {
    size_t dot = name.rfind('.');
    if (dot != std::string_view::npos && dot + 1 < name.size() &&
        name.find_first_not_of("0123456789", dot + 1) == std::string_view::npos)
      name = name.substr(0, dot);
    return name;
  };
  auto lookAlikeKey = [&](const HloInstruction& inst) {
    return fmt::format("{} name={}", opKey(inst), stem(inst.name()));
  };
  for (const auto& computation : after.computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) {
      if (!inst->isFusion()) continue;
      std::string fusionName = qualifiedName(*computation, *inst);
      auto previous = beforeNames.find(fusionName);
      bool isNew = previous == beforeNames.end() || !previous->second->isFusion() ||
                   fusedInstructions(*previous->second).size() != fusedInstructions(*inst).size();
      for (const HloInstruction* member : fusedInstructions(*inst)) {
        std::string memberName =
            computation->isEntry() ? member->name() : fmt::format("{}/{}", computation->name(), member->name());
        memberOf.emplace(std::move(memberName), fusionName);
        if (isNew) lookAlikes[lookAlikeKey(*member)].emplace_back(fusionName, false);
      }
    }
  }
  auto findFusion = [&](const std::string& prefix, const HloInstruction& inst) -> std::string {
    if (auto it = memberOf.find(prefix + inst.name()); it != memberOf.end()) return it->second;
    auto candidates = lookAlikes.find(lookAlikeKey(inst));
    if (candidates == lookAlikes.end()) return {};
    for (auto& [fusion, claimed] : candidates->second) {
      if (claimed || fusion.compare(0, prefix.size(), prefix) != 0) continue;
      claimed = true;
      return fusion;
    }
    return {};
  };
  for (const std::string& name : beforeOrder) {
    if (afterNames.count(name)) continue;
    changes.removed.push_back(name);
    const HloInstruction* gone = beforeNames.at(name);
    std::string prefix = name.substr(0, name.size() - gone->name().size());
    const HloInstruction* probe = gone;
    if (gone->isFusion()) {
      // A fusion merged into another one: find where its root went.
      if (const HloComputation* fused = gone->fusedComputation(); fused && fused->root()) {
        probe = fused->root();
        if (probe->opcode() == HloOpcode::kTuple && probe->operandCount() > 0) probe = probe->operand(0);
      }
    }
    if (std::string fusion = findFusion(prefix, *probe); !fusion.empty()) changes.fused.push_back({name, fusion});
  }
  return changes;
}

StatusOr<PipelineRun> runPipeline(PassPipeline& pipeline, HloModule& module, PassContext& context,
                                  const RunOptions& options) {
  PipelineRun run;
  run.pipeline = std::string(pipeline.name());
  auto start = std::chrono::steady_clock::now();
  FS_RETURN_IF_ERROR(normalize(module, "pipeline start"));
  Stage first;
  std::shared_ptr<const HloModule> snapshot = cloneModule(module);
  fillStageCounts(first, *snapshot);
  first.module = std::move(snapshot);
  run.stages.push_back(std::move(first));

  StageRecorder recorder(run, options);
  pipeline.setObserver(&recorder);
  StatusOr<bool> result = pipeline.run(module, context);
  pipeline.setObserver(nullptr);
  if (!result.ok()) return result.status();
  run.totalMilliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace fusionscope::core
