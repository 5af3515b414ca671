#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

class HloInstruction;

// Whole-row normalization fusion (`softmax-fusion`, gpu preset), as XLA GPU's softmax rewriter forms its
// Triton fusions before priority fusion: a softmax, log-softmax or layer norm becomes one kernel that reads
// each row once, instead of a reduction kernel per reduce and loop kernels between them.
//
// The unit is a *diamond*: a reduce over the last dimension of a value P (its only reduced dimension; its
// init a constant), broadcast back along that dimension, and combined with P by an elementwise binary op, the
// diamond's root R. Between them only "trivial" ops may stand, each with one user: reshapes or bitcasts that
// add or drop dimensions of size 1, unary elementwise ops, and binary ones whose other operand is a splat (a
// broadcast scalar constant or parameter). Consecutive diamonds chain when the next one's P is the previous
// R, or is reached from it through trivial ops with at most two users (the exp of a softmax feeds both its
// sum and the divide), and trivial consumers of the last root with a splat or broadcast-parameter operand
// (a layer norm's scale and shift) join. Before / after (softmax):
//
//   m = f32[8] reduce(x, -inf), dimensions={1}          y = f32[8,128] fusion(x), kind=kCustom,
//   s = subtract(x, broadcast(m)); e = exponential(s)       backend_config={"fusion_backend_config":
//   t = f32[8] reduce(e, 0), dimensions={1}                   {"kind":"__triton"}}
//   y = divide(e, broadcast(t))                             (m, s, e, t, y inside)
//
// Refused, with the reason in `explain`: reductions over another dimension or several, a reduce or broadcast
// with other users, an init value that is not a constant, a broadcast along the reduced dimension, a root that
// does not reach back to the reduced value P through trivial ops, and element types other than f16, bf16,
// f32 and f64. The fusion is kCustom, so the later fusion passes keep it as it is.
class SoftmaxFusion final : public HloPass {
 public:
  std::string_view name() const override { return "softmax-fusion"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// The backend_config XLA GPU gives a generic Triton fusion, which this pass writes too.
inline constexpr std::string_view kTritonFusionBackendConfig = R"({"fusion_backend_config":{"kind":"__triton"}})";

// Whether `instruction` is a normalization fusion (kCustom with the Triton fusion kind, as this pass or XLA GPU
// writes it): codegen runs it as one kernel, where other kCustom fusions stand for library calls.
bool isNormalizationFusion(const HloInstruction& instruction);

}  // namespace fusionscope::core
