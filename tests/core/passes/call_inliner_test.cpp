#include "core/passes/call_inliner.h"

#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::countOpcode;
using testing::entryInstruction;
using testing::parseOrFail;

TEST(CallInlinerTest, InlinesCallAndRemovesCallee) {
  auto module = parseOrFail(R"(
HloModule m
square {
  x = f32[8] parameter(0)
  ROOT m = f32[8] multiply(x, x)
}
ENTRY main {
  p = f32[8] parameter(0)
  c = f32[8] call(p), to_apply=square
  ROOT n = f32[8] negate(c)
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->computations().size(), 1u);
  const HloInstruction* m = entryInstruction(*module, "m");
  ASSERT_NE(m, nullptr) << printModule(*module);
  EXPECT_EQ(m->opcode(), HloOpcode::kMultiply);
  EXPECT_EQ(m->operand(0)->name(), "p");
  EXPECT_EQ(m->operand(1)->name(), "p");
  EXPECT_EQ(module->entry()->root()->operand(0), m);
  EXPECT_EQ(entryInstruction(*module, "c"), nullptr);
}

TEST(CallInlinerTest, NestedCallsAreInlinedInOneRun) {
  auto module = parseOrFail(R"(
HloModule m
inner {
  a = f32[8] parameter(0)
  ROOT e = f32[8] exponential(a)
}
outer {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  s = f32[8] add(x, y)
  ROOT c = f32[8] call(s), to_apply=inner
}
ENTRY main {
  p = f32[8] parameter(0)
  q = f32[8] parameter(1)
  ROOT c = f32[8] call(p, q), to_apply=outer
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->computations().size(), 1u) << printModule(*module);
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->opcode(), HloOpcode::kExp);
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kAdd);
  EXPECT_EQ(countOpcode(*module->entry(), HloOpcode::kCall), 0);
  EXPECT_FALSE(testing::runPass(pass, *module));
}

TEST(CallInlinerTest, EachCallSiteGetsItsOwnUniquelyNamedCopy) {
  auto module = parseOrFail(R"(
HloModule m
twice {
  x = f32[8] parameter(0)
  ROOT s = f32[8] add(x, x)
}
ENTRY main {
  p = f32[8] parameter(0)
  s = f32[8] negate(p)
  c1 = f32[8] call(p), to_apply=twice
  c2 = f32[8] call(s), to_apply=twice
  ROOT t = (f32[8], f32[8], f32[8]) tuple(s, c1, c2)
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0)->name(), "s");
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kNegate);
  EXPECT_EQ(root->operand(1)->opcode(), HloOpcode::kAdd);
  EXPECT_EQ(root->operand(2)->opcode(), HloOpcode::kAdd);
  EXPECT_NE(root->operand(1)->name(), root->operand(2)->name());
  EXPECT_NE(root->operand(1)->name(), "s");
  EXPECT_EQ(root->operand(2)->operand(0)->name(), "s");
  EXPECT_EQ(module->findComputation("twice"), nullptr);
}

