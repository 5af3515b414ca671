#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

class HloInstruction;

// Library fusion (`library-fusion`), as XLA CPU's library rewriter hands subgraphs to YNNPACK (XNNPACK's
// successor) before its own loop fusion: the ops a library kernel runs faster than generated loops become
// kCustom fusions, which the `fusion` pass then leaves alone.
//
// - A dot or 2-D NHWC convolution the library supports becomes a fusion of its own.
// - A reduce or reduce-window the library supports (an add/max/min reducer, f32) and prefers (4,096 elements or
//   more in its result or an operand) starts a fusion that grows, breadth first: up into an operand whose users
//   are all inside, down into the single user of a member, as long as the op is one the library runs
//   (elementwise ops it has a kernel for on tensors of 4,096+ elements, broadcasts that keep the operand's
//   dimension order, reshapes, transposes, pads without interior padding, constants, iotas, supported dots).
//
// Candidates are taken in reverse post order (the root first); an instruction belongs to one library fusion
// at most. The run time executes a library fusion as the instructions it holds (FusionScope has no YNNPACK),
// so the pass changes what the pipeline shows, not the generated code. docs/PIPELINES.md has the conditions.
class LibraryFusion final : public HloPass {
 public:
  std::string_view name() const override { return "library-fusion"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// Whether the library (as XLA CPU's YNNPACK matcher) runs `instruction`, preference for large tensors included.
bool isLibraryOp(const HloInstruction& instruction);

}  // namespace fusionscope::core
