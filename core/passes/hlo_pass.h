#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/ir/attributes.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// Which backend's rules the fusion passes follow (see docs/PIPELINES.md for how cpu and gpu differ).
enum class Backend : uint8_t { kCpu, kGpu };
std::string_view backendName(Backend backend);  // "cpu", "gpu"

// Limits and switches of the fusion passes; fusionConfigFor() gives each backend's defaults.
struct FusionConfig {
  Backend backend = Backend::kGpu;
  // Most operands (kernel parameters) a fusion may have.
  int maxOperands = 96;
  // Most instructions inside one fusion (excluding parameters).
  int maxFusedInstructions = 200;
  // Reductions take their elementwise producers as kInput fusions (GPU); the cpu backend only fuses into
  // reductions over the most minor dimension (a row reduction a CPU loop can vectorize).
  bool fuseIntoReductions = true;
  bool fuseIntoMinorReductionsOnly = false;
  // A reduction takes elementwise consumers as its epilogue (reduce -> convert/divide ...).
  bool reductionEpilogues = true;
  // dot/convolution + elementwise consumer (bias, activation) become one kOutput fusion.
  bool outputFusion = true;
  // Only matrix-vector dots are output-fused (XLA CPU: its GEMM library call cannot take an epilogue, the
  // matrix-vector loop it emits itself can); convolutions are then never output-fused.
  bool outputFusionMatrixVectorOnly = false;
  // Constants with at most this many elements are fused (copied) into their users; larger stay outside.
  int64_t smallConstantMaxElements = 1;
  // Expensive producers (exp, log, divide, ...) are duplicated into several consumers only when their
  // result has at most this many elements.
  int64_t duplicateExpensiveMaxElements = 1;
  // Sibling and producer-consumer multi-output fusion (GPU only in XLA).
  bool multiOutputFusion = true;
};
FusionConfig fusionConfigFor(Backend backend);

// One fusion decision, taken or refused, with the sentence that explains it. Stored with the stage the
// pass produced, shown by the viewer and `fusionscope-cli explain`.
struct FusionDecision {
  std::string pass;         // "fusion", "multi-output-fusion", "fusion-merger"
  std::string computation;  // where the instructions live
  std::string producer;     // the instruction (or fusion) that would move
  std::string consumer;     // the instruction (or fusion) it would move into
  bool fused = false;
  std::string fusion;  // the resulting fusion instruction when fused
  std::optional<FusionKind> kind;
  int64_t bytesSaved = 0;  // cost-model estimate of memory traffic saved (negative: added)
  std::string reason;      // "fused exp.1 into reduce.3: saves 400 KB of reads"
};

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
