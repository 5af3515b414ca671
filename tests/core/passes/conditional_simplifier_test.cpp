// conditional-simplify: conditionals whose branch is known when compiling run that branch inline, two-way
// conditionals over cheap branches become a select, and the rest stay, as XLA's conditional simplifier does.
#include "core/passes/conditional_simplifier.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"
#include "tests/core/testing/preset_testing.h"

namespace fusionscope::core {
namespace {

using testing::countOpcode;

// Three branches that each compute something different from the one operand they are given.
std::string threeBranches(std::string_view index, std::string_view indexShape) {
  return std::string(R"(
HloModule m
negate_it {
  p = f32[8]{0} parameter(0)
  ROOT n = f32[8]{0} negate(p)
}
exp_it {
  p = f32[8]{0} parameter(0)
  ROOT e = f32[8]{0} exponential(p)
}
double_it {
  p = f32[8]{0} parameter(0)
  ROOT d = f32[8]{0} add(p, p)
}
ENTRY main {
  a = f32[8]{0} parameter(0)
  b = f32[8]{0} parameter(1)
  c = f32[8]{0} parameter(2)
  i = )") +
         std::string(indexShape) + " " + std::string(index) + R"(
  ROOT r = f32[8]{0} conditional(i, a, b, c), branch_computations={negate_it, exp_it, double_it}
}
)";
}

// The conditional is gone, `expected` computes the result from the operand of the branch that runs, and the
// results equal the conditional's.
void expectRunsBranch(const std::string& text, HloOpcode expected, std::string_view operand) {
  auto module = testing::parseOrFail(text);
  ASSERT_NE(module, nullptr);
  ConditionalSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(countOpcode(*module->entry(), HloOpcode::kConditional), 0) << printModule(*module);
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->opcode(), expected) << printModule(*module);
  EXPECT_EQ(root->operand(0)->name(), operand) << printModule(*module);
  testing::expectSameResults(text, *module);
}

TEST(ConditionalSimplifierTest, AConstantIndexRunsItsBranchInline) {
  expectRunsBranch(threeBranches("constant(1)", "s32[]"), HloOpcode::kExp, "b");
  expectRunsBranch(threeBranches("constant(2)", "s32[]"), HloOpcode::kAdd, "c");
}

TEST(ConditionalSimplifierTest, AnIndexOutsideTheBranchesRunsTheLastOne) {
  expectRunsBranch(threeBranches("constant(7)", "s32[]"), HloOpcode::kAdd, "c");
  expectRunsBranch(threeBranches("constant(-1)", "s32[]"), HloOpcode::kAdd, "c");
}

constexpr std::string_view kTwoWay = R"(
HloModule m
on_true {
  p = (f32[8]{0}, f32[8]{0}) parameter(0)
  x = f32[8]{0} get-tuple-element(p), index=0
  y = f32[8]{0} get-tuple-element(p), index=1
  ROOT s = f32[8]{0} subtract(x, y)
}
on_false {
  p = f32[8]{0} parameter(0)
  ROOT m = f32[8]{0} multiply(p, p)
}
ENTRY main {
  a = f32[8]{0} parameter(0)
  b = f32[8]{0} parameter(1)
  pair = (f32[8]{0}, f32[8]{0}) tuple(a, b)
  ROOT r = f32[8]{0} conditional(PRED, pair, b), true_computation=on_true, false_computation=on_false
}
)";

std::string twoWay(std::string_view predicate) {
  std::string text(kTwoWay);
  text.replace(text.find("PRED"), 4, predicate);
  return text;
}

TEST(ConditionalSimplifierTest, AConstantPredicateRunsTrueOrFalse) {
  std::string onTrue = twoWay("t");
  onTrue.replace(onTrue.find("  ROOT r"), 0, "  t = pred[] constant(true)\n");
  // The true branch reads its tuple through get-tuple-elements, copied with it (tuple-simplify's to remove).
  expectRunsBranch(onTrue, HloOpcode::kSubtract, "x");
  std::string onFalse = twoWay("f");
  onFalse.replace(onFalse.find("  ROOT r"), 0, "  f = pred[] constant(false)\n");
  expectRunsBranch(onFalse, HloOpcode::kMultiply, "b");
}

