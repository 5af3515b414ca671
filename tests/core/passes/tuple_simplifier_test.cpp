#include "core/passes/tuple_simplifier.h"

#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryInstruction;
using testing::parseOrFail;

TEST(TupleSimplifierTest, ElementOfTupleIsTheOperand) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  b = s32[] parameter(1)
  t = (f32[8], s32[]) tuple(a, b)
  g = f32[8] get-tuple-element(t), index=0
  ROOT n = f32[8] negate(g)
}
)");
  TupleSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "a");
  // The get-tuple-element and the tuple it emptied are gone.
  EXPECT_EQ(entryInstruction(*module, "g"), nullptr);
  EXPECT_EQ(entryInstruction(*module, "t"), nullptr);
  EXPECT_EQ(module->entry()->instructionCount(), 3);
}

TEST(TupleSimplifierTest, TupleStillUsedElsewhereStays) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  b = s32[] parameter(1)
  t = (f32[8], s32[]) tuple(a, b)
  g = s32[] get-tuple-element(t), index=1
  n = s32[] negate(g)
  ROOT r = ((f32[8], s32[]), s32[]) tuple(t, n)
}
)");
  TupleSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(entryInstruction(*module, "n")->operand(0)->name(), "b");
  EXPECT_NE(entryInstruction(*module, "t"), nullptr);
  EXPECT_EQ(entryInstruction(*module, "g"), nullptr);
}

TEST(TupleSimplifierTest, RepackedTupleIsTheSource) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = (f32[8], s32[]) parameter(0)
  g0 = f32[8] get-tuple-element(p), index=0
  g1 = s32[] get-tuple-element(p), index=1
  ROOT t = (f32[8], s32[]) tuple(g0, g1)
}
)");
  TupleSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->entry()->root()->name(), "p");
  EXPECT_EQ(module->entry()->instructionCount(), 1) << printModule(*module);
}

TEST(TupleSimplifierTest, NestedPackingCollapsesInOneRun) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  inner = (f32[8], s32[]) tuple(a, b)
  outer = ((f32[8], s32[]), f32[]) tuple(inner, c)
  g = (f32[8], s32[]) get-tuple-element(outer), index=0
  gg = s32[] get-tuple-element(g), index=1
  ROOT n = s32[] negate(gg)
}
)");
  TupleSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "b");
  EXPECT_EQ(module->entry()->instructionCount(), 4) << printModule(*module);
  EXPECT_FALSE(testing::runPass(pass, *module));
}

TEST(TupleSimplifierTest, PartialOrReorderedRepackingStays) {
  testing::expectUnchanged<TupleSimplifier>(R"(
HloModule m
ENTRY main {
  p = (f32[8], f32[8], s32[]) parameter(0)
  g0 = f32[8] get-tuple-element(p), index=0
  g1 = f32[8] get-tuple-element(p), index=1
  swapped = (f32[8], f32[8]) tuple(g1, g0)
  prefix = (f32[8], f32[8]) tuple(g0, g1)
  ROOT t = ((f32[8], f32[8]), (f32[8], f32[8])) tuple(swapped, prefix)
}
)");
}

TEST(TupleSimplifierTest, LayoutMismatchStays) {
  testing::expectUnchanged<TupleSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[2,3]{1,0} parameter(0)
  t = (f32[2,3]{0,1}) tuple(a)
  g = f32[2,3]{0,1} get-tuple-element(t), index=0
  ROOT n = f32[2,3]{0,1} negate(g)
}
)");
}

TEST(TupleSimplifierTest, WhileAndFusionOutputsStay) {
  testing::expectUnchanged<TupleSimplifier>(R"(
HloModule m
cond {
  s = (f32[8], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=1
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}
body {
  s = (f32[8], s32[]) parameter(0)
  x = f32[8] get-tuple-element(s), index=0
  i = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  e = f32[8] exponential(x)
  ROOT r = (f32[8], s32[]) tuple(e, next)
}
ENTRY main {
  p = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (f32[8], s32[]) tuple(p, zero)
  w = (f32[8], s32[]) while(init), condition=cond, body=body
  ROOT out = f32[8] get-tuple-element(w), index=0
}
)");
}

TEST(TupleSimplifierTest, FusedComputationsAreLeftToTheFusionPasses) {
  testing::expectUnchanged<TupleSimplifier>(R"(
HloModule m
fused {
  fp = f32[8] parameter(0)
  n = f32[8] negate(fp)
  e = f32[8] exponential(fp)
  t = (f32[8], f32[8]) tuple(n, e)
  g = f32[8] get-tuple-element(t), index=0
  ROOT r = (f32[8], f32[8]) tuple(g, e)
}
ENTRY main {
  p = f32[8] parameter(0)
  ROOT f = (f32[8], f32[8]) fusion(p), kind=kLoop, calls=fused
}
)");
}

TEST(TupleSimplifierTest, UnusedPatternsAreNotChanges) {
  testing::expectUnchanged<TupleSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  b = s32[] parameter(1)
  t = (f32[8], s32[]) tuple(a, b)
  g = f32[8] get-tuple-element(t), index=0
  ROOT n = f32[8] negate(a)
}
)");
}

class TupleSimplifierCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TupleSimplifierCorpusTest, VerifiesAndIsIdempotent) {
  testing::expectVerifiedAndIdempotent<TupleSimplifier>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, TupleSimplifierCorpusTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TupleSimplifierCorpusTest);

TEST(TupleSimplifierCorpusPresence, CorpusOrSkip) {
  if (!testing::sharedCorpusPresent()) {
    GTEST_SKIP() << "shared corpus not found at " << testing::corpusDir() << ": tuple-simplify corpus cases not run";
  }
  EXPECT_FALSE(testing::corpusHloFiles().empty());
}

}  // namespace
}  // namespace fusionscope::core