TEST(CallInlinerTest, CalleeReturningAParameterForwardsTheOperand) {
  auto module = parseOrFail(R"(
HloModule m
swap {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  ROOT t = (f32[8], f32[8]) tuple(y, x)
}
pick {
  a = f32[8] parameter(0)
  ROOT a2 = f32[8] parameter(1)
}
ENTRY main {
  p = f32[8] parameter(0)
  q = f32[8] parameter(1)
  c = (f32[8], f32[8]) call(p, q), to_apply=swap
  g = f32[8] get-tuple-element(c), index=1
  ROOT d = f32[8] call(g, q), to_apply=pick
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->entry()->root()->name(), "q") << printModule(*module);
  EXPECT_EQ(module->computations().size(), 1u);
}

TEST(CallInlinerTest, LeavesOtherCalledComputationsAlone) {
  testing::expectUnchanged<CallInliner>(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
cond {
  s = f32[8] parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  b = f32[8] parameter(0)
  ROOT e = f32[8] exponential(b)
}
fused {
  fp = f32[8] parameter(0)
  ROOT n = f32[8] negate(fp)
}
ENTRY main {
  p = f32[8] parameter(0)
  zero = f32[] constant(0)
  r = f32[] reduce(p, zero), dimensions={0}, to_apply=add
  w = f32[8] while(p), condition=cond, body=body
  f = f32[8] fusion(w), kind=kLoop, calls=fused
  ROOT t = (f32[], f32[8]) tuple(r, f)
}
)");
}

TEST(CallInlinerTest, ComputationsTheCalleeUsesStay) {
  auto module = parseOrFail(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
sum {
  v = f32[8] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(v, zero), dimensions={0}, to_apply=add
}
ENTRY main {
  p = f32[8] parameter(0)
  ROOT c = f32[] call(p), to_apply=sum
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(module->findComputation("sum"), nullptr);
  const HloComputation* add = module->findComputation("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(module->entry()->root()->opcode(), HloOpcode::kReduce);
  EXPECT_EQ(module->entry()->root()->toApply(), add);
}

TEST(CallInlinerTest, CallsInsideWhileBodiesAreInlined) {
  auto module = parseOrFail(R"(
HloModule m
step {
  x = f32[8] parameter(0)
  ROOT e = f32[8] exponential(x)
}
cond {
  s = f32[8] parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  b = f32[8] parameter(0)
  ROOT c = f32[8] call(b), to_apply=step
}
ENTRY main {
  p = f32[8] parameter(0)
  ROOT w = f32[8] while(p), condition=cond, body=body
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloComputation* body = module->findComputation("body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->root()->opcode(), HloOpcode::kExp);
  EXPECT_EQ(module->findComputation("step"), nullptr);
  EXPECT_NE(module->findComputation("cond"), nullptr);
}

TEST(CallInlinerTest, ControlDependenciesOfTheCallOrderTheInlinedBody) {
  auto module = parseOrFail(R"(
HloModule m
work {
  x = f32[8] parameter(0)
  e = f32[8] exponential(x)
  ROOT n = f32[8] negate(e)
}
ENTRY main {
  p = f32[8] parameter(0)
  before = f32[8] sqrt(p)
  c = f32[8] call(p), to_apply=work, control-predecessors={before}
  ROOT t = (f32[8], f32[8]) tuple(before, c)
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* e = entryInstruction(*module, "e");
  const HloInstruction* n = entryInstruction(*module, "n");
  ASSERT_NE(e, nullptr);
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(e->controlPredecessors().size(), 1u);
  EXPECT_EQ(e->controlPredecessors().front()->name(), "before");
  ASSERT_EQ(n->controlPredecessors().size(), 1u);
}

TEST(CallInlinerTest, FusionsCopiedTwiceGetTheirOwnFusedComputations) {
  auto module = parseOrFail(R"(
HloModule m
fused {
  fp = f32[8] parameter(0)
  ROOT n = f32[8] negate(fp)
}
f {
  x = f32[8] parameter(0)
  ROOT fu = f32[8] fusion(x), kind=kLoop, calls=fused
}
ENTRY main {
  p = f32[8] parameter(0)
  c1 = f32[8] call(p), to_apply=f
  c2 = f32[8] call(c1), to_apply=f
  ROOT n = f32[8] negate(c2)
}
)");
  CallInliner pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* second = module->entry()->root()->operand(0);
  ASSERT_TRUE(second->isFusion()) << printModule(*module);
  const HloInstruction* first = second->operand(0);
  ASSERT_TRUE(first->isFusion());
  EXPECT_NE(first->fusedComputation(), second->fusedComputation());
  EXPECT_TRUE(first->fusedComputation()->isFusionComputation());
  EXPECT_TRUE(second->fusedComputation()->isFusionComputation());
  EXPECT_EQ(module->findComputation("f"), nullptr);
  EXPECT_EQ(module->computations().size(), 3u);  // two fused computations and the entry
  // Callees are printed before their callers.
  EXPECT_EQ(module->computations().back().get(), module->entry());
}

TEST(CallInlinerTest, MismatchedParameterCountIsAnError) {
  auto module = parseOrFail(R"(
HloModule m
two {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  ROOT s = f32[8] add(x, y)
}
ENTRY main {
  p = f32[8] parameter(0)
  ROOT c = f32[8] call(p), to_apply=two
}
)");
  CallInliner pass;
  PassContext context;
  StatusOr<bool> result = pass.run(*module, context);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.message().find("takes 2 parameter(s)"), std::string::npos) << result.message();
}

TEST(CallInlinerTest, NoCallsLeavesTheModuleAsItWas) {
  testing::expectUnchanged<CallInliner>(R"(
HloModule m
unused {
  x = f32[8] parameter(0)
  ROOT e = f32[8] exponential(x)
}
ENTRY main {
  p = f32[8] parameter(0)
  ROOT n = f32[8] negate(p)
}
)");
}

// 60 computations that each call the next twice: 8 KB of text, 2^60 instructions once inlined. Refused before
// anything is copied (it took 8 GB and a minute before "out of memory"), with the figure and as bad input.
TEST(CallInlinerTest, RefusesACallTreeThatWouldGrowPastTheLimit) {
  std::string text = "HloModule amp\n\nc0 {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n";
  for (int i = 1; i <= 60; ++i) {
    text += "c" + std::to_string(i) + " {\n  p = f32[4] parameter(0)\n  a = f32[4] call(p), to_apply=c" +
            std::to_string(i - 1) + "\n  b = f32[4] call(a), to_apply=c" + std::to_string(i - 1) +
            "\n  ROOT r = f32[4] add(a, b)\n}\n";
  }
  text += "ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c60\n}\n";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  const std::string before = printModule(*module);
  CallInliner pass;
  PassContext context;
  StatusOr<bool> result = pass.run(*module, context);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().kind(), ErrorKind::kBadInput);
  EXPECT_NE(result.message().find("would hold 1.05e+06 instructions once its calls are inlined"), std::string::npos)
      << result.message();
  EXPECT_EQ(printModule(*module), before) << "nothing copied";
}

class CallInlinerCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CallInlinerCorpusTest, VerifiesAndIsIdempotent) {
  std::unique_ptr<HloModule> module;
  testing::expectVerifiedAndIdempotent<CallInliner>(GetParam(), &module);
  ASSERT_NE(module, nullptr);
  for (const auto& computation : module->computations()) {
    EXPECT_EQ(countOpcode(*computation, HloOpcode::kCall), 0) << computation->name();
  }
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, CallInlinerCorpusTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CallInlinerCorpusTest);

TEST(CallInlinerCorpusPresence, CorpusOrSkip) {
  if (!testing::sharedCorpusPresent()) {
    GTEST_SKIP() << "shared corpus not found at " << testing::corpusDir() << ": inline corpus cases not run";
  }
  EXPECT_FALSE(testing::corpusHloFiles().empty());
}

}  // namespace
}  // namespace fusionscope::core
