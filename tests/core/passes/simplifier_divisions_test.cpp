// The simplifier's rewrites of divisions, as XLA's simplifier writes them: a reciprocal of a broadcast divisor
// (cpu), a division by an exponential as a product (cpu), and quotients of quotients as one division (both).
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "core/ir/hlo_clone.h"
#include "core/passes/algebraic_simplifier.h"
#include "core/passes/fusion_config.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::parseOrFail;

bool simplifyFor(HloModule& module, Backend backend) {
  PassContext context(fusionConfigFor(backend));
  AlgebraicSimplifier pass;
  return testing::runPass(pass, module, context);
}

// A kernel matrix divided by exp(2 s) where the gradient reads that exp as well (gp_regression's jvp): XLA CPU keeps
// the division, and divides the other copy, whose exp nothing else reads, through a reciprocal.
constexpr std::string_view kSharedDivisor = R"(
HloModule m
ENTRY main {
  d = f32[8,8]{1,0} parameter(0)
  s = f32[] parameter(1)
  e = f32[] exponential(s)
  b = f32[8,8]{1,0} broadcast(e), dimensions={}
  q = f32[8,8]{1,0} divide(d, b)
  g = f32[] multiply(e, s)
  gb = f32[8,8]{1,0} broadcast(g), dimensions={}
  ROOT out = f32[8,8]{1,0} add(q, gb)
}
)";

TEST(SimplifierDivisionsTest, ADivisorOthersReadKeepsItsDivision) {
  auto module = parseOrFail(kSharedDivisor);
  ASSERT_NE(module, nullptr);
  EXPECT_FALSE(simplifyFor(*module, Backend::kCpu)) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->operand(0)->opcode(), HloOpcode::kDivide) << printModule(*module);
}

TEST(SimplifierDivisionsTest, ADivisionByABroadcastExpIsAProductWithExpOfTheNegation) {
  const std::string text = R"(
HloModule m
ENTRY main {
  d = f32[8,8]{1,0} parameter(0)
  s = f32[] parameter(1)
  e = f32[] exponential(s)
  b = f32[8,8]{1,0} broadcast(e), dimensions={}
  ROOT q = f32[8,8]{1,0} divide(d, b)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kCpu));
  // d * broadcast(exp(-s)): the reciprocal 1 / exp(s) became exp(-s), and the product with one went.
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kMultiply) << printModule(*module);
  const HloInstruction* spread = root->operand(1);
  ASSERT_EQ(spread->opcode(), HloOpcode::kBroadcast) << printModule(*module);
  const HloInstruction* exp = spread->operand(0);
  ASSERT_EQ(exp->opcode(), HloOpcode::kExp) << printModule(*module);
  ASSERT_EQ(exp->operand(0)->opcode(), HloOpcode::kNegate) << printModule(*module);
  EXPECT_EQ(exp->operand(0)->operand(0)->name(), "s");
  testing::expectResultsWithinRounding(*parseOrFail(text), *module);

  auto gpu = parseOrFail(text);
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE(simplifyFor(*gpu, Backend::kGpu)) << "the gpu preset keeps the division";
}

TEST(SimplifierDivisionsTest, AConstantDivisorIsInvertedHoweverManyReadIt) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[8]{0} parameter(0)
  c = f32[] constant(4)
  b = f32[8]{0} broadcast(c), dimensions={}
  q = f32[8]{0} divide(a, b)
  ROOT r = f32[8]{0} add(q, b)
}
)");
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kCpu));
  EXPECT_EQ(module->entry()->root()->operand(0)->opcode(), HloOpcode::kMultiply) << printModule(*module);
}

// AdamW's update m / (1 - b1^t) / (sqrt(v_hat) + eps), with the bias correction read by every parameter's update
// (so the cpu preset does not divide by it through a reciprocal).
TEST(SimplifierDivisionsTest, AQuotientDividedIsOneDivisionByAProduct) {
  const std::string text = R"(
HloModule m
ENTRY main {
  m = f32[16]{0} parameter(0)
  c = f32[] parameter(1)
  v = f32[16]{0} parameter(2)
  cb = f32[16]{0} broadcast(c), dimensions={}
  mhat = f32[16]{0} divide(m, cb)
  u = f32[16]{0} divide(mhat, v)
  other = f32[16]{0} multiply(cb, v)
  shared = f32[] negate(c)
  ROOT out = (f32[16]{0}, f32[16]{0}, f32[]) tuple(u, other, shared)
}
)";
  for (Backend backend : {Backend::kCpu, Backend::kGpu}) {
    auto module = parseOrFail(text);
    ASSERT_NE(module, nullptr);
    ASSERT_TRUE(simplifyFor(*module, backend));
    const HloInstruction* u = module->entry()->root()->operand(0);
    ASSERT_EQ(u->opcode(), HloOpcode::kDivide) << printModule(*module);
    EXPECT_EQ(u->operand(0)->name(), "m") << printModule(*module);
    ASSERT_EQ(u->operand(1)->opcode(), HloOpcode::kMultiply) << printModule(*module);
    EXPECT_EQ(u->operand(1)->operand(0)->name(), "cb");
    EXPECT_EQ(u->operand(1)->operand(1)->name(), "v");
    testing::expectResultsWithinRounding(*parseOrFail(text), *module);
  }
}

TEST(SimplifierDivisionsTest, DivisionsByQuotientsAndOfQuotientsByQuotients) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = f32[16]{0} parameter(0)
  b = f32[16]{0} parameter(1)
  c = f32[16]{0} parameter(2)
  d = f32[16]{0} parameter(3)
  bc = f32[16]{0} divide(b, c)
  x = f32[16]{0} divide(a, bc)
  ab = f32[16]{0} divide(a, b)
  cd = f32[16]{0} divide(c, d)
  y = f32[16]{0} divide(ab, cd)
  ROOT out = (f32[16]{0}, f32[16]{0}) tuple(x, y)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kGpu));
  // a / (b / c) => (a * c) / b
  const HloInstruction* x = module->entry()->root()->operand(0);
  ASSERT_EQ(x->opcode(), HloOpcode::kDivide) << printModule(*module);
  ASSERT_EQ(x->operand(0)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(x->operand(1)->name(), "b");
  // (a / b) / (c / d) => (a * d) / (b * c)
  const HloInstruction* y = module->entry()->root()->operand(1);
  ASSERT_EQ(y->opcode(), HloOpcode::kDivide) << printModule(*module);
  ASSERT_EQ(y->operand(0)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(y->operand(0)->operand(1)->name(), "d");
  ASSERT_EQ(y->operand(1)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(y->operand(1)->operand(1)->name(), "c");
  testing::expectResultsWithinRounding(*parseOrFail(text), *module);
}

TEST(SimplifierDivisionsTest, IntegerQuotientsStay) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = s32[16]{0} parameter(0)
  b = s32[16]{0} parameter(1)
  c = s32[16]{0} parameter(2)
  ab = s32[16]{0} divide(a, b)
  ROOT q = s32[16]{0} divide(ab, c)
}
)");
}

}  // namespace
}  // namespace fusionscope::core
