#include "core/passes/fusion_config.h"

namespace fusionscope::core {

std::string_view backendName(Backend backend) {
  return backend == Backend::kCpu ? "cpu" : "gpu";
}

FusionConfig fusionConfigFor(Backend backend) {
  FusionConfig config;
  config.backend = backend;
  if (backend == Backend::kCpu) {
    // XLA's CPU backend (CpuInstructionFusion): loop fusion everywhere, reductions included; no multi-output
    // fusion and no fusion merger.
    config.maxOperands = 64;
    config.loopFusionOnly = true;
    config.multiOutputFusion = false;
  }
  return config;
}

}  // namespace fusionscope::core
