#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

class HloInstruction;

// Convolution layout (`convolution-layout`, cpu preset), the part of XLA CPU's layout assignment that hands its
// convolution kernel NHWC activations and HWIO filters: a floating-point convolution without groups whose output
// feature is not the innermost dimension of its result or of its kernel (NCHW `bf01_oi01->bf01`, XLA's `01oi`
// kernels) computes into a result with the feature innermost from a kernel transposed to
// [spatial..., input feature, output feature], and a transpose puts the result back in the original order. The
// CPU then runs it as vector rows over the output features (docs/CODEGEN.md, "NHWC convolutions") instead of an
// element-by-element loop nest. The input stays as it is (the row convolution reads it in any order).
//
//   Before:  c = f32[8,16,30,30] convolution(x: f32[8,3,32,32], k: f32[16,3,3,3]), dim_labels=bf01_oi01->bf01
//   After:   kt = f32[3,3,3,16] transpose(k), dimensions={2,3,1,0}
//            cn = f32[8,30,30,16] convolution(x, kt), dim_labels=bf01_01io->b01f
//            c = f32[8,16,30,30] transpose(cn), dimensions={0,3,1,2}
class ConvolutionLayout final : public HloPass {
 public:
  std::string_view name() const override { return "convolution-layout"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

// Whether ConvolutionLayout rewrites `convolution`.
bool wantsConvolutionLayout(const HloInstruction& convolution);

}  // namespace fusionscope::core
