// softmax-fusion: whole-row normalizations become one kCustom fusion, as XLA GPU's softmax rewriter forms them.
#include "core/passes/softmax_fusion.h"

#include <string>

#include <gtest/gtest.h>

#include "core/passes/fusion_utils.h"
#include "tests/core/passes/fusion_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryFusions;
using testing::fusedOpcodes;

Fused runSoftmaxFusion(std::string_view text) {
  Fused result{testing::parseOrFail(text), PassContext(fusionConfigFor(Backend::kGpu)), false};
  if (!result.module) return result;
  SoftmaxFusion pass;
  result.changed = testing::runPass(pass, *result.module, result.context);
  return result;
}

constexpr std::string_view kReducers = R"(
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

std::string module(std::string_view entry) {
  return "HloModule m\n" + std::string(kReducers) + std::string(entry);
}

// XLA's exact softmax: max diamond, exp between, sum diamond: one fusion reading the parameter.
TEST(SoftmaxFusionTest, ExactSoftmaxIsOneFusion) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[127,125]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[127]{0} reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[127,125]{1,0} broadcast(m), dimensions={0}
  s = f32[127,125]{1,0} subtract(p, mb)
  e = f32[127,125]{1,0} exponential(s)
  zero = f32[] constant(0)
  t = f32[127]{0} reduce(e, zero), dimensions={1}, to_apply=add
  tb = f32[127,125]{1,0} broadcast(t), dimensions={0}
  ROOT y = f32[127,125]{1,0} divide(e, tb)
}
)"));
  ASSERT_NE(f.module, nullptr);
  ASSERT_TRUE(f.changed) << f.reasons();
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kCustom);
  EXPECT_TRUE(isNormalizationFusion(*f.root()));
  EXPECT_EQ(f.root()->operandCount(), 1);
  EXPECT_EQ(f.root()->operand(0)->name(), "p");
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"broadcast", "broadcast", "constant", "constant", "divide", "exponential",
                                              "reduce", "reduce", "subtract"}));
  EXPECT_EQ(entryFusions(*f.module).size(), 1u);
  EXPECT_NE(f.reasons().find("reads each row of p once and computes 2 reductions over it (m, t)"), std::string::npos)
      << f.reasons();
}

// log-softmax: the second diamond's producer is the first one's root.
TEST(SoftmaxFusionTest, LogSoftmaxChainsItsDiamonds) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[16,256]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[16]{0} reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[16,256]{1,0} broadcast(m), dimensions={0}
  s = f32[16,256]{1,0} subtract(p, mb)
  e = f32[16,256]{1,0} exponential(s)
  zero = f32[] constant(0)
  t = f32[16]{0} reduce(e, zero), dimensions={1}, to_apply=add
  l = f32[16]{0} log(t)
  lb = f32[16,256]{1,0} broadcast(l), dimensions={0}
  ROOT y = f32[16,256]{1,0} subtract(s, lb)
}
)"));
  ASSERT_TRUE(f.changed) << f.reasons();
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->operandCount(), 1);
  EXPECT_EQ(entryFusions(*f.module).size(), 1u) << f.text();
}

// A layer norm (the mean as a multiply by 1/n), scale and shift (broadcast parameters) joining as consumers; the
// normalizing multiply has its broadcast first.
TEST(SoftmaxFusionTest, LayerNormWithScaleAndShiftIsOneFusion) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  x = f32[32,64]{1,0} parameter(0)
  g = f32[64]{0} parameter(1)
  b = f32[64]{0} parameter(2)
  zero = f32[] constant(0)
  sum = f32[32]{0} reduce(x, zero), dimensions={1}, to_apply=add
  inv = f32[] constant(0.015625)
  invb = f32[32]{0} broadcast(inv), dimensions={}
  mean = f32[32]{0} multiply(sum, invb)
  meanb = f32[32,64]{1,0} broadcast(mean), dimensions={0}
  c = f32[32,64]{1,0} subtract(x, meanb)
  sq = f32[32,64]{1,0} multiply(c, c)
  var = f32[32]{0} reduce(sq, zero), dimensions={1}, to_apply=add
  varn = f32[32]{0} multiply(var, invb)
  eps = f32[] constant(1e-5)
  epsb = f32[32]{0} broadcast(eps), dimensions={}
  ve = f32[32]{0} add(varn, epsb)
  r = f32[32]{0} rsqrt(ve)
  rb = f32[32,64]{1,0} broadcast(r), dimensions={0}
  n = f32[32,64]{1,0} multiply(rb, c)
  gb = f32[32,64]{1,0} broadcast(g), dimensions={1}
  scaled = f32[32,64]{1,0} multiply(n, gb)
  bb = f32[32,64]{1,0} broadcast(b), dimensions={1}
  ROOT y = f32[32,64]{1,0} add(scaled, bb)
}
)"));
  ASSERT_TRUE(f.changed) << f.reasons();
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_TRUE(isNormalizationFusion(*f.root()));
  EXPECT_EQ(entryFusions(*f.module).size(), 1u) << f.text();
  EXPECT_EQ(f.root()->operandCount(), 3) << f.text();  // x, g, b: the splat scalars come along
  EXPECT_NE(f.reasons().find("computes 2 reductions over it (sum, var)"), std::string::npos) << f.reasons();
}

