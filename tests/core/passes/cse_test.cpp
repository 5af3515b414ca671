#include "core/passes/cse.h"

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

TEST(CseTest, MergesIdenticalInstructions) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  a = f32[8] exponential(p)
  b = f32[8] exponential(p)
  ROOT s = f32[8] add(a, b)
}
)");
  CommonSubexpressionElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0)->name(), "a");
  EXPECT_EQ(root->operand(1)->name(), "a");
  EXPECT_EQ(entryInstruction(*module, "b"), nullptr);
  EXPECT_EQ(module->entry()->instructionCount(), 3);
}

TEST(CseTest, CollapsesDuplicatedChainsInOneRun) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[8] parameter(0)
  c1 = f32[] constant(2)
  c2 = f32[] constant(2)
  b1 = f32[8] broadcast(c1), dimensions={}
  b2 = f32[8] broadcast(c2), dimensions={}
  m1 = f32[8] multiply(p, b1)
  m2 = f32[8] multiply(p, b2)
  n1 = f32[8] negate(m1)
  n2 = f32[8] negate(m2)
  ROOT t = (f32[8], f32[8]) tuple(n1, n2)
}
)");
  CommonSubexpressionElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0), root->operand(1)) << printModule(*module);
  EXPECT_EQ(module->entry()->instructionCount(), 6);  // p, c1, b1, m1, n1, t
  EXPECT_FALSE(testing::runPass(pass, *module));
}

TEST(CseTest, KeepsDifferentShapesLayoutsAndLiterals) {
  testing::expectUnchanged<CommonSubexpressionElimination>(R"(
HloModule m
ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  c1 = f32[] constant(1)
  c2 = f32[] constant(2)
  i1 = s32[] constant(1)
  row = f32[2,3]{1,0} copy(p)
  col = f32[2,3]{0,1} copy(p)
  ROOT t = (f32[], f32[], s32[], f32[2,3]{1,0}, f32[2,3]{0,1}) tuple(c1, c2, i1, row, col)
}
)");
}

TEST(CseTest, KeepsDifferentAttributes) {
  testing::expectUnchanged<CommonSubexpressionElimination>(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  lt = pred[4] compare(p, q), direction=LT
  gt = pred[4] compare(p, q), direction=GT
  s = f32[2] slice(p), slice={[0:2]}
  s2 = f32[2] slice(p), slice={[2:4]}
  b1 = f32[4,4] broadcast(p), dimensions={0}
  b2 = f32[4,4] broadcast(p), dimensions={1}
  ROOT t = (pred[4], pred[4], f32[2], f32[2], f32[4,4], f32[4,4]) tuple(lt, gt, s, s2, b1, b2)
}
)");
}

// add(p, q) and add(q, p) are one value (XLA's CSE ignores the operand order of commutative ops): the gradient of
// exp(s) * r, written once as exp(s) * r and once as r * exp(s), is computed once and the reduction r has one reader.
TEST(CseTest, CommutativeOpsMergeWhateverTheirOperandOrder) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  a = f32[4] add(p, q)
  b = f32[4] add(q, p)
  m1 = f32[4] multiply(a, p)
  m2 = f32[4] multiply(p, b)
  x1 = f32[4] maximum(p, q)
  x2 = f32[4] maximum(q, p)
  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(m1, m2, x1, x2)
}
)");
  CommonSubexpressionElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0), root->operand(1)) << printModule(*module);
  EXPECT_EQ(root->operand(2), root->operand(3)) << printModule(*module);
  EXPECT_EQ(entryInstruction(*module, "b"), nullptr);
}

TEST(CseTest, OperandOrderMatters) {
  testing::expectUnchanged<CommonSubexpressionElimination>(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  a = f32[4] subtract(p, q)
  b = f32[4] subtract(q, p)
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
)");
}

TEST(CseTest, MetadataDoesNotPreventMerging) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  a = f32[4] negate(p), metadata={op_type="Neg" op_name="first"}
  b = f32[4] negate(p), metadata={op_type="Neg" op_name="second"}
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
)");
  CommonSubexpressionElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(entryInstruction(*module, "b"), nullptr);
  ASSERT_NE(entryInstruction(*module, "a")->metadata(), nullptr);
  EXPECT_EQ(entryInstruction(*module, "a")->metadata()->opName, "first");
}

TEST(CseTest, NeverMergesParametersSideEffectsRngOrElidedConstants) {
  testing::expectUnchanged<CommonSubexpressionElimination>(R"(
HloModule m
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r1 = f32[4] rng(lo, hi), distribution=rng_uniform
  r2 = f32[4] rng(lo, hi), distribution=rng_uniform
  c1 = f32[4] custom-call(p0), custom_call_target="log_it", custom_call_has_side_effect=true
  c2 = f32[4] custom-call(p0), custom_call_target="log_it", custom_call_has_side_effect=true
  e1 = f32[4] constant({...})
  e2 = f32[4] constant({...})
  ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(p0, p1, r1, r2, c1, c2, e1, e2)
}
)");
}

