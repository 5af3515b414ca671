// dot-rhs-transpose: a large dot rhs contracted on its innermost dimension is transposed once before the dot, as
// XLA CPU's layout assignment gives it the layout its GEMM reads.
#include "core/passes/dot_rhs_transpose.h"

#include <string>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

bool rewrite(HloModule& module) {
  DotRhsTranspose pass;
  return testing::runPass(pass, module);
}

// Attention's scores, q·kᵀ per head: k is [batch, keys, depth], contracted on depth (innermost).
TEST(DotRhsTransposeTest, AttentionScoresReadTheKeysTransposedOnce) {
  auto module = testing::parseOrFail(R"(HloModule m
ENTRY main {
  q = f32[4,128,64]{2,1,0} parameter(0)
  k = f32[4,512,64]{2,1,0} parameter(1)
  ROOT s = f32[4,128,512]{2,1,0} dot(q, k), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
}
)");
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* dot = module->entry()->root();
  ASSERT_EQ(dot->opcode(), HloOpcode::kDot);
  const HloInstruction* transpose = dot->operand(1);
  ASSERT_EQ(transpose->opcode(), HloOpcode::kTranspose) << printModule(*module);
  EXPECT_EQ(transpose->operand(0)->name(), "k");
  EXPECT_EQ(transpose->shape().toString(), "f32[4,64,512]{2,1,0}");
  EXPECT_EQ(*transpose->attributes().dimensions, (std::vector<int64_t>{0, 2, 1}));
  const DotDimensionNumbers& d = *dot->attributes().dot;
  EXPECT_EQ(d.rhsBatch, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.rhsContracting, (std::vector<int64_t>{1}));
  EXPECT_EQ(d.lhsContracting, (std::vector<int64_t>{2}));
  EXPECT_EQ(dot->shape().toString(), "f32[4,128,512]{2,1,0}");
  EXPECT_FALSE(rewrite(*module)) << "a second run changes nothing\n" << printModule(*module);
}

// A backward pass's dW = dY·Xᵀ with the batch dimension after the free one: [free, batch, contracting].
TEST(DotRhsTransposeTest, BatchDimensionsMoveToTheFrontOfTheTransposedRhs) {
  auto module = testing::parseOrFail(R"(HloModule m
ENTRY main {
  a = f32[2,64,96] parameter(0)
  b = f32[300,2,96] parameter(1)
  ROOT d = f32[2,64,300] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
}
)");
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* transpose = module->entry()->root()->operand(1);
  ASSERT_EQ(transpose->opcode(), HloOpcode::kTranspose) << printModule(*module);
  EXPECT_EQ(transpose->shape().toString(false), "f32[2,96,300]");
  EXPECT_EQ(*transpose->attributes().dimensions, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(module->entry()->root()->attributes().dot->rhsBatch, (std::vector<int64_t>{0}));
}

// An einsum `teh,ehd->ted` (a mixture of experts): the rhs's batch dimension sits in the middle. Both operands get
// their batch dimensions first (one small transpose each where needed), as XLA's dot decomposer does; the result is
// the same dot.
TEST(DotRhsTransposeTest, SmallOperandsWithBatchDimensionsInsideGetThemFirst) {
  constexpr const char* kText = R"(HloModule m
ENTRY main {
  w = f32[4,64,32] parameter(0)
  m = f32[32,4,64] parameter(1)
  ROOT d = f32[4,32,32] dot(w, m), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={1}, rhs_contracting_dims={2}
}
)";
  auto module = testing::parseOrFail(kText);
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* dot = module->entry()->root();
  EXPECT_EQ(dot->operand(0)->name(), "w") << "its batch dimension leads already";
  const HloInstruction* transpose = dot->operand(1);
  ASSERT_EQ(transpose->opcode(), HloOpcode::kTranspose) << printModule(*module);
  EXPECT_EQ(transpose->shape().toString(false), "f32[4,32,64]");
  EXPECT_EQ(*transpose->attributes().dimensions, (std::vector<int64_t>{1, 0, 2}));
  const DotDimensionNumbers& d = *dot->attributes().dot;
  EXPECT_EQ(d.rhsBatch, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.rhsContracting, (std::vector<int64_t>{2}));
  EXPECT_EQ(d.lhsContracting, (std::vector<int64_t>{1}));
  testing::expectSameResults(kText, *module, 3);
  EXPECT_FALSE(rewrite(*module)) << "a second run changes nothing\n" << printModule(*module);
}