TEST(ConditionalSimplifierTest, AOneBranchConditionalAlwaysRunsIt) {
  const std::string text = R"(
HloModule m
only {
  p = f32[8]{0} parameter(0)
  ROOT n = f32[8]{0} negate(p)
}
ENTRY main {
  a = f32[8]{0} parameter(0)
  i = s32[] parameter(1)
  ROOT r = f32[8]{0} conditional(i, a), branch_computations={only}
}
)";
  expectRunsBranch(text, HloOpcode::kNegate, "a");
}

// A predicate known only when running, over branches of elementwise ops: both computed, one selected, for either
// value of the predicate.
TEST(ConditionalSimplifierTest, CheapBranchesOnAPredicateBecomeASelect) {
  std::string text = twoWay("q");
  text.replace(text.find("  ROOT r"), 0, "  q = pred[] parameter(2)\n");
  auto module = testing::parseOrFail(text);
  ASSERT_NE(module, nullptr);
  ConditionalSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(countOpcode(*module->entry(), HloOpcode::kConditional), 0) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->opcode(), HloOpcode::kSelect) << printModule(*module);
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) testing::expectSameResults(text, *module, seed);
}

// A branch with a dot in it is worth branching around; a branch that passes its operand on is cheaper than a select;
// a branch with a side effect must run only when chosen. All three keep their conditional.
TEST(ConditionalSimplifierTest, ExpensiveEmptyOrSideEffectingBranchesKeepTheConditional) {
  testing::expectUnchanged<ConditionalSimplifier>(R"(
HloModule m
matmul {
  p = f32[8,8]{1,0} parameter(0)
  ROOT d = f32[8,8]{1,0} dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
negate_it {
  p = f32[8,8]{1,0} parameter(0)
  ROOT n = f32[8,8]{1,0} negate(p)
}
ENTRY main {
  a = f32[8,8]{1,0} parameter(0)
  q = pred[] parameter(1)
  ROOT r = f32[8,8]{1,0} conditional(q, a, a), true_computation=matmul, false_computation=negate_it
}
)");
  testing::expectUnchanged<ConditionalSimplifier>(R"(
HloModule m
pass_on {
  p = f32[8]{0} parameter(0)
  ROOT t = (f32[8]{0}) tuple(p)
}
negate_it {
  p = f32[8]{0} parameter(0)
  n = f32[8]{0} negate(p)
  ROOT t = (f32[8]{0}) tuple(n)
}
ENTRY main {
  a = f32[8]{0} parameter(0)
  q = pred[] parameter(1)
  ROOT r = (f32[8]{0}) conditional(q, a, a), true_computation=pass_on, false_computation=negate_it
}
)");
  testing::expectUnchanged<ConditionalSimplifier>(R"(
HloModule m
log_it {
  p = f32[8]{0} parameter(0)
  ROOT c = f32[8]{0} custom-call(p), custom_call_target="log_values", custom_call_has_side_effect=true
}
negate_it {
  p = f32[8]{0} parameter(0)
  ROOT n = f32[8]{0} negate(p)
}
ENTRY main {
  a = f32[8]{0} parameter(0)
  i = s32[] constant(0)
  ROOT r = f32[8]{0} conditional(i, a, a), branch_computations={log_it, negate_it}
}
)");
}

// JAX's `jnp.diag`-style helpers branch on a value known when compiling: after the cpu preset no conditional is
// left, and the scatter the branch holds sits with its neighbours.
TEST(ConditionalSimplifierTest, ThePresetsLeaveNoConditionalOnAKnownIndex) {
  const std::string text = threeBranches("constant(0)", "s32[]");
  for (const char* preset : {"cpu", "gpu"}) {
    auto module = testing::parseOrFail(text);
    ASSERT_NE(module, nullptr);
    ASSERT_TRUE(testing::runPreset(*module, preset).ok()) << preset;
    EXPECT_EQ(countOpcode(*module, HloOpcode::kConditional), 0) << preset << "\n" << printModule(*module);
    testing::expectSameResults(text, *module);
  }
}

}  // namespace
}  // namespace fusionscope::core
