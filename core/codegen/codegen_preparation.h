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

// Library fusions (kind=kCustom: XLA CPU's YNNPACK fusions, our `library-fusion` pass) have no library to call:
// one that is a loop or a single reduction over elementwise work and data movement compiles as one kernel of that
// kind (kLoop, kInput); any other (dots, convolutions, several reductions) is replaced by its instructions as the cpu
// preset's producer-consumer fusion groups them (a dot with its epilogue, a reduction with its inputs); and
// `call`s run as their callee's instructions: a copy of `module` so rewritten (in the entry, loop bodies, conditions
// and branches), or null when it has neither. Plan and compile the copy.
StatusOr<std::unique_ptr<HloModule>> inlineLibraryFusions(const HloModule& module);

}  // namespace fusionscope::core
