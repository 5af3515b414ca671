// reshape-mover: an elementwise op over the same reshape or transpose of its operands is computed before it, as
// XLA's reshape mover does, when every user of those reshapes moves too.
#include "core/passes/reshape_mover.h"

#include <string>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

bool rewrite(HloModule& module) {
  ReshapeMover pass;
  return testing::runPass(pass, module);
}

// A batch norm's mean as JAX writes it in one place: the sum reshaped to [1,1,1,C], divided by a broadcast count.
TEST(ReshapeMoverTest, ADivisionOfAReshapeByABroadcastScalarHappensBeforeTheReshape) {
  constexpr const char* kText = R"(HloModule m
ENTRY main {
  s = f32[8] parameter(0)
  r = f32[1,1,1,8] reshape(s)
  k = f32[] constant(576)
  c = f32[1,1,1,8] broadcast(k), dimensions={}
  ROOT d = f32[1,1,1,8] divide(r, c)
}
)";
  auto module = testing::parseOrFail(kText);
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kReshape) << printModule(*module);
  const HloInstruction* d = root->operand(0);
  EXPECT_EQ(d->name(), "d");
  EXPECT_EQ(d->opcode(), HloOpcode::kDivide);
  EXPECT_EQ(d->shape().toString(false), "f32[8]");
  EXPECT_EQ(d->operand(0)->name(), "s");
  EXPECT_EQ(d->operand(1)->opcode(), HloOpcode::kBroadcast);
  EXPECT_EQ(d->operand(1)->shape().toString(false), "f32[8]");
  testing::expectSameResults(kText, *module, 11);
  EXPECT_FALSE(rewrite(*module)) << "the reshape is now at the output\n" << printModule(*module);
}

// Two operands transposed alike and a broadcast whose dimensions keep their order under the transpose.
TEST(ReshapeMoverTest, TransposesMoveWithOrderKeepingBroadcasts) {
  constexpr const char* kText = R"(HloModule m
ENTRY main {
  a = f32[2,3,4] parameter(0)
  b = f32[2,3,4] parameter(1)
  v = f32[3] parameter(2)
  ta = f32[4,2,3] transpose(a), dimensions={2,0,1}
  tb = f32[4,2,3] transpose(b), dimensions={2,0,1}
  bv = f32[4,2,3] broadcast(v), dimensions={2}
  s = f32[4,2,3] add(ta, tb)
  ROOT m = f32[4,2,3] multiply(s, bv)
}
)";
  auto module = testing::parseOrFail(kText);
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* s = nullptr;
  for (const auto& inst : module->entry()->instructions()) {
    if (inst->name() == "s") s = inst.get();
  }
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->shape().toString(false), "f32[2,3,4]") << printModule(*module);
  EXPECT_EQ(s->operand(0)->name(), "a");
  EXPECT_EQ(s->operand(1)->name(), "b");
  testing::expectSameResults(kText, *module, 11);
  // Run again: the transpose after s now feeds m with the broadcast, and moves on.
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kTranspose) << printModule(*module);
  EXPECT_EQ(root->operand(0)->name(), "m");
  EXPECT_EQ(root->operand(0)->operand(1)->attributes().dimensions, (std::vector<int64_t>{1}));
  testing::expectSameResults(kText, *module, 11);
}

// Nothing moves when the reshape has a user that does not move (it would be computed twice), when the other operand
// is an array of its own, when a broadcast would change its dimension order under the transpose, or across a
// bitcast-convert between widths (elementwise in name, but it adds a dimension of parts).
TEST(ReshapeMoverTest, StaysWhenAReshapeHasAnotherUserOrAnOperandIsNotFreeToReshape) {
  testing::expectUnchanged<ReshapeMover>(R"(HloModule m
region {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  s = f32[8] parameter(0)
  r = f32[2,4] reshape(s)
  one = f32[] constant(1)
  c = f32[2,4] broadcast(one), dimensions={}
  d = f32[2,4] add(r, c)
  zero = f32[] constant(0)
  sum = f32[2] reduce(r, zero), dimensions={1}, to_apply=region
  q = f32[2,4] parameter(1)
  e = f32[2,4] multiply(r, q)
  x = f32[3,4,2] parameter(2)
  tx = f32[4,3,2] transpose(x), dimensions={1,0,2}
  v = f32[4,3] parameter(3)
  u = f32[4,3,2] broadcast(v), dimensions={0,1}
  g = f32[4,3,2] add(tx, u)
  w = u32[8] parameter(4)
  rw = u32[2,4] reshape(w)
  halves = u16[2,4,2] bitcast-convert(rw)
  ROOT t = (f32[2,4], f32[2], f32[2,4], f32[4,3,2], u16[2,4,2]) tuple(d, sum, e, g, halves)
}
)");
}

}  // namespace
}  // namespace fusionscope::core
