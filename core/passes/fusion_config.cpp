#include "core/passes/fusion_config.h"

#include <limits>

namespace fusionscope::core {

std::string_view backendName(Backend backend) {
  return backend == Backend::kCpu ? "cpu" : "gpu";
}

FusionConfig fusionConfigFor(Backend backend) {
  FusionConfig config;
  config.backend = backend;
  if (backend == Backend::kCpu) {
    // XLA's CPU backend (CpuInstructionFusion): loop fusion everywhere, reductions included; no multi-output
    // fusion and no fusion merger. It bounds a fusion by the copies of one value its loop would compute
    // (cpuCodeDuplicationRule), not by its operand count: a residual stream through six blocks of an LLM's
    // backward pass is one fusion of 118 operands there.
    config.maxOperands = std::numeric_limits<int>::max();
    config.loopFusionOnly = true;
    config.multiOutputFusion = false;
    // InstructionFusion::ShouldFuse forbids duplicating an expensive producer whatever its size: a one-element
    // exp (a scalar hyperparameter's exp(log_scale)) stays its own fusion that every user reads.
    config.duplicateExpensiveMaxElements = 0;
  }
  return config;
}

}  // namespace fusionscope::core
