#pragma once

#include <memory>

#include "core/base/status.h"

namespace fusionscope::core {

class HloModule;

// The rewrites every compilation (CPU executable, nvptx bundle) needs before planning, whichever pipeline ran
// (`--pipeline=none` included): batch norms and random-number generators expanded by `batch-norm-expander` and
// `rng-bit-generator-expander` (codegen has no kernels of their own; the presets already ran both, so then
// nothing is left), top-k ops and XLA's TopK custom-calls decomposed into a sort (`topk-decomposer`), then library
// fusions and calls inlined (inlineLibraryFusions).
// Returns the rewritten copy, or null when `module` needs none of it. Plan and compile the copy.
StatusOr<std::unique_ptr<HloModule>> prepareForCodegen(const HloModule& module);

}  // namespace fusionscope::core
