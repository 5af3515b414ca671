#pragma once

#include <cstdint>
#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// A long scan as two short ones (`reduce-window-rewriter`, cpu preset), as XLA CPU's ReduceWindowRewriter: a
// reduce-window that is a cumulative reduction along one dimension (window as long as the dimension, stride 1,
// padded by its length less one before it: an inclusive forward scan; after it: a reverse scan; by the whole
// length: exclusive) longer than kBase elements becomes
//  - the dimension moved last, padded with the init value to a multiple of kBase and cut into columns of kBase;
//  - a scan of kBase within each column (a reduce-window);
//  - the exclusive scan of the columns' totals (each column's last element; a reduce-window over the columns);
//  - the reducer's op applied to the two, the second broadcast along each column; then the shape back.
// Every scan is short (jnp.cumsum over a vocabulary is 16 columns of 16 instead of one window of 256 per element),
// and the final op is elementwise, so it fuses with what reads the scan. Only single-input scans whose reducer is
// one commutative binary op of its two parameters (add, multiply, maximum, minimum, and, or) change; what XLA
// writes as a `map` of the reducer is that op here.
//
//   Before:  c = f32[64] reduce-window(x, 0), window={size=64 pad=63_0}, to_apply=add
//   After:   t = f32[4,16] reshape(x); o = f32[4,16] reduce-window(t, 0), window={size=1x16 pad=0_0x15_0}
//            l = f32[4] reshape(slice(o, [0:4, 15:16])); e = f32[5] reduce-window(l, 0), window={size=4 pad=4_0}
//            c = f32[64] reshape(add(o, broadcast(slice(e, [0:4]), dimensions={0})))
class ReduceWindowRewriter final : public HloPass {
 public:
  static constexpr int64_t kBase = 16;

  std::string_view name() const override { return "reduce-window-rewriter"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
