#pragma once

// The fusion passes' settings: which backend's rules they follow and its limits (docs/PIPELINES.md).
#include <cstdint>
#include <string_view>

namespace fusionscope::core {

// Which backend's rules the fusion passes follow (see docs/PIPELINES.md for how cpu and gpu differ).
enum class Backend : uint8_t { kCpu, kGpu };
std::string_view backendName(Backend backend);  // "cpu", "gpu"

// Limits and switches of the fusion passes; fusionConfigFor() gives each backend's defaults.
struct FusionConfig {
  Backend backend = Backend::kGpu;
  // Most operands (kernel parameters) a fusion may have (gpu; the cpu backend sets none, as XLA CPU).
  int maxOperands = 96;
  // Most instructions inside one fusion (excluding parameters): a bound on the code one kernel becomes. XLA counts
  // no instructions (its GPU backend bounds an IR size estimate); a generator's ThreeFry or Philox rounds alone
  // are about 200 instructions, and they fuse with their consumer as in XLA.
  int maxFusedInstructions = 512;
  // XLA CPU's loop fusion (cpu_fusion_rules.cpp): every fusion is kLoop (a reduce inside is computed per output
  // element), only plain instructions are fused into a consumer, and only an unbatched matrix-vector dot takes
  // an epilogue (an add, kOutput). Off: the gpu rules below.
  bool loopFusionOnly = false;
  int maxReductionsPerFusion = 5;  // a loop fusion holding more reductions takes no further one
  int maxConcatenateOperands = 8;  // a concatenation with more operands is not fused
  // gpu: reductions take their elementwise producers as kInput fusions.
  bool fuseIntoReductions = true;
  // gpu: a reduction takes elementwise consumers as its epilogue (reduce -> convert/divide ...).
  bool reductionEpilogues = true;
  // gpu: dot/convolution + elementwise consumer (bias, activation) become one kOutput fusion.
  bool outputFusion = true;
  // Constants with at most this many elements are fused (copied) into their users; larger stay outside.
  int64_t smallConstantMaxElements = 1;
  // Expensive producers (exp, log, divide, ...) are duplicated into several consumers only when their
  // result has at most this many elements.
  int64_t duplicateExpensiveMaxElements = 1;
  // Sibling and producer-consumer multi-output fusion (GPU only in XLA).
  bool multiOutputFusion = true;
};
FusionConfig fusionConfigFor(Backend backend);

}  // namespace fusionscope::core
