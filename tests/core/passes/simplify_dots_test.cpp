// The simplifier's rewrites of dots in simplify_dots.cpp that are tested on their own here: a dot that contracts
// nothing (no contracting dimensions, or only ones of size 1) is a multiply of its operands broadcast to the result,
// as XLA's simplifier writes it.
#include <string_view>

#include <gtest/gtest.h>

#include "core/passes/algebraic_simplifier.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::countOpcode;

// A scalar times a vector written as a dot (gp_regression's gradient: jnp.dot of a scalar), a batched outer product
// whose rhs has its batch dimension last, and a bf16 outer product into f32.
constexpr std::string_view kOuterProducts = R"(
HloModule m
ENTRY main {
  s = f32[] parameter(0)
  v = f32[48]{0} parameter(1)
  a = f32[3,4]{1,0} parameter(2)
  b = f32[5,3]{1,0} parameter(3)
  x = bf16[4]{0} parameter(4)
  y = bf16[6]{0} parameter(5)
  scaled = f32[48]{0} dot(s, v), lhs_contracting_dims={}, rhs_contracting_dims={}
  outer = f32[3,4,5]{2,1,0} dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={}, rhs_contracting_dims={}
  mixed = f32[4,6]{1,0} dot(x, y), lhs_contracting_dims={}, rhs_contracting_dims={}
  ROOT t = (f32[48]{0}, f32[3,4,5]{2,1,0}, f32[4,6]{1,0}) tuple(scaled, outer, mixed)
}
)";

TEST(SimplifyDotsTest, ADotThatContractsNothingIsAMultiplyOfBroadcasts) {
  auto module = testing::parseOrFail(kOuterProducts);
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(countOpcode(*module, HloOpcode::kDot), 0) << printModule(*module);
  for (int i = 0; i < 3; ++i) {
    const HloInstruction* product = module->entry()->root()->operand(i);
    EXPECT_EQ(product->opcode(), HloOpcode::kMultiply) << printModule(*module);
    EXPECT_EQ(product->operand(0)->opcode(), HloOpcode::kBroadcast) << printModule(*module);
  }
  testing::expectSameResults(kOuterProducts, *module);
}

// Contracting over dimensions of size 1 contracts nothing: gp_regression's gradient multiplies two [48,1] solves over
// their 1s (an outer product), and a batched one contracts a size-1 dimension that is not last.
constexpr std::string_view kUnitContractions = R"(
HloModule m
ENTRY main {
  x = f32[48,1]{1,0} parameter(0)
  y = f32[48,1]{0,1} parameter(1)
  a = f32[2,1,5]{2,1,0} parameter(2)
  b = f32[2,3,1]{2,1,0} parameter(3)
  outer = f32[48,48]{1,0} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  batched = f32[2,5,3]{2,1,0} dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={2}
  ROOT t = (f32[48,48]{1,0}, f32[2,5,3]{2,1,0}) tuple(outer, batched)
}
)";

TEST(SimplifyDotsTest, ADotContractingOnlyDimensionsOfSizeOneIsAMultiplyOfBroadcasts) {
  auto module = testing::parseOrFail(kUnitContractions);
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(countOpcode(*module, HloOpcode::kDot), 0) << printModule(*module);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(module->entry()->root()->operand(i)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  }
  testing::expectSameResults(kUnitContractions, *module);
}

// A dot that contracts a dimension stays a dot, also when it contracts a size-1 dimension beside it.
TEST(SimplifyDotsTest, ADotThatAlsoContractsALongerDimensionStaysADot) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[3,4,1]{2,1,0} parameter(0)
  b = f32[4,1,5]{2,1,0} parameter(1)
  ROOT d = f32[3,5]{1,0} dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
}
)");
}

// A dot that contracts a dimension stays a dot.
TEST(SimplifyDotsTest, AMatrixProductStaysADot) {
  auto module = testing::parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[3,4]{1,0} parameter(0)
  b = f32[4,5]{1,0} parameter(1)
  ROOT d = f32[3,5]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_FALSE(testing::runPass(pass, *module));
}

}  // namespace
}  // namespace fusionscope::core
