#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

class HloPass;

// Watches a pipeline run pass by pass: the stage recorder snapshots the module after every pass that
// changed it, and checks the passes' claims. afterPass() may fail the run.
class PipelineObserver {
 public:
  virtual ~PipelineObserver() = default;
  // `pipeline` is the innermost pipeline running the pass.
  virtual void beforePass(const HloPass& pass, std::string_view pipeline, HloModule& module) = 0;
  virtual Status afterPass(const HloPass& pass, std::string_view pipeline, bool changed, double milliseconds,
                           HloModule& module, PassContext& context) = 0;
};

// An ordered list of passes, itself a pass so pipelines nest. A fixed-point pipeline repeats its passes
// until a whole round changes nothing (or the iteration limit is hit). Leaf passes whose name is disabled
// are skipped; the observer (if any) sees every leaf pass that runs.
//
//   gpu
//   ├── inline, simplify, cse, dce, tuple-simplify
//   ├── fusion, fusion-merger, multi-output-fusion
//   └── dce
class PassPipeline : public HloPass {
 public:
  explicit PassPipeline(std::string name) : m_name(std::move(name)) {}

  std::string_view name() const override { return m_name; }
  PassPipeline& addPass(std::unique_ptr<HloPass> pass);
  const std::vector<std::unique_ptr<HloPass>>& passes() const { return m_passes; }

  void setFixedPoint(int maxIterations) { m_maxIterations = maxIterations; }
  bool isFixedPoint() const { return m_maxIterations > 1; }

  // Applies to nested pipelines too.
  void setDisabledPasses(std::set<std::string, std::less<>> names);
  void setObserver(PipelineObserver* observer);

  // Names of the leaf passes in run order (one round of fixed-point pipelines).
  std::vector<std::string> leafPassNames() const;

  StatusOr<bool> run(HloModule& module, PassContext& context) override;

 private:
  std::string m_name;
  std::vector<std::unique_ptr<HloPass>> m_passes;
  int m_maxIterations = 1;
  std::set<std::string, std::less<>> m_disabled;
  PipelineObserver* m_observer = nullptr;
};

}  // namespace fusionscope::core
