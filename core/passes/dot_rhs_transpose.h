#pragma once

#include <cstdint>
#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

class HloInstruction;

// Dot rhs transpose (`dot-rhs-transpose`, cpu preset), the part of XLA CPU's layout assignment that gives a dot's
// rhs the layout its GEMM reads fastest: a large rhs contracted on its innermost (row-major) dimension — attention's
// q·kᵀ, a backward pass's dW·xᵀ — is transposed once, before the dot, so that its free dimension is innermost. The
// CPU row dot then loads each tile of an rhs row as one vector and shares it between a block of rows, instead of
// computing inner products (docs/CODEGEN.md, "Dot"). Smaller rhs (up to kMinRhsElements per batch) stay: the row
// dot copies them transposed into a stack scratch itself, once per batch, which costs less than a kernel.
//
//   Before:  d = f32[64,512] dot(a: f32[64,256], b: f32[512,256]), lhs_contracting_dims={1}, rhs_contracting_dims={1}
//   After:   t = f32[256,512]{1,0} transpose(b), dimensions={1,0}
//            d = f32[64,512] dot(a, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
//
// The transposed rhs is [batch..., contracting, free]. Before that, an operand whose batch dimensions are not its
// leading ones is transposed to [batch..., the others in order], as XLA's dot decomposer canonicalizes batched dots
// (an einsum `teh,ehd->ted` reads its rhs batch from the middle; the row dot then walked it by strides, 7x slower).
// First of all, a dot whose rhs has several free dimensions or that contracts several dimension pairs (an einsum
// `td,edh->teh`, whose rhs [e,d,h] keeps e and h) is collapsed as XLA's dot decomposer does it: lhs transposed to
// [batch..., free..., contracting...] and viewed as [batch..., M, K], rhs as [batch..., K, N] (bitcasts: row-major
// views, no kernel; a transpose only where the dimensions do not lie in groups already), one dot of those, its
// result viewed back. The row dot takes only one free dimension per operand; the einsum went element by
// element (moe_layer: 1.10x XLA's call).
//
//   Before:  h = f32[32,4,64] dot(x: f32[32,32], w: f32[4,32,64]), lhs_contracting_dims={1}, rhs_contracting_dims={1}
//   After:   t = f32[32,4,64] transpose(w), dimensions={1,0,2};  r = f32[32,256] bitcast(t)
//            c = f32[32,256] dot(x, r), lhs_contracting_dims={1}, rhs_contracting_dims={0};  h = f32[32,4,64] bitcast(c)
//
// Dots inside fusions are left alone, as the passes before fusion see none.
class DotRhsTranspose final : public HloPass {
 public:
  // Above this many rhs elements per batch the transpose is worth a kernel of its own.
  static constexpr int64_t kMinRhsElements = 16384;

  std::string_view name() const override { return "dot-rhs-transpose"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// Whether `dot`'s rhs is one DotRhsTranspose moves: a floating-point dot with one contracting dimension whose rhs
// (row-major, [batch..., free, contracting] in some order with the contracting dimension last) has more than
// kMinRhsElements elements per batch.
bool wantsRhsTranspose(const HloInstruction& dot);

}  // namespace fusionscope::core
