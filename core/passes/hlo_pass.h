#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_config.h"
#include "core/passes/fusion_decision.h"

namespace fusionscope::core {

// What a pass run can read and record: the backend's fusion settings and the decision log.
class PassContext {
 public:
  PassContext() = default;
  explicit PassContext(FusionConfig config) : m_config(std::move(config)) {}

  const FusionConfig& fusionConfig() const { return m_config; }
  FusionConfig& mutableFusionConfig() { return m_config; }

  void record(FusionDecision decision) { m_decisions.push_back(std::move(decision)); }
  const std::vector<FusionDecision>& decisions() const { return m_decisions; }
  std::vector<FusionDecision> takeDecisions() { return std::exchange(m_decisions, {}); }

 private:
  FusionConfig m_config;
  std::vector<FusionDecision> m_decisions;
};

// A module-to-module transformation. name() is stable kebab-case (`inline`, `multi-output-fusion`): it is
// what --passes/--disable-passes name and what stage labels show. run() returns whether the module changed;
// a pass that returns false must leave the module exactly as it was (checked in debug builds and tests).
class HloPass {
 public:
  virtual ~HloPass() = default;
  virtual std::string_view name() const = 0;
  virtual StatusOr<bool> run(HloModule& module, PassContext& context) = 0;
};

}  // namespace fusionscope::core
