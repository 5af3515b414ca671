#include "core/passes/while_loop_invariant_code_motion.h"

#include <gtest/gtest.h>

#include "core/ir/hlo_clone.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryInstruction;
using testing::parseOrFail;

// A decode loop as JAX writes it: element 1 (a key) passes through unchanged, and each step derives bits from an
// iota (threefry's counter) and from that key; element 0 counts, element 2 accumulates. The iota -> shift ->
// convert chain and the key's product are invariant; the broadcast of the key alone is not worth hoisting, and the
// add of the counter changes every step.
constexpr const char* kDecodeLoop = R"(
HloModule m
body {
  p = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  key = f32[8] get-tuple-element(p), index=1
  acc = f32[8] get-tuple-element(p), index=2
  iota = u32[8] iota(), iota_dimension=0
  sixteen = u32[] constant(16)
  shifts = u32[8] broadcast(sixteen), dimensions={}
  high = u32[8] shift-right-logical(iota, shifts)
  bits = f32[8] convert(high)
  scaled = f32[8] multiply(key, bits)
  spread = f32[8] broadcast(key), dimensions={0}
  fi = f32[] convert(i)
  step = f32[8] broadcast(fi), dimensions={}
  moved = f32[8] add(scaled, step)
  acc1 = f32[8] add(acc, moved)
  acc2 = f32[8] add(acc1, spread)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[8], f32[8]) tuple(i1, key, acc2)
}
cond {
  p = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  k = f32[8] parameter(0)
  a = f32[8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8], f32[8]) tuple(zero, k, a)
  w = (s32[], f32[8], f32[8]) while(init), body=body, condition=cond
  ROOT r = f32[8] get-tuple-element(w), index=2
}
)";

TEST(WhileLoopInvariantCodeMotionTest, InvariantChainsAreComputedOnceBeforeTheLoop) {
  auto module = parseOrFail(kDecodeLoop);
  ASSERT_NE(module, nullptr);
  auto original = cloneModule(*module);
  WhileLoopInvariantCodeMotion pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* loop = entryInstruction(*module, "w");
  ASSERT_NE(loop, nullptr);
  // The product of the key and the shifted iota is carried as one new element (its chain came along).
  ASSERT_EQ(loop->shape().tupleSize(), 4) << printModule(*module);
  const HloInstruction* carried = loop->operand(0)->operand(3);
  EXPECT_EQ(carried->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(carried->operand(0)->name(), "k");
  EXPECT_EQ(carried->operand(1)->opcode(), HloOpcode::kConvert);
  const HloComputation* body = loop->calledComputation("body");
  EXPECT_EQ(body->findInstruction("scaled"), nullptr) << printModule(*module);
  EXPECT_EQ(body->findInstruction("high"), nullptr);
  // What reads the counter stays; the broadcast of the key alone stays.
  EXPECT_NE(body->findInstruction("moved"), nullptr);
  EXPECT_NE(body->findInstruction("spread"), nullptr);
  // The body passes the new element on unchanged.
  const HloInstruction* update = body->root()->operand(3);
  EXPECT_EQ(update->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(update->attributes().tupleIndex, 3);
  testing::expectSameResults(*original, *module, 7);
  EXPECT_FALSE(testing::runPass(pass, *module));
}

// Nothing invariant is worth hoisting: a broadcast of an unchanged element alone, and everything else reads the
// counter. The loop stays as it is.
TEST(WhileLoopInvariantCodeMotionTest, ACheapOpAloneIsNotHoisted) {
  auto module = parseOrFail(R"(
HloModule m
body {
  p = (s32[], f32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  s = f32[] get-tuple-element(p), index=1
  acc = f32[8] get-tuple-element(p), index=2
  b = f32[8] broadcast(s), dimensions={}
  acc1 = f32[8] add(acc, b)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[], f32[8]) tuple(i1, s, acc1)
}
cond {
  p = (s32[], f32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  s = f32[] parameter(0)
  a = f32[8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[], f32[8]) tuple(zero, s, a)
  w = (s32[], f32[], f32[8]) while(init), body=body, condition=cond
  ROOT r = f32[8] get-tuple-element(w), index=2
}
)");
  ASSERT_NE(module, nullptr);
  WhileLoopInvariantCodeMotion pass;
  EXPECT_FALSE(testing::runPass(pass, *module)) << printModule(*module);
  EXPECT_EQ(entryInstruction(*module, "w")->shape().tupleSize(), 3);
}

// An instruction with a side effect stays in the body though its operands are invariant (it must happen each step).
TEST(WhileLoopInvariantCodeMotionTest, ASideEffectStaysInTheBody) {
  auto module = parseOrFail(R"(
HloModule m
body {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8] get-tuple-element(p), index=1
  e = f32[8] exponential(x)
  c = f32[8] custom-call(e), custom_call_target="log_each_step", custom_call_has_side_effect=true
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[8]) tuple(i1, x)
}
cond {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, x)
  w = (s32[], f32[8]) while(init), body=body, condition=cond
  ROOT r = f32[8] get-tuple-element(w), index=1
}
)");
  ASSERT_NE(module, nullptr);
  WhileLoopInvariantCodeMotion pass;
  testing::runPass(pass, *module);
  const HloComputation* body = entryInstruction(*module, "w")->calledComputation("body");
  EXPECT_NE(body->findInstruction("c"), nullptr) << printModule(*module);
}

}  // namespace
}  // namespace fusionscope::core
