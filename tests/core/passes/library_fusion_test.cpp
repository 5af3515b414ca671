// library-fusion: which subgraphs become library (kCustom) fusions, as XLA CPU's YNNPACK rewriter forms them.
#include "core/passes/library_fusion.h"

#include <gtest/gtest.h>

#include "core/passes/fusion_utils.h"
#include "tests/core/passes/fusion_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryFusions;
using testing::fusedOpcodes;

Fused runLibraryFusion(std::string_view text) {
  Fused result{testing::parseOrFail(text), PassContext(fusionConfigFor(Backend::kCpu)), false};
  if (!result.module) return result;
  LibraryFusion pass;
  result.changed = testing::runPass(pass, *result.module, result.context);
  return result;
}

// Attention scores then a stable softmax's numerator: [8,64] x [64,64] per head, 4 heads (16,384 elements).
constexpr std::string_view kScores = R"(
HloModule m
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
ENTRY main {
  q = f32[4,64,32]{2,1,0} parameter(0)
  k = f32[4,32,64]{2,1,0} parameter(1)
  s = f32[4,64,64]{2,1,0} dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  c = f32[] constant(0.125)
  cb = f32[4,64,64]{2,1,0} broadcast(c), dimensions={}
  scaled = f32[4,64,64]{2,1,0} multiply(s, cb)
  ninf = f32[] constant(-inf)
  rowmax = f32[4,64]{1,0} reduce(scaled, ninf), dimensions={2}, to_apply=max
  rowmaxb = f32[4,64,64]{2,1,0} broadcast(rowmax), dimensions={0,1}
  shifted = f32[4,64,64]{2,1,0} subtract(scaled, rowmaxb)
  ROOT e = f32[4,64,64]{2,1,0} exponential(shifted)
}
)";

TEST(LibraryFusionTest, ARowMaximumGrowsUpIntoTheDotAndDownToTheExp) {
  Fused f = runLibraryFusion(kScores);
  ASSERT_NE(f.module, nullptr);
  ASSERT_TRUE(f.changed);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kCustom);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"broadcast", "broadcast", "constant", "constant", "dot", "exponential",
                                              "multiply", "reduce", "subtract"}));
  EXPECT_EQ(entryFusions(*f.module).size(), 1u);
  EXPECT_NE(f.reasons().find("a library fusion grown from rowmax"), std::string::npos) << f.reasons();
}

TEST(LibraryFusionTest, ADotStaysAloneAndKeepsItsBiasOutside) {
  Fused f = runLibraryFusion(R"(
HloModule m
ENTRY main {
  x = f32[32,784]{1,0} parameter(0)
  w = f32[784,128]{1,0} parameter(1)
  b = f32[128]{0} parameter(2)
  d = f32[32,128]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[32,128]{1,0} broadcast(b), dimensions={1}
  ROOT y = f32[32,128]{1,0} add(d, bb)
}
)");
  ASSERT_NE(f.module, nullptr);
  EXPECT_EQ(f.root()->opcode(), HloOpcode::kAdd) << f.text();
  const HloInstruction* dot = f.root()->operand(0);
  ASSERT_TRUE(dot->isFusion()) << f.text();
  EXPECT_EQ(dot->fusionKind(), FusionKind::kCustom);
  EXPECT_EQ(fusedOpcodes(*dot), (Opcodes{"dot"}));
}

TEST(LibraryFusionTest, SmallReductionsAndVectorDotsStayForTheLoopFusion) {
  Fused f = runLibraryFusion(withReducer(R"(
ENTRY main {
  p = f32[32,10]{1,0} parameter(0)
  m = f32[10,64]{1,0} parameter(1)
  v = f32[64]{0} parameter(2)
  c = f32[] constant(0)
  r = f32[10]{0} reduce(p, c), dimensions={0}, to_apply=add
  mv = f32[10]{0} dot(m, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = f32[10]{0} add(r, mv)
}
)"));
  ASSERT_NE(f.module, nullptr);
  EXPECT_FALSE(f.changed) << f.text();
}

TEST(LibraryFusionTest, GrowthStopsAtElementwiseOpsOnSmallTensors) {
  // The row sums (4 x 64 = 256 elements) are divided into 1: too small for the library, so the fusion of the
  // reduction ends there and says why.
  Fused f = runLibraryFusion(withReducer(R"(
ENTRY main {
  p = f32[4,64,64]{2,1,0} parameter(0)
  c = f32[] constant(0)
  sum = f32[4,64]{1,0} reduce(p, c), dimensions={2}, to_apply=add
  one = f32[] constant(1)
  ones = f32[4,64]{1,0} broadcast(one), dimensions={}
  ROOT inv = f32[4,64]{1,0} divide(ones, sum)
}
)"));
  ASSERT_NE(f.module, nullptr);
  ASSERT_TRUE(f.changed);
  EXPECT_EQ(f.root()->opcode(), HloOpcode::kDivide) << f.text();
  EXPECT_EQ(f.root()->operand(1)->fusionKind(), FusionKind::kCustom);
  EXPECT_NE(f.reasons().find("inv has fewer than 4096 elements; the library takes elementwise ops only on larger"),
            std::string::npos)
      << f.reasons();
}

TEST(LibraryFusionTest, TheLoopFusionLeavesLibraryFusionsAlone) {
  Fused f = runLibraryFusion(kScores);
  ASSERT_NE(f.module, nullptr);
  const std::string before = f.text();
  InstructionFusion fusion;
  EXPECT_FALSE(testing::runPass(fusion, *f.module, f.context)) << f.text();
  EXPECT_EQ(f.text(), before);
}

TEST(LibraryFusionTest, SecondRunChangesNothing) {
  Fused f = runLibraryFusion(kScores);
  ASSERT_NE(f.module, nullptr);
  const std::string once = f.text();
  LibraryFusion pass;
  EXPECT_FALSE(testing::runPass(pass, *f.module, f.context));
  EXPECT_EQ(f.text(), once);
}

}  // namespace
}  // namespace fusionscope::core
