#include "core/passes/while_loop_simplifier.h"

#include <string>

#include <gtest/gtest.h>

#include "core/ir/hlo_clone.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryInstruction;
using testing::parseOrFail;

// A fori_loop around a function that counts its own steps: element 0 is the loop's counter, element 1 the
// function's; both start at 0 and add 1.
constexpr const char* kTwoCounters = R"(
HloModule m
body {
  p = (s32[], s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  j = s32[] get-tuple-element(p), index=1
  x = f32[8] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  j1 = s32[] add(j, one)
  jf = f32[] convert(j)
  b = f32[8] broadcast(jf), dimensions={}
  x1 = f32[8] add(x, b)
  ROOT t = (s32[], s32[], f32[8]) tuple(i1, j1, x1)
}
cond {
  p = (s32[], s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], s32[], f32[8]) tuple(zero, zero, x)
  w = (s32[], s32[], f32[8]) while(init), body=body, condition=cond
  ROOT r = f32[8] get-tuple-element(w), index=2
}
)";

TEST(WhileLoopSimplifierTest, TwoCountersBecomeOne) {
  auto module = parseOrFail(kTwoCounters);
  ASSERT_NE(module, nullptr);
  auto original = cloneModule(*module);
  WhileLoopSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* loop = entryInstruction(*module, "w");
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->shape().tupleSize(), 2) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->attributes().tupleIndex, 1);
  // The body's f32 update now reads the one counter left.
  const HloComputation* body = loop->calledComputation("body");
  EXPECT_EQ(body->root()->operandCount(), 2);
  EXPECT_EQ(body->findInstruction("j1"), nullptr);
  // Same results: the evaluator runs both.
  testing::expectSameResults(*original, *module, 7);
  // Nothing left to do.
  EXPECT_FALSE(testing::runPass(pass, *module));
}

TEST(WhileLoopSimplifierTest, DifferentStartsStayApart) {
  std::string text = kTwoCounters;
  text.replace(text.find("tuple(zero, zero, x)"), 20, "tuple(zero, one0, x)");
  text.replace(text.find("  init ="), 0, "  one0 = s32[] constant(1)\n");
  testing::expectUnchanged<WhileLoopSimplifier>(text);
}

TEST(WhileLoopSimplifierTest, DifferentStepsStayApart) {
  std::string text = kTwoCounters;
  text.replace(text.find("j1 = s32[] add(j, one)"), 22, "j1 = s32[] add(j, j)  ");
  testing::expectUnchanged<WhileLoopSimplifier>(text);
}

TEST(WhileLoopSimplifierTest, ElementReadAfterTheLoopStays) {
  std::string text = kTwoCounters;
  text.replace(text.find("ROOT r = f32[8] get-tuple-element(w), index=2"), 45,
               "r = f32[8] get-tuple-element(w), index=2\n  c = s32[] get-tuple-element(w), index=1\n"
               "  ROOT o = (f32[8], s32[]) tuple(r, c)");
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  WhileLoopSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  // Merged: the reader of element 1 reads element 0, which stays.
  EXPECT_EQ(entryInstruction(*module, "w")->shape().tupleSize(), 2);
  EXPECT_EQ(entryInstruction(*module, "c")->attributes().tupleIndex, 0);
}

// Element 1 accumulates x; element 2's update is `x1 = UPDATE`.
constexpr const char* kAccumulator = R"(
HloModule m
body {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[4] get-tuple-element(p), index=1
  x = f32[4] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a1 = f32[4] add(a, x)
  x1 = f32[4] UPDATE
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, a1, x1)
}
cond {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(zero, x, x)
  w = (s32[], f32[4], f32[4]) while(init), body=body, condition=cond
  ROOT r = f32[4] get-tuple-element(w), index=2
}
)";

std::string accumulatorWith(const std::string& update) {
  std::string text = kAccumulator;
  text.replace(text.find("UPDATE"), 6, update);
  return text;
}

TEST(WhileLoopSimplifierTest, UnreadElementIsDropped) {
  // Nothing reads the accumulator: not the condition, not element 2's update, not the loop's users.
  auto module = parseOrFail(accumulatorWith("multiply(x, x)"));
  ASSERT_NE(module, nullptr);
  WhileLoopSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  EXPECT_EQ(entryInstruction(*module, "w")->shape().tupleSize(), 2);
  EXPECT_EQ(module->entry()->root()->attributes().tupleIndex, 1);
  EXPECT_EQ(entryInstruction(*module, "w")->calledComputation("body")->findInstruction("a1"), nullptr);
}

TEST(WhileLoopSimplifierTest, ElementFeedingAnotherStays) {
  // The accumulator is not read after the loop, but element 2's update reads it.
  testing::expectUnchanged<WhileLoopSimplifier>(accumulatorWith("multiply(x, a)"));
}

TEST(WhileLoopSimplifierTest, LoopWhoseStateIsReadWholeStays) {
  std::string text = kTwoCounters;
  text.replace(text.find("ROOT r = f32[8] get-tuple-element(w), index=2"), 45,
               "ROOT r = (s32[], s32[], f32[8]) copy(w)");
  testing::expectUnchanged<WhileLoopSimplifier>(text);
}

}  // namespace
}  // namespace fusionscope::core