TEST(SoftmaxFusionTest, AColumnReductionIsRefused) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[64,32]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[32]{0} reduce(p, ninf), dimensions={0}, to_apply=max
  mb = f32[64,32]{1,0} broadcast(m), dimensions={1}
  ROOT s = f32[64,32]{1,0} subtract(p, mb)
}
)"));
  EXPECT_FALSE(f.changed) << f.text();
  EXPECT_NE(f.reasons().find("not fusing the row normalization of s into one kernel: m does not reduce only the last "
                             "dimension of its operand"),
            std::string::npos)
      << f.reasons();
}

TEST(SoftmaxFusionTest, ABroadcastAlongTheReducedDimensionIsRefused) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[32,32]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[32]{0} reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[32,32]{1,0} broadcast(m), dimensions={1}
  ROOT s = f32[32,32]{1,0} subtract(p, mb)
}
)"));
  EXPECT_FALSE(f.changed) << f.text();
  EXPECT_NE(f.reasons().find("mb broadcasts along the reduced dimension"), std::string::npos) << f.reasons();
}

TEST(SoftmaxFusionTest, AReductionWithAnotherUserIsRefused) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[8]{0} reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[8,128]{1,0} broadcast(m), dimensions={0}
  s = f32[8,128]{1,0} subtract(p, mb)
  ROOT t = (f32[8,128]{1,0}, f32[8]{0}) tuple(s, m)
}
)"));
  EXPECT_FALSE(f.changed) << f.text();
  EXPECT_NE(f.reasons().find("m has 2 users; its result would have to be written for the others"), std::string::npos)
      << f.reasons();
}

TEST(SoftmaxFusionTest, ANonConstantInitIsRefused) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  init = f32[] parameter(1)
  m = f32[8]{0} reduce(p, init), dimensions={1}, to_apply=max
  mb = f32[8,128]{1,0} broadcast(m), dimensions={0}
  ROOT s = f32[8,128]{1,0} subtract(p, mb)
}
)"));
  EXPECT_FALSE(f.changed) << f.text();
  EXPECT_NE(f.reasons().find("the init value of m is not a constant"), std::string::npos) << f.reasons();
}

// The root combines the row result with a value that does not lead back to what was reduced.
TEST(SoftmaxFusionTest, ARootNotReachingTheReducedValueIsRefused) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  q = f32[8,128]{1,0} parameter(1)
  ninf = f32[] constant(-inf)
  m = f32[8]{0} reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[8,128]{1,0} broadcast(m), dimensions={0}
  ROOT s = f32[8,128]{1,0} subtract(q, mb)
}
)"));
  EXPECT_FALSE(f.changed) << f.text();
  EXPECT_NE(f.reasons().find("s combines the broadcast result with q, which does not lead back to p"),
            std::string::npos)
      << f.reasons();
}

// The exp between the diamonds is also an output: nothing chains through it. The first diamond takes it as a
// consumer and writes it; the second reads it.
TEST(SoftmaxFusionTest, AnIntermediateUsedOutsideStopsTheChain) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[8]{0} reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[8,128]{1,0} broadcast(m), dimensions={0}
  s = f32[8,128]{1,0} subtract(p, mb)
  e = f32[8,128]{1,0} exponential(s)
  zero = f32[] constant(0)
  t = f32[8]{0} reduce(e, zero), dimensions={1}, to_apply=add
  tb = f32[8,128]{1,0} broadcast(t), dimensions={0}
  y = f32[8,128]{1,0} divide(e, tb)
  ROOT out = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(y, e)
}
)"));
  ASSERT_TRUE(f.changed) << f.reasons();
  EXPECT_EQ(entryFusions(*f.module).size(), 2u) << f.text();
  const HloInstruction* y = f.root()->operand(0);
  ASSERT_TRUE(y->isFusion()) << f.text();
  ASSERT_TRUE(y->operand(0)->isFusion()) << f.text();
  EXPECT_EQ(y->operand(0)->fusedComputation()->root()->name(), "e") << f.text();
  EXPECT_EQ(f.root()->operand(1), y->operand(0)) << f.text();
}

TEST(SoftmaxFusionTest, IntegerRowsAreLeftAlone) {
  Fused f = runSoftmaxFusion(R"(
HloModule m
maxi {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT m = s32[] maximum(x, y)
}
ENTRY main {
  p = s32[8,128]{1,0} parameter(0)
  lo = s32[] constant(-100)
  m = s32[8]{0} reduce(p, lo), dimensions={1}, to_apply=maxi
  mb = s32[8,128]{1,0} broadcast(m), dimensions={0}
  ROOT s = s32[8,128]{1,0} subtract(p, mb)
}
)");
  EXPECT_FALSE(f.changed) << f.text();
}

TEST(SoftmaxFusionTest, SecondRunChangesNothing) {
  Fused f = runSoftmaxFusion(module(R"(
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[8]{0} reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[8,128]{1,0} broadcast(m), dimensions={0}
  ROOT s = f32[8,128]{1,0} subtract(p, mb)
}
)"));
  ASSERT_TRUE(f.changed);
  SoftmaxFusion pass;
  PassContext again;
  EXPECT_FALSE(testing::runPass(pass, *f.module, again)) << f.text();
}

}  // namespace
}  // namespace fusionscope::core