// A mixture of experts' einsum `td,edh->teh`: the rhs [e,d,h] keeps two free dimensions, which the row dot cannot
// take. As XLA's dot decomposer does: rhs to [d, e*h] (transpose, bitcast), a 2-D dot, the result viewed as [t,e,h].
TEST(DotRhsTransposeTest, AnRhsWithTwoFreeDimensionsIsCollapsedIntoOne) {
  constexpr const char* kText = R"(HloModule m
ENTRY main {
  x = f32[32,16] parameter(0)
  w = f32[4,16,24] parameter(1)
  ROOT h = f32[32,4,24] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
)";
  auto module = testing::parseOrFail(kText);
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* back = module->entry()->root();
  ASSERT_EQ(back->opcode(), HloOpcode::kBitcast) << printModule(*module);
  EXPECT_EQ(back->shape().toString(false), "f32[32,4,24]");
  const HloInstruction* dot = back->operand(0);
  ASSERT_EQ(dot->opcode(), HloOpcode::kDot);
  EXPECT_EQ(dot->name(), "h") << "the kernel keeps the dot's name";
  EXPECT_EQ(dot->shape().toString(false), "f32[32,96]");
  EXPECT_EQ(dot->operand(0)->name(), "x") << "the lhs is [M,K] already";
  const HloInstruction* reshape = dot->operand(1);
  ASSERT_EQ(reshape->opcode(), HloOpcode::kBitcast);
  EXPECT_EQ(reshape->shape().toString(false), "f32[16,96]");
  ASSERT_EQ(reshape->operand(0)->opcode(), HloOpcode::kTranspose);
  EXPECT_EQ(*reshape->operand(0)->attributes().dimensions, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(dot->attributes().dot->rhsContracting, (std::vector<int64_t>{0}));
  testing::expectSameResults(kText, *module, 5);
  EXPECT_FALSE(rewrite(*module)) << "a second run changes nothing\n" << printModule(*module);
}

// Several contracting dimensions (a convolution written as an einsum `bchw,chwk->bk`), batch dimensions anywhere and
// two free dimensions on each side, integer types: every dot becomes [batch..., M, K] x [batch..., K, N].
TEST(DotRhsTransposeTest, SeveralContractingAndFreeDimensionsWithBatchesCollapse) {
  constexpr const char* kText = R"(HloModule m
ENTRY main {
  a = f32[2,3,4,5] parameter(0)
  b = f32[3,4,5,6] parameter(1)
  c = f32[2,6] dot(a, b), lhs_contracting_dims={1,2,3}, rhs_contracting_dims={0,1,2}
  p = s8[5,2,3,7] parameter(2)
  q = s8[7,4,2,5] parameter(3)
  r = s32[2,5,3,4,5] dot(p, q), lhs_batch_dims={1}, rhs_batch_dims={2}, lhs_contracting_dims={3}, rhs_contracting_dims={0}
  ROOT t = (f32[2,6], s32[2,5,3,4,5]) tuple(c, r)
}
)";
  auto module = testing::parseOrFail(kText);
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* tuple = module->entry()->root();
  const HloInstruction* c = tuple->operand(0);
  ASSERT_EQ(c->opcode(), HloOpcode::kDot) << "[2,6] either way: no view back\n" << printModule(*module);
  EXPECT_EQ(c->operand(0)->shape().toString(false), "f32[2,60]");
  EXPECT_EQ(c->operand(1)->shape().toString(false), "f32[60,6]");
  const HloInstruction* r = tuple->operand(1)->operand(0);
  ASSERT_EQ(r->opcode(), HloOpcode::kDot) << printModule(*module);
  EXPECT_EQ(r->shape().toString(false), "s32[2,15,20]");
  EXPECT_EQ(r->operand(0)->shape().toString(false), "s8[2,15,7]");
  EXPECT_EQ(r->operand(1)->shape().toString(false), "s8[2,7,20]");
  testing::expectSameResults(kText, *module, 5);
  EXPECT_FALSE(rewrite(*module)) << "a second run changes nothing\n" << printModule(*module);
}

// A backward pass's dW = xᵀ·dy, contracting x[B,S,D] and dy[B,S,F] over [B,S]: both lie as groups already, so both
// are only viewed as [B*S, D] and [B*S, F] (x read as a [K, M] lhs, as XLA reads it), no transpose.
TEST(DotRhsTransposeTest, OperandsWhoseDimensionsLieInGroupsAreOnlyViewed) {
  constexpr const char* kText = R"(HloModule m
ENTRY main {
  x = f32[2,8,16] parameter(0)
  dy = f32[2,8,24] parameter(1)
  ROOT dw = f32[16,24] dot(x, dy), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
}
)";
  auto module = testing::parseOrFail(kText);
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* dot = module->entry()->root();
  ASSERT_EQ(dot->opcode(), HloOpcode::kDot) << printModule(*module);
  EXPECT_EQ(dot->operand(0)->opcode(), HloOpcode::kBitcast);
  EXPECT_EQ(dot->operand(0)->shape().toString(false), "f32[16,16]");
  EXPECT_EQ(dot->operand(0)->operand(0)->name(), "x");
  EXPECT_EQ(dot->operand(1)->shape().toString(false), "f32[16,24]");
  EXPECT_EQ(dot->operand(1)->operand(0)->name(), "dy");
  EXPECT_EQ(dot->attributes().dot->lhsContracting, (std::vector<int64_t>{0}));
  EXPECT_EQ(dot->attributes().dot->rhsContracting, (std::vector<int64_t>{0}));
  testing::expectSameResults(kText, *module, 5);
}

TEST(DotRhsTransposeTest, SmallOrAlreadyRowMajorRhsAndIntegerDotsAreLeftAlone) {
  auto module = testing::parseOrFail(R"(HloModule m
ENTRY main {
  q = f32[8,128,64] parameter(0)
  k = f32[8,128,64] parameter(1)
  small = f32[8,128,128] dot(q, k), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  x = f32[64,512] parameter(2)
  w = f32[512,256] parameter(3)
  rowmajor = f32[64,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  i = s32[64,512] parameter(4)
  j = s32[256,512] parameter(5)
  integer = s32[64,256] dot(i, j), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  c = f32[256,512]{0,1} parameter(6)
  columnmajor = f32[64,256] dot(x, c), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT t = (f32[8,128,128], f32[64,256], s32[64,256], f32[64,256]) tuple(small, rowmajor, integer, columnmajor)
}
)");
  EXPECT_FALSE(rewrite(*module)) << printModule(*module);
}

}  // namespace
}  // namespace fusionscope::core
