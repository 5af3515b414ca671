#include "core/passes/fusion_config.h"

namespace fusionscope::core {

std::string_view backendName(Backend backend) {
  return backend == Backend::kCpu ? "cpu" : "gpu";
}

FusionConfig fusionConfigFor(Backend backend) {
  FusionConfig config;
  config.backend = backend;
  if (backend == Backend::kCpu) {
    // XLA's CPU backend: loop fusion everywhere; reductions take producers only when they reduce the most
    // minor dimension (a vectorizable row loop); dot output fusion only for matrix-vector products
    // (handled in the fusion pass); no multi-output fusion and no fusion merger.
    config.maxOperands = 64;
    config.maxFusedInstructions = 128;
    config.fuseIntoMinorReductionsOnly = true;
    config.reductionEpilogues = false;
    config.outputFusionMatrixVectorOnly = true;
    config.multiOutputFusion = false;
  }
  return config;
}

}  // namespace fusionscope::core
