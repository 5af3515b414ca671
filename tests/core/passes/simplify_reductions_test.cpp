// The simplifier's rewrites in simplify_reductions.cpp that are tested on their own here: a scatter-add into zeros
// that is then added to a value updates that value instead, as XLA's simplifier writes it.
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "core/passes/algebraic_simplifier.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

// The gradient of a diagonal read (JAX's jnp.diag in gp_regression): a scatter-add of the updates into zeros, added
// to the rest of the gradient. Indices 0..7 on the diagonal, one repeated, so two updates meet in one element.
constexpr std::string_view kScatterIntoZeros = R"(
HloModule m
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  rest = f32[8,8]{1,0} parameter(0)
  updates = f32[9]{0} parameter(1)
  i = s32[8]{0} iota(), iota_dimension=0
  j = s32[1]{0} constant({3})
  k = s32[9]{0} concatenate(i, j), dimensions={0}
  column = s32[9,1]{1,0} reshape(k)
  indices = s32[9,2]{1,0} concatenate(column, column), dimensions={1}
  zero = f32[] constant(0)
  zeros = f32[8,8]{1,0} broadcast(zero), dimensions={}
  spread = f32[8,8]{1,0} scatter(zeros, indices, updates), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add_f32
  ROOT g = f32[8,8]{1,0} add(rest, spread)
}
)";

TEST(SimplifyReductionsTest, AScatterAddIntoZerosThenAddedUpdatesTheSumInstead) {
  auto module = testing::parseOrFail(kScatterIntoZeros);
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kScatter) << printModule(*module);
  EXPECT_EQ(root->operand(0)->name(), "rest") << printModule(*module);
  auto original = testing::parseOrFail(kScatterIntoZeros);
  ASSERT_NE(original, nullptr);
  testing::expectResultsWithinRounding(*original, *module);
}

// A scatter that keeps the larger value, or one whose zeros others read as its result, stays.
TEST(SimplifyReductionsTest, OtherScattersIntoZerosStay) {
  std::string maximum(kScatterIntoZeros);
  maximum.replace(maximum.find("add(x, y)"), 9, "maximum(x, y)");
  testing::expectUnchanged<AlgebraicSimplifier>(maximum);
  std::string shared(kScatterIntoZeros);
  shared.replace(
      shared.find("  ROOT g = f32[8,8]{1,0} add(rest, spread)"), std::string::npos,
      "  g = f32[8,8]{1,0} add(rest, spread)\n  ROOT t = (f32[8,8]{1,0}, f32[8,8]{1,0}) tuple(g, spread)\n}\n");
  testing::expectUnchanged<AlgebraicSimplifier>(shared);
}

}  // namespace
}  // namespace fusionscope::core
