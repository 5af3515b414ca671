#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codegen/execution_plan.h"

namespace fusionscope::core {

class HloModule;

struct PtxOptions {
  int sm = 90;          // compute capability: sm_80, sm_90, ...
  int blockSize = 256;  // threads per block (x)
  // CUDA's libdevice, linked when a kernel calls a math function (exp, log, tanh, ...).
  std::string libdevicePath = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
};

// A GPU bundle in memory (see docs/BUNDLE.md): PTX text with one `.entry` per plan kernel, bundle.json, and the
// bytes of every constant buffer concatenated.
struct PtxBundle {
  ExecutionPlan plan;
  std::string ptx;
  std::string json;
  std::vector<uint8_t> constants;
};

// Plans `module`'s entry computation and lowers every kernel to PTX for `nvptx64-nvidia-cuda`: one thread per
// output element, guarded by the element count (reductions: one thread per output element looping over the
// reduced dimensions). `fusion` is recorded in bundle.json.
StatusOr<PtxBundle> compilePtxBundle(const HloModule& module, bool fusion, const PtxOptions& options = {});
// Writes bundle.json, kernels.ptx and (when there are constants) constants.bin into `directory` (created).
Status writePtxBundle(const PtxBundle& bundle, const std::string& directory);

// "f32", "pred", ... as bundle.json spells element types.
std::string bundleDtype(PrimitiveType type);

}  // namespace fusionscope::core
