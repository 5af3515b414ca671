#include "core/passes/dce.h"

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryInstruction;
using testing::parseOrFail;

// Runs dce on `text` and expects it to report no change and leave the printed module as it was.
TEST(DceTest, RemovesUnusedChain) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  e = f32[8] exponential(p)
  n = f32[8] negate(e)
  ROOT a = f32[8] abs(p)
}
)");
  DeadCodeElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(entryInstruction(*module, "e"), nullptr);
  EXPECT_EQ(entryInstruction(*module, "n"), nullptr);
  EXPECT_EQ(module->entry()->instructionCount(), 2) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->name(), "a");
}

TEST(DceTest, KeepsRootAndUnusedParameters) {
  testing::expectUnchanged<DeadCodeElimination>(R"(
HloModule m
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  ROOT n = f32[8] negate(p0)
}
)");
}

TEST(DceTest, KeepsSideEffectingInstructions) {
  testing::expectUnchanged<DeadCodeElimination>(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  cc = f32[8] custom-call(p), custom_call_target="log_it", custom_call_has_side_effect=true
  r = f32[8] rng(p, p), distribution=rng_uniform
  tok = token[] after-all()
  ROOT n = f32[8] negate(p)
}
)");
}

TEST(DceTest, KeepsCallAndWhileWhoseBodiesHaveSideEffects) {
  testing::expectUnchanged<DeadCodeElimination>(R"(
HloModule m
effect {
  x = f32[8] parameter(0)
  ROOT cc = f32[8] custom-call(x), custom_call_target="log_it", custom_call_has_side_effect=true
}
cond {
  s = f32[8] parameter(0)
  ROOT t = pred[] constant(false)
}
body {
  b = f32[8] parameter(0)
  ROOT c = f32[8] call(b), to_apply=effect
}
ENTRY main {
  p = f32[8] parameter(0)
  c = f32[8] call(p), to_apply=effect
  w = f32[8] while(p), condition=cond, body=body
  ROOT n = f32[8] negate(p)
}
)");
}

TEST(DceTest, RemovesCallWithPureBodyAndItsComputation) {
  auto module = parseOrFail(R"(
HloModule m
pure {
  x = f32[8] parameter(0)
  ROOT e = f32[8] exponential(x)
}
ENTRY main {
  p = f32[8] parameter(0)
  c = f32[8] call(p), to_apply=pure
  ROOT n = f32[8] negate(p)
}
)");
  DeadCodeElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(entryInstruction(*module, "c"), nullptr);
  EXPECT_EQ(module->findComputation("pure"), nullptr);
  EXPECT_EQ(module->computations().size(), 1u);
}

TEST(DceTest, ControlDependenciesKeepPredecessors) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  first = f32[8] exponential(p)
  ROOT second = f32[8] negate(p), control-predecessors={first}
}
)");
  const std::string before = printModule(*module);
  DeadCodeElimination pass;
  EXPECT_FALSE(testing::runPass(pass, *module));
  EXPECT_EQ(printModule(*module), before);
  EXPECT_NE(entryInstruction(*module, "first"), nullptr);
}

TEST(DceTest, UnusedControlSuccessorGoesAndThenItsPredecessor) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  first = f32[8] exponential(p)
  second = f32[8] negate(p), control-predecessors={first}
  ROOT a = f32[8] abs(p)
}
)");
  DeadCodeElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(entryInstruction(*module, "first"), nullptr);
  EXPECT_EQ(entryInstruction(*module, "second"), nullptr);
  EXPECT_EQ(module->entry()->instructionCount(), 2);
}

TEST(DceTest, CleansFusedComputationsButKeepsFusedParameters) {
  auto module = parseOrFail(R"(
HloModule m
fused {
  fp0 = f32[8] parameter(0)
  fp1 = f32[8] parameter(1)
  dead = f32[8] exponential(fp0)
  ROOT neg = f32[8] negate(fp0)
}
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  ROOT f = f32[8] fusion(p0, p1), kind=kLoop, calls=fused
}
)");
  DeadCodeElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloComputation* fused = module->findComputation("fused");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->findInstruction("dead"), nullptr);
  EXPECT_NE(fused->findInstruction("fp1"), nullptr);
  EXPECT_EQ(fused->instructionCount(), 3);
}

TEST(DceTest, RemovesComputationsTheEntryNoLongerReaches) {
  auto module = parseOrFail(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
never_called {
  z = f32[] parameter(0)
  ROOT n = f32[] negate(z)
}
ENTRY main {
  p = f32[8] parameter(0)
  zero = f32[] constant(0)
  r = f32[] reduce(p, zero), dimensions={0}, to_apply=add
  ROOT n = f32[8] negate(p)
}
)");
  DeadCodeElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->computations().size(), 1u) << printModule(*module);
  EXPECT_EQ(module->entry()->instructionCount(), 2);
}

TEST(DceTest, LongDeadChainIsRemovedInOneRun) {
  constexpr int kLength = 20000;
  std::string text = "HloModule m\nENTRY main {\n  p = f32[8] parameter(0)\n  n0 = f32[8] negate(p)\n";
  for (int i = 1; i < kLength; ++i) text += fmt::format("  n{} = f32[8] negate(n{})\n", i, i - 1);
  text += "  ROOT a = f32[8] abs(p)\n}\n";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  DeadCodeElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->entry()->instructionCount(), 2);
  EXPECT_FALSE(testing::runPass(pass, *module));
}

TEST(DceTest, NothingDeadLeavesTheModuleAsItWas) {
  testing::expectUnchanged<DeadCodeElimination>(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p = f32[8]{0} parameter(0)
  zero = f32[] constant(0)
  e = f32[8]{0} exponential(p)
  r = f32[] reduce(e, zero), dimensions={0}, to_apply=add
  ROOT t = (f32[], f32[8]{0}) tuple(r, e)
}
)");
}

class DceCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DceCorpusTest, VerifiesAndIsIdempotent) {
  testing::expectVerifiedAndIdempotent<DeadCodeElimination>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, DceCorpusTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DceCorpusTest);

TEST(DceCorpusPresence, CorpusOrSkip) {
  if (!testing::sharedCorpusPresent()) {
    GTEST_SKIP() << "shared corpus not found at " << testing::corpusDir() << ": dce corpus cases not run";
  }
  EXPECT_FALSE(testing::corpusHloFiles().empty());
}

}  // namespace
}  // namespace fusionscope::core
