// convolution-layout: convolutions whose output feature is not innermost compute NHWC from an HWIO kernel between
// transposes, as XLA CPU's layout assignment hands its convolution kernel NHWC/HWIO.
#include "core/passes/convolution_layout.h"

#include <string>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

bool rewrite(HloModule& module) {
  ConvolutionLayout pass;
  return testing::runPass(pass, module);
}

// PyTorch/XLA's NCHW convolution (mobilenet's bf01_oi01->bf01).
TEST(ConvolutionLayoutTest, NchwConvolutionComputesNhwcBetweenTransposes) {
  auto module = testing::parseOrFail(R"(HloModule m
ENTRY main {
  x = f32[8,3,32,32]{3,2,1,0} parameter(0)
  k = f32[16,3,3,3]{3,2,1,0} parameter(1)
  ROOT c = f32[8,16,30,30]{3,2,1,0} convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01
}
)");
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* back = module->entry()->root();
  ASSERT_EQ(back->opcode(), HloOpcode::kTranspose) << printModule(*module);
  EXPECT_EQ(back->shape().toString(), "f32[8,16,30,30]{3,2,1,0}");
  EXPECT_EQ(*back->attributes().dimensions, (std::vector<int64_t>{0, 3, 1, 2}));
  const HloInstruction* convolution = back->operand(0);
  ASSERT_EQ(convolution->opcode(), HloOpcode::kConvolution);
  EXPECT_EQ(convolution->shape().toString(), "f32[8,30,30,16]{3,2,1,0}");
  EXPECT_EQ(*convolution->attributes().findRaw("dim_labels"), "bf01_01io->b01f");
  EXPECT_EQ(convolution->operand(0)->name(), "x");
  const HloInstruction* kernel = convolution->operand(1);
  ASSERT_EQ(kernel->opcode(), HloOpcode::kTranspose);
  EXPECT_EQ(kernel->shape().toString(), "f32[3,3,3,16]{3,2,1,0}");
  EXPECT_EQ(*kernel->attributes().dimensions, (std::vector<int64_t>{2, 3, 1, 0}));
  EXPECT_FALSE(rewrite(*module)) << "a second run changes nothing\n" << printModule(*module);
}

// XLA's own NHWC convolution with an 01oi kernel: only the kernel moves (no transpose of the result).
TEST(ConvolutionLayoutTest, OiKernelIsTransposedAndTheResultStays) {
  auto module = testing::parseOrFail(R"(HloModule m
ENTRY main {
  x = f32[1,14,14,64] parameter(0)
  k = f32[3,3,32,64] parameter(1)
  ROOT c = f32[1,14,14,32] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01oi->b01f
}
)");
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kConvolution) << printModule(*module);
  EXPECT_EQ(*root->attributes().findRaw("dim_labels"), "b01f_01io->b01f");
  EXPECT_EQ(root->shape().toString(false), "f32[1,14,14,32]");
  ASSERT_EQ(root->operand(1)->opcode(), HloOpcode::kTranspose);
  EXPECT_EQ(*root->operand(1)->attributes().dimensions, (std::vector<int64_t>{0, 1, 3, 2}));
}

TEST(ConvolutionLayoutTest, NhwcGroupedAndIntegerConvolutionsAreLeftAlone) {
  auto module = testing::parseOrFail(R"(HloModule m
ENTRY main {
  x = f32[1,14,14,8] parameter(0)
  k = f32[3,3,8,16] parameter(1)
  nhwc = f32[1,12,12,16] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f
  y = f32[1,8,14,14] parameter(2)
  g = f32[8,1,3,3] parameter(3)
  grouped = f32[1,8,12,12] convolution(y, g), window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=8
  i = s32[1,8,14,14] parameter(4)
  ik = s32[16,8,3,3] parameter(5)
  integer = s32[1,16,12,12] convolution(i, ik), window={size=3x3}, dim_labels=bf01_oi01->bf01
  ROOT t = (f32[1,12,12,16], f32[1,8,12,12], s32[1,16,12,12]) tuple(nhwc, grouped, integer)
}
)");
  EXPECT_FALSE(rewrite(*module)) << printModule(*module);
}

}  // namespace
}  // namespace fusionscope::core
