#pragma once

#include <cstdint>
#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// Tree reduction (`tree-reduction`, cpu preset), as XLA CPU's TreeReductionRewriter: a reduce with a reduced
// dimension longer than kWindow first reduces windows of kWindow elements (a reduce-window with stride kWindow and
// SAME padding over the reduced dimensions), then reduces what is left. Partial sums of 32 elements round far
// less than one running sum over thousands, and the windows are independent work. Repeated until no reduced
// dimension is longer than kWindow, so a second run changes nothing. Reductions inside fusions (a library
// fusion's, after `library-fusion`) are left alone, as XLA runs the rewriter on unfused computations.
//
//   Before:  s = f32[10] reduce(x: f32[100,10], zero), dimensions={0}
//   After:   w = f32[4,10] reduce-window(x, zero), window={size=32x1 stride=32x1 pad=14_14x0_0}
//            s = f32[10] reduce(w, zero), dimensions={0}
class TreeReduction final : public HloPass {
 public:
  static constexpr int64_t kWindow = 32;

  std::string_view name() const override { return "tree-reduction"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
