#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// XLA's three rewrites of indexed reads and writes that run before fusion on both backends, so that fusion sees the
// ops XLA's fusion sees.

// Gathers and scatters with batching dimensions (`operand_batching_dims`, `input_batching_dims`: JAX's vmap of an
// indexed read or write) as plain ones, as XLA's batched gather/scatter normalizer does: an iota per batching
// dimension joins the index vector in front, and the batching dimensions become collapsed (inserted) ones.
//
//   Before:  g = f32[4,1] gather(x, i), offset_dims={1}, collapsed_slice_dims={}, start_index_map={1},
//              operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}
//                                                                          x: f32[4,6], i: s32[4,1]
//   After:   b = s32[4,1] iota(), iota_dimension=0
//            v = s32[4,2] concatenate(b, i), dimensions={1}
//            g = f32[4,1] gather(x, v), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1},
//              index_vector_dim=1, slice_sizes={1,1}
// An index vector in the implicit trailing dimension is first given that dimension (a reshape). A batching dimension
// too long for the index type stays as it is.
class GatherScatterBatchingNormalizer final : public HloPass {
 public:
  std::string_view name() const override { return "gather-scatter-batching"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// A gather that reads one slice (its indices hold a single index vector) as a dynamic-slice and a reshape, as XLA's
// gather expander does for such "simple" gathers. Both clamp the start so the slice stays inside the operand.
//
//   Before:  g = s32[4,1] gather(x, i), offset_dims={0,1}, start_index_map={1}, index_vector_dim=0,
//              slice_sizes={4,1}                                            x: s32[4,6], i: s32[1]
//   After:   g = s32[4,1] dynamic-slice(x, s32[] constant(0), reshape(slice(i))), dynamic_slice_sizes={4,1}
// Gathers with batching dimensions are left to gather-scatter-batching.
class SimpleGatherExpander final : public HloPass {
 public:
  std::string_view name() const override { return "gather-expander"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// A scatter that writes one window (a single index vector, one operand) as a dynamic-update-slice, as XLA's scatter
// expander does for such "simple" scatters. The window is combined with what it replaces by the scatter's
// computation (inlined: a plain assignment is the update itself, an add an add), and, as a scatter does, an update
// whose window would leave the operand writes nothing: a select keeps the old window then.
//
//   Before:  s = s32[8] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},
//              scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=assign   i: s32[1], u: s32[]
//   After:   v = s32[1] reshape(i); in = and-reduce(0 <= v && v <= 7)
//            s = dynamic-update-slice(x, select(broadcast(in), reshape(u), dynamic-slice(x, v0)), v0)
// Variadic scatters and scatters whose computation is not elementwise stay as they are.
class SimpleScatterExpander final : public HloPass {
 public:
  std::string_view name() const override { return "scatter-expander"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