TEST(CseTest, NeverMergesCallsWhoseBodiesHaveSideEffects) {
  testing::expectUnchanged<CommonSubexpressionElimination>(R"(
HloModule m
effect {
  x = f32[4] parameter(0)
  ROOT o = f32[4] custom-call(x), custom_call_target="log_it", custom_call_has_side_effect=true
}
ENTRY main {
  p = f32[4] parameter(0)
  a = f32[4] call(p), to_apply=effect
  b = f32[4] call(p), to_apply=effect
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
)");
}

// Called computations compare by structure, as XLA's CSE compares them: JAX writes one reducer per reduce
// (`region_0.1`, `region_1.2`, each the same add), and two sums of the same array are one value. A reducer that
// differs in an op (max), in operand order (y + x) or in a constant is another computation.
TEST(CseTest, MergesCallsOfComputationsEqualInStructure) {
  auto module = parseOrFail(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
add_again {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT t = f32[] add(a, b), metadata={op_name="jit(f)/reduce_sum"}
}
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
swapped {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(y, x)
}
scaled {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  two = f32[] constant(2)
  d = f32[] multiply(y, two)
  ROOT s = f32[] add(x, d)
}
scaled_again {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  three = f32[] constant(3)
  d = f32[] multiply(y, three)
  ROOT s = f32[] add(x, d)
}
ENTRY main {
  p = f32[8] parameter(0)
  zero = f32[] constant(0)
  r1 = f32[] reduce(p, zero), dimensions={0}, to_apply=add
  r2 = f32[] reduce(p, zero), dimensions={0}, to_apply=add
  r3 = f32[] reduce(p, zero), dimensions={0}, to_apply=add_again
  r4 = f32[] reduce(p, zero), dimensions={0}, to_apply=max
  r5 = f32[] reduce(p, zero), dimensions={0}, to_apply=swapped
  r6 = f32[] reduce(p, zero), dimensions={0}, to_apply=scaled
  r7 = f32[] reduce(p, zero), dimensions={0}, to_apply=scaled_again
  ROOT t = (f32[], f32[], f32[], f32[], f32[], f32[], f32[]) tuple(r1, r2, r3, r4, r5, r6, r7)
}
)");
  CommonSubexpressionElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(1)->name(), "r1");
  EXPECT_EQ(root->operand(2)->name(), "r1") << "the same add, other names and metadata";
  EXPECT_EQ(root->operand(3)->name(), "r4");
  EXPECT_EQ(root->operand(4)->name(), "r5");
  EXPECT_EQ(root->operand(5)->name(), "r6");
  EXPECT_EQ(root->operand(6)->name(), "r7") << "another constant";
}

TEST(CseTest, ControlDependenciesPreventMerging) {
  testing::expectUnchanged<CommonSubexpressionElimination>(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  a = f32[4] negate(p)
  b = f32[4] negate(p), control-predecessors={a}
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
)");
}

TEST(CseTest, WorksInsideFusedComputationsAndSortsText) {
  auto module = parseOrFail(R"(
HloModule m
fused {
  fp = f32[4] parameter(0)
  one = f32[] constant(1)
  b1 = f32[4] broadcast(one), dimensions={}
  a1 = f32[4] add(fp, b1)
  one.2 = f32[] constant(1)
  b2 = f32[4] broadcast(one.2), dimensions={}
  a2 = f32[4] add(fp, b2)
  ROOT m = f32[4] multiply(a1, a2)
}
ENTRY main {
  p = f32[4] parameter(0)
  ROOT f = f32[4] fusion(p), kind=kLoop, calls=fused
}
)");
  CommonSubexpressionElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloComputation* fused = module->findComputation("fused");
  EXPECT_EQ(fused->instructionCount(), 5) << printModule(*module);
  EXPECT_EQ(fused->root()->operand(0), fused->root()->operand(1));
}

TEST(CseTest, RootDuplicateIsReplacedByItsRepresentative) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  a = f32[4] sqrt(p)
  n = f32[4] negate(a)
  ROOT b = f32[4] sqrt(p)
}
)");
  CommonSubexpressionElimination pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->entry()->root()->name(), "a");
}

class CseCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CseCorpusTest, VerifiesAndIsIdempotent) {
  testing::expectVerifiedAndIdempotent<CommonSubexpressionElimination>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, CseCorpusTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CseCorpusTest);

TEST(CseCorpusPresence, CorpusOrSkip) {
  if (!testing::sharedCorpusPresent()) {
    GTEST_SKIP() << "shared corpus not found at " << testing::corpusDir() << ": cse corpus cases not run";
  }
  EXPECT_FALSE(testing::corpusHloFiles().empty());
}

}  // namespace
}  // namespace fusionscope::core
