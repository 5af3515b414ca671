#include "core/passes/algebraic_simplifier.h"

#include <string>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_clone.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryInstruction;
using testing::parseOrFail;

bool simplify(HloModule& module) {
  AlgebraicSimplifier pass;
  return testing::runPass(pass, module);
}

// The integer values of a constant, or an empty list (with a test failure) for anything else.
std::vector<int64_t> integerValues(const HloInstruction* inst) {
  if (!inst || inst->opcode() != HloOpcode::kConstant || !inst->literal()) {
    ADD_FAILURE() << (inst ? printInstruction(*inst) : "null") << " is not a constant";
    return {};
  }
  return inst->literal()->integerValues();
}

std::vector<double> floatValues(const HloInstruction* inst) {
  if (!inst || inst->opcode() != HloOpcode::kConstant || !inst->literal()) {
    ADD_FAILURE() << (inst ? printInstruction(*inst) : "null") << " is not a constant";
    return {};
  }
  return inst->literal()->floatValues();
}

using Ints = std::vector<int64_t>;

TEST(AlgebraicSimplifierTest, AddingOrSubtractingZeroGivesTheOperand) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  zero = f32[] constant(0)
  bz = f32[4] broadcast(zero), dimensions={}
  a = f32[4] add(p, bz)
  b = f32[4] add(bz, a)
  c = f32[4] subtract(b, bz)
  ROOT n = f32[4] negate(c)
}
)");
  EXPECT_TRUE(simplify(*module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "p");
  // The rewritten instructions and the zero they no longer read are gone.
  EXPECT_EQ(module->entry()->instructionCount(), 2) << printModule(*module);
  EXPECT_FALSE(simplify(*module));
}

TEST(AlgebraicSimplifierTest, MultiplyingOrDividingByOneGivesTheOperand) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  one = f32[4] constant({1, 1, 1, 1})
  a = f32[4] multiply(p, one)
  b = f32[4] multiply(one, a)
  c = f32[4] divide(b, one)
  ROOT n = f32[4] negate(c)
}
)");
  EXPECT_TRUE(simplify(*module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "p");
  EXPECT_EQ(module->entry()->instructionCount(), 2) << printModule(*module);
}

TEST(AlgebraicSimplifierTest, IntegerTimesZeroIsZero) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = s32[4] parameter(0)
  zero = s32[] constant(0)
  bz = s32[4] broadcast(zero), dimensions={}
  e = s32[4] negate(p)
  a = s32[4] multiply(e, bz)
  ROOT n = s32[4] not(a)
}
)");
  EXPECT_TRUE(simplify(*module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "bz");
  // The negate nobody reads any more goes too.
  EXPECT_EQ(entryInstruction(*module, "e"), nullptr);
}

TEST(AlgebraicSimplifierTest, FloatTimesZeroAndNonIdentitiesStay) {
  // NaN * 0 and inf * 0 are NaN; 0 - x and 0 / x are not x.
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  zero = f32[] constant(0)
  bz = f32[4] broadcast(zero), dimensions={}
  m = f32[4] multiply(p, bz)
  s = f32[4] subtract(bz, p)
  d = f32[4] divide(bz, p)
  two = f32[] constant(2)
  b2 = f32[4] broadcast(two), dimensions={}
  a = f32[4] add(p, b2)
  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(m, s, d, a)
}
)");
}

TEST(AlgebraicSimplifierTest, IdentityDataMovementIsRemoved) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[2,3] parameter(0)
  r = f32[2,3] reshape(p)
  t = f32[2,3] transpose(r), dimensions={0,1}
  b = f32[2,3] broadcast(t), dimensions={0,1}
  c = f32[2,3] convert(b)
  s = f32[2,3] slice(c), slice={[0:2], [0:3]}
  k = f32[2,3] copy(s)
  ROOT n = f32[2,3] negate(k)
}
)");
  EXPECT_TRUE(simplify(*module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "p");
  EXPECT_EQ(module->entry()->instructionCount(), 2) << printModule(*module);
}

TEST(AlgebraicSimplifierTest, CopyWithTheSameLayoutIsRemoved) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  c = f32[2,3]{1,0} copy(p)
  ROOT n = f32[2,3]{1,0} negate(c)
}
)");
  EXPECT_TRUE(simplify(*module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "p");
}

TEST(AlgebraicSimplifierTest, LayoutChangingOpsStay) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  p = f32[2,3]{1,0} parameter(0)
  c = f32[2,3]{0,1} copy(p)
  t = f32[2,3]{0,1} transpose(p), dimensions={0,1}
  r = f32[2,3]{0,1} reshape(p)
  zero = f32[] constant(0)
  bz = f32[2,3]{1,0} broadcast(zero), dimensions={}
  a = f32[2,3]{1,0} add(c, bz)
  ROOT tuple = (f32[2,3]{0,1}, f32[2,3]{0,1}, f32[2,3]{0,1}, f32[2,3]{1,0}) tuple(c, t, r, a)
}
)");
}

TEST(AlgebraicSimplifierTest, PartialSliceAndRealBroadcastStay) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  p = f32[4,4] parameter(0)
  s = f32[2,4] slice(p), slice={[0:2], [0:4]}
  st = f32[2,4] slice(p), slice={[0:4:2], [0:4]}
  b = f32[4,4] broadcast(p), dimensions={1,0}
  t = f32[4,4] transpose(p), dimensions={1,0}
  ROOT r = (f32[2,4], f32[2,4], f32[4,4], f32[4,4]) tuple(s, st, b, t)
}
)");
}

TEST(AlgebraicSimplifierTest, TransposeOfTransposeComposes) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[2,3,4] parameter(0)
  t1 = f32[3,4,2] transpose(p), dimensions={1,2,0}
  t2 = f32[4,3,2] transpose(t1), dimensions={1,0,2}
  ROOT n = f32[4,3,2] negate(t2)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* t2 = entryInstruction(*module, "t2");
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t2->operand(0)->name(), "p");
  EXPECT_EQ(*t2->attributes().dimensions, (Ints{2, 1, 0}));
  EXPECT_EQ(entryInstruction(*module, "t1"), nullptr);
}

TEST(AlgebraicSimplifierTest, InverseTransposesCancel) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[2,3] parameter(0)
  t1 = f32[3,2] transpose(p), dimensions={1,0}
  t2 = f32[2,3] transpose(t1), dimensions={1,0}
  ROOT n = f32[2,3] negate(t2)
}
)");
  EXPECT_TRUE(simplify(*module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "p");
  EXPECT_EQ(module->entry()->instructionCount(), 2);
}

TEST(AlgebraicSimplifierTest, ReshapeOfReshapeIsOneReshape) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[2,3,4] parameter(0)
  r1 = f32[6,4] reshape(p)
  r2 = f32[24] reshape(r1)
  back1 = f32[4,6] reshape(p)
  back2 = f32[2,3,4] reshape(back1)
  ROOT t = (f32[6,4], f32[24], f32[2,3,4]) tuple(r1, r2, back2)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(1)->name(), "r2");
  EXPECT_EQ(root->operand(1)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(2)->name(), "p");
  EXPECT_EQ(entryInstruction(*module, "back1"), nullptr);
  EXPECT_NE(entryInstruction(*module, "r1"), nullptr);  // still read by the tuple
}

TEST(AlgebraicSimplifierTest, FoldsIntegersWithWraparound) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a8 = s8[2] constant({100, -128})
  b8 = s8[2] constant({100, -1})
  s8sum = s8[2] add(a8, b8)
  a16 = u8[] constant(200)
  b16 = u8[] constant(100)
  u8sum = u8[] add(a16, b16)
  u8diff = u8[] subtract(b16, a16)
  big = s32[] constant(65536)
  square = s32[] multiply(big, big)
  m7 = s32[2] constant({-7, 7})
  two = s32[2] constant({2, -2})
  quotient = s32[2] divide(m7, two)
  rest = s32[2] remainder(m7, two)
  ROOT t = (s8[2], u8[], u8[], s32[], s32[2], s32[2]) tuple(s8sum, u8sum, u8diff, square, quotient, rest)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(integerValues(root->operand(0)), (Ints{-56, 127}));
  EXPECT_EQ(integerValues(root->operand(1)), (Ints{44}));
  EXPECT_EQ(integerValues(root->operand(2)), (Ints{156}));
  EXPECT_EQ(integerValues(root->operand(3)), (Ints{0}));
  EXPECT_EQ(integerValues(root->operand(4)), (Ints{-3, -3}));
  EXPECT_EQ(integerValues(root->operand(5)), (Ints{-1, 1}));
  EXPECT_EQ(module->entry()->instructionCount(), 7) << printModule(*module);
}

TEST(AlgebraicSimplifierTest, FoldsF32InFloatAndF64InDouble) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[] constant(0.1)
  b = f32[] constant(0.2)
  s = f32[] add(a, b)
  c = f64[] constant(0.1)
  d = f64[] constant(0.2)
  s64 = f64[] add(c, d)
  x = f32[2] constant({3, -4})
  n = f32[2] negate(x)
  ab = f32[2] abs(n)
  ROOT t = (f32[], f64[], f32[2]) tuple(s, s64, ab)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(floatValues(root->operand(0)), (std::vector<double>{static_cast<double>(0.1f + 0.2f)}));
  EXPECT_EQ(floatValues(root->operand(1)), (std::vector<double>{0.1 + 0.2}));
  EXPECT_EQ(floatValues(root->operand(2)), (std::vector<double>{3, 4}));
  // The folded text reads back to the same module.
  auto reparsed = parseOrFail(printModule(*module));
  ASSERT_NE(reparsed, nullptr);
  EXPECT_EQ(printModule(*reparsed), printModule(*module));
}

TEST(AlgebraicSimplifierTest, FoldsCompareSelectConvertClampAndLogic) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a = s32[3] constant({1, 5, -3})
  b = s32[3] constant({3, 3, 3})
  lt = pred[3] compare(a, b), direction=LT
  sel = s32[3] select(lt, a, b)
  f = f32[3] convert(sel)
  g = f32[3] constant({-2.7, 2.7, 1e10})
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  cl = f32[3] clamp(lo, g, hi)
  back = s32[3] convert(cl)
  nt = pred[3] not(lt)
  both = pred[3] and(lt, nt)
  ROOT t = (f32[3], s32[3], pred[3], pred[3]) tuple(f, back, nt, both)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(floatValues(root->operand(0)), (std::vector<double>{1, 3, -3}));
  EXPECT_EQ(integerValues(root->operand(1)), (Ints{-1, 1, 1}));
  EXPECT_EQ(integerValues(root->operand(2)), (Ints{0, 1, 0}));
  EXPECT_EQ(integerValues(root->operand(3)), (Ints{0, 0, 0}));
  EXPECT_EQ(root->operand(2)->shape().elementType(), PrimitiveType::kPred);
}

TEST(AlgebraicSimplifierTest, FoldsDataMovementOfConstants) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  c = s32[2,3] constant({ { 1, 2, 3 }, { 4, 5, 6 } })
  t = s32[3,2] transpose(c), dimensions={1,0}
  r = s32[6] reshape(c)
  row = s32[3] constant({7, 8, 9})
  b = s32[2,3] broadcast(row), dimensions={1}
  ROOT out = (s32[3,2], s32[6], s32[2,3]) tuple(t, r, b)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(integerValues(root->operand(0)), (Ints{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(integerValues(root->operand(1)), (Ints{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(integerValues(root->operand(2)), (Ints{7, 8, 9, 7, 8, 9}));
}

TEST(AlgebraicSimplifierTest, FoldsUpToSixtyFourElementsOnly) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  c = s32[8] constant({0, 1, 2, 3, 4, 5, 6, 7})
  b64 = s32[8,8] broadcast(c), dimensions={1}
  b72 = s32[9,8] broadcast(c), dimensions={1}
  ROOT t = (s32[8,8], s32[9,8]) tuple(b64, b72)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  std::vector<int64_t> values = integerValues(root->operand(0));
  ASSERT_EQ(values.size(), 64u);
  EXPECT_EQ(values[9], 1);
  EXPECT_EQ(values[63], 7);
  EXPECT_EQ(root->operand(1)->name(), "b72");
}

TEST(AlgebraicSimplifierTest, FoldingAndIdentitiesChainInOneRun) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = s32[4] parameter(0)
  five = s32[] constant(5)
  d = s32[] subtract(five, five)
  b = s32[4] broadcast(d), dimensions={}
  a = s32[4] add(p, b)
  ROOT n = s32[4] negate(a)
}
)");
  EXPECT_TRUE(simplify(*module));
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "p");
  EXPECT_EQ(module->entry()->instructionCount(), 2) << printModule(*module);
  EXPECT_FALSE(simplify(*module));
}

TEST(AlgebraicSimplifierTest, LeavesWhatItCannotFold) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  zero = s32[] constant(0)
  seven = s32[] constant(7)
  div0 = s32[] divide(seven, zero)
  h = f16[] constant(1.5)
  hsum = f16[] add(h, h)
  big = f32[] constant(3e38)
  inf = f32[] multiply(big, big)
  e = f32[4] constant({...})
  neg = f32[4] negate(e)
  scalar = f32[] constant(2)
  bs = f32[4] broadcast(scalar), dimensions={}
  wide = s32[65] broadcast(seven), dimensions={}
  ROOT t = (s32[], f16[], f32[], f32[4], f32[4], s32[65]) tuple(div0, hsum, inf, neg, bs, wide)
}
)");
}

TEST(AlgebraicSimplifierTest, FusedComputationsAreLeftToTheFusionPasses) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
fused {
  fp = f32[4] parameter(0)
  zero = f32[] constant(0)
  bz = f32[4] broadcast(zero), dimensions={}
  ROOT a = f32[4] add(fp, bz)
}
ENTRY main {
  p = f32[4] parameter(0)
  ROOT f = f32[4] fusion(p), kind=kLoop, calls=fused
}
)");
}

TEST(AlgebraicSimplifierTest, NothingToDoLeavesTheModuleAsItWas) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p = f32[4,8]{1,0} parameter(0)
  e = f32[4,8]{1,0} exponential(p)
  zero = f32[] constant(0)
  r = f32[4]{0} reduce(e, zero), dimensions={1}, to_apply=add
  b = f32[4,8]{1,0} broadcast(r), dimensions={0}
  ROOT d = f32[4,8]{1,0} divide(e, b)
}
)");
}

class AlgebraicSimplifierCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AlgebraicSimplifierCorpusTest, VerifiesAndIsIdempotent) {
  testing::expectVerifiedAndIdempotent<AlgebraicSimplifier>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, AlgebraicSimplifierCorpusTest,
                         ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AlgebraicSimplifierCorpusTest);

TEST(AlgebraicSimplifierCorpusPresence, CorpusOrSkip) {
  if (!testing::sharedCorpusPresent()) {
    GTEST_SKIP() << "shared corpus not found at " << testing::corpusDir() << ": simplify corpus cases not run";
  }
  EXPECT_FALSE(testing::corpusHloFiles().empty());
}

}  // namespace
}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

bool simplifyFor(HloModule& module, Backend backend) {
  AlgebraicSimplifier pass;
  return testing::runPass(pass, module, backend);
}

constexpr std::string_view kRowDivide = R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p = f32[4,8]{1,0} parameter(0)
  e = f32[4,8]{1,0} exponential(p)
  zero = f32[] constant(0)
  r = f32[4]{0} reduce(e, zero), dimensions={1}, to_apply=add
  b = f32[4,8]{1,0} broadcast(r), dimensions={0}
  ROOT d = f32[4,8]{1,0} divide(e, b)
}
)";

TEST(AlgebraicSimplifierTest, CpuDividesByABroadcastThroughItsReciprocal) {
  auto module = parseOrFail(kRowDivide);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kCpu));
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kMultiply) << printModule(*module);
  const HloInstruction* spread = root->operand(1);
  ASSERT_EQ(spread->opcode(), HloOpcode::kBroadcast);
  const HloInstruction* reciprocal = spread->operand(0);
  ASSERT_EQ(reciprocal->opcode(), HloOpcode::kDivide);
  EXPECT_EQ(reciprocal->shape().dimensions(), (std::vector<int64_t>{4}));
  EXPECT_EQ(reciprocal->operand(1)->name(), "r");

  auto gpu = parseOrFail(kRowDivide);
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE(simplifyFor(*gpu, Backend::kGpu)) << "the gpu preset keeps the division";
}

TEST(AlgebraicSimplifierTest, MaximumWithMinusInfinityIsItsOperand) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = f32[16]{0} parameter(0)
  ninf = f32[] constant(-inf)
  b = f32[16]{0} broadcast(ninf), dimensions={}
  m = f32[16]{0} maximum(b, p)
  inf = f32[] constant(inf)
  binf = f32[16]{0} broadcast(inf), dimensions={}
  ROOT n = f32[16]{0} minimum(m, binf)
}
)");
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kGpu));
  EXPECT_EQ(module->entry()->root()->name(), "p") << printModule(*module);
}

}  // namespace
}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

constexpr std::string_view kTwoAdders = R"(
HloModule m
add_a {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
add_b {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT t = f32[] add(q, p)
}
max_c {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT w = f32[] maximum(u, v)
}
)";

// A mean of per-row sums (TF's loss): the sum over rows of the sums over columns is one sum over both.
TEST(AlgebraicSimplifierTest, ReduceOfReduceWithTheSameOpBecomesOneReduce) {
  auto module = testing::parseOrFail(std::string(kTwoAdders) + R"(
ENTRY main {
  p0 = f32[100,10,3]{2,1,0} parameter(0)
  z1 = f32[] constant(0)
  rows = f32[100,3]{1,0} reduce(p0, z1), dimensions={1}, to_apply=add_a
  z2 = f32[] constant(0)
  ROOT all = f32[3]{0} reduce(rows, z2), dimensions={0}, to_apply=add_b
}
)");
  ASSERT_TRUE(simplify(*module)) << printModule(*module);
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kReduce) << printModule(*module);
  EXPECT_EQ(root->operand(0)->name(), "p0");
  EXPECT_EQ(*root->attributes().dimensions, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(testing::entryInstruction(*module, "rows"), nullptr) << printModule(*module);
}

TEST(AlgebraicSimplifierTest, ReduceOfReduceStaysWhenOpsInitsOrUsersDiffer) {
  for (const std::string& entry : {// different ops
                                   std::string(R"(
ENTRY main {
  p0 = f32[8,16]{1,0} parameter(0)
  z = f32[] constant(0)
  rows = f32[8]{0} reduce(p0, z), dimensions={1}, to_apply=add_a
  ROOT all = f32[] reduce(rows, z), dimensions={0}, to_apply=max_c
}
)"),
                                   // different init values
                                   std::string(R"(
ENTRY main {
  p0 = f32[8,16]{1,0} parameter(0)
  z = f32[] constant(0)
  one = f32[] constant(1)
  rows = f32[8]{0} reduce(p0, z), dimensions={1}, to_apply=add_a
  ROOT all = f32[] reduce(rows, one), dimensions={0}, to_apply=add_a
}
)"),
                                   // the inner reduce is also an output
                                   std::string(R"(
ENTRY main {
  p0 = f32[8,16]{1,0} parameter(0)
  z = f32[] constant(0)
  rows = f32[8]{0} reduce(p0, z), dimensions={1}, to_apply=add_a
  all = f32[] reduce(rows, z), dimensions={0}, to_apply=add_a
  ROOT t = (f32[8]{0}, f32[]) tuple(rows, all)
}
)")}) {
    auto module = testing::parseOrFail(std::string(kTwoAdders) + entry);
    ASSERT_NE(module, nullptr);
    const std::string before = printModule(*module);
    EXPECT_FALSE(simplify(*module)) << printModule(*module);
    EXPECT_EQ(printModule(*module), before);
  }
}

}  // namespace
}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

// JAX's gradient of a [1,n] broadcast: a reduce over the dimension of size 1 is only a reshape.
TEST(AlgebraicSimplifierTest, ReduceOverSizeOneDimensionsIsAReshape) {
  auto module = testing::parseOrFail(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p0 = f32[128]{0} parameter(0)
  r = f32[1,128]{1,0} reshape(p0)
  z = f32[] constant(0)
  ROOT s = f32[128]{0} reduce(r, z), dimensions={0}, to_apply=add
}
)");
  ASSERT_TRUE(simplify(*module)) << printModule(*module);
  // reduce -> reshape, reshape(reshape(p0)) -> p0.
  EXPECT_EQ(module->entry()->root()->name(), "p0") << printModule(*module);
}

TEST(AlgebraicSimplifierTest, ReduceOverSizeOneDimensionsFromANonIdentityStays) {
  auto module = testing::parseOrFail(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p0 = f32[1,128]{1,0} parameter(0)
  five = f32[] constant(5)
  ROOT s = f32[128]{0} reduce(p0, five), dimensions={0}, to_apply=add
}
)");
  EXPECT_FALSE(simplify(*module)) << printModule(*module);
}

// A gradient's dW^T (JAX writes transpose(dot(dy, x)), the transpose with its operand's layout) is one dot with
// its operands swapped, as XLA's simplifier makes it: same values, no transpose left.
TEST(AlgebraicSimplifierTest, TransposeOfAMatrixProductIsTheSwappedProduct) {
  constexpr const char* kText = R"(
HloModule m
ENTRY main {
  dy = f32[8,5]{1,0} parameter(0)
  x = f32[8,3]{1,0} parameter(1)
  d = f32[5,3]{1,0} dot(dy, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[3,5]{0,1} transpose(d), dimensions={1,0}
  ROOT n = f32[3,5]{1,0} negate(t)
}
)";
  auto module = parseOrFail(kText);
  auto original = parseOrFail(kText);
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* product = module->entry()->root()->operand(0);
  ASSERT_EQ(product->opcode(), HloOpcode::kDot) << printModule(*module);
  EXPECT_EQ(product->operand(0)->name(), "x");
  EXPECT_EQ(product->operand(1)->name(), "dy");
  EXPECT_EQ(product->shape().dimensions(), (Ints{3, 5}));
  for (const auto& inst : module->entry()->instructions()) EXPECT_NE(inst->opcode(), HloOpcode::kTranspose);
  testing::expectSameResults(*original, *module, 3);
  EXPECT_FALSE(simplify(*module));
}

// A dot read by others too, a batched dot, and a transpose that is the root stay as they are.
TEST(AlgebraicSimplifierTest, TransposeOfASharedOrBatchedProductStays) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[4,6] parameter(0)
  b = f32[6,2] parameter(1)
  d = f32[4,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[2,4] transpose(d), dimensions={1,0}
  ROOT r = (f32[2,4], f32[4,2]) tuple(t, d)
}
)");
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[3,4,6] parameter(0)
  b = f32[3,6,2] parameter(1)
  d = f32[3,4,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = f32[3,2,4] transpose(d), dimensions={0,2,1}
}
)");
}

// A causal 1-D convolution pads its input on the left; XLA folds the pad into the window's padding.
TEST(AlgebraicSimplifierTest, ZeroPadOfAConvolutionInputMovesIntoItsWindow) {
  constexpr const char* kText = R"(
HloModule m
ENTRY main {
  x = f32[2,16,4] parameter(0)
  k = f32[2,4,4] parameter(1)
  zero = f32[] constant(0)
  padded = f32[2,20,4] pad(x, zero), padding=0_0x4_0x0_0
  ROOT c = f32[2,16,4] convolution(padded, k), window={size=2 rhs_dilate=4}, dim_labels=b0f_0io->b0f
}
)";
  auto module = parseOrFail(kText);
  auto original = parseOrFail(kText);
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* conv = module->entry()->root();
  ASSERT_EQ(conv->opcode(), HloOpcode::kConvolution) << printModule(*module);
  EXPECT_EQ(conv->operand(0)->name(), "x") << printModule(*module);
  ASSERT_TRUE(conv->attributes().window.has_value());
  EXPECT_EQ(conv->attributes().window->dims.at(0).padLow, 4);
  EXPECT_EQ(conv->attributes().window->dims.at(0).padHigh, 0);
  EXPECT_EQ(entryInstruction(*module, "padded"), nullptr) << "the pad is gone";
  testing::expectSameResults(*original, *module, 5);
}

// A pad by another value, with interior padding, or of the feature dimension stays.
TEST(AlgebraicSimplifierTest, OtherPadsOfAConvolutionInputStay) {
  constexpr const char* kHead = R"(
HloModule m
ENTRY main {
  x = f32[2,16,4] parameter(0)
  zero = f32[] constant(0)
  one = f32[] constant(1)
)";
  for (const char* body : {
           "  k = f32[2,4,4] parameter(1)\n  padded = f32[2,20,4] pad(x, one), padding=0_0x4_0x0_0\n"
           "  ROOT c = f32[2,19,4] convolution(padded, k), window={size=2}, dim_labels=b0f_0io->b0f\n}\n",
           "  k = f32[2,4,4] parameter(1)\n  padded = f32[2,31,4] pad(x, zero), padding=0_0x0_0_1x0_0\n"
           "  ROOT c = f32[2,30,4] convolution(padded, k), window={size=2}, dim_labels=b0f_0io->b0f\n}\n",
           "  k = f32[2,5,4] parameter(1)\n  padded = f32[2,16,5] pad(x, zero), padding=0_0x0_0x1_0\n"
           "  ROOT c = f32[2,15,4] convolution(padded, k), window={size=2}, dim_labels=b0f_0io->b0f\n}\n"}) {
    testing::expectUnchanged<AlgebraicSimplifier>(std::string(kHead) + body);
  }
}

// jnp.clip and ReLU6: min(max(x, lo), hi) with scalar constants is one clamp, in either nesting and order.
TEST(AlgebraicSimplifierTest, MinOfMaxWithConstantBoundsIsAClamp) {
  for (const char* body : {"lo_x = f32[8] maximum(x, lo)\n  ROOT r = f32[8] minimum(lo_x, hi)",
                           "lo_x = f32[8] maximum(lo, x)\n  ROOT r = f32[8] minimum(hi, lo_x)",
                           "hi_x = f32[8] minimum(x, hi)\n  ROOT r = f32[8] maximum(lo, hi_x)"}) {
    const std::string text = std::string(R"(
HloModule m
ENTRY main {
  x = f32[8] parameter(0)
  zero = f32[] constant(0)
  six = f32[] constant(6)
  lo = f32[8] broadcast(zero), dimensions={}
  hi = f32[8] broadcast(six), dimensions={}
  )") + body + "\n}\n";
    auto module = parseOrFail(text);
    auto original = parseOrFail(text);
    EXPECT_TRUE(simplify(*module)) << body;
    const HloInstruction* root = module->entry()->root();
    ASSERT_EQ(root->opcode(), HloOpcode::kClamp) << printModule(*module);
    EXPECT_EQ(root->operand(0)->name(), "lo");
    EXPECT_EQ(root->operand(1)->name(), "x");
    EXPECT_EQ(root->operand(2)->name(), "hi");
    testing::expectSameResults(*original, *module, 5);
  }
}

// Bounds in the wrong order (the result is the constant hi whatever x is) or not constant stay min and max.
TEST(AlgebraicSimplifierTest, MinAndMaxWithoutOrderedConstantBoundsStay) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  x = f32[8] parameter(0)
  zero = f32[] constant(0)
  six = f32[] constant(6)
  lo = f32[8] broadcast(six), dimensions={}
  hi = f32[8] broadcast(zero), dimensions={}
  lo_x = f32[8] maximum(x, lo)
  ROOT r = f32[8] minimum(lo_x, hi)
}
)");
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  six = f32[] constant(6)
  hi = f32[8] broadcast(six), dimensions={}
  lo_x = f32[8] maximum(x, y)
  ROOT r = f32[8] minimum(lo_x, hi)
}
)");
}

// abs of a value that is never negative (a ReLU's output, a square) is that value; abs of anything else stays.
TEST(AlgebraicSimplifierTest, AbsOfANonNegativeValueIsTheValue) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  x = f32[8] parameter(0)
  zero = f32[] constant(0)
  zeros = f32[8] broadcast(zero), dimensions={}
  relu = f32[8] maximum(x, zeros)
  a = f32[8] abs(relu)
  sq = f32[8] multiply(x, x)
  b = f32[8] abs(sq)
  c = f32[8] abs(x)
  ROOT t = (f32[8], f32[8], f32[8]) tuple(a, b, c)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0)->name(), "relu") << printModule(*module);
  EXPECT_EQ(root->operand(1)->name(), "sq");
  EXPECT_EQ(root->operand(2)->opcode(), HloOpcode::kAbs);
}

// select with a predicate that is one constant everywhere is the chosen operand (jnp.var's ddof guard).
TEST(AlgebraicSimplifierTest, SelectByAConstantPredicateIsTheChosenOperand) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  p = pred[8] parameter(2)
  yes = pred[] constant(true)
  no = pred[] constant(false)
  all = pred[8] broadcast(yes), dimensions={}
  none = pred[8] broadcast(no), dimensions={}
  a = f32[8] select(all, x, y)
  b = f32[8] select(none, x, y)
  c = f32[8] select(p, x, y)
  ROOT t = (f32[8], f32[8], f32[8]) tuple(a, b, c)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0)->name(), "x") << printModule(*module);
  EXPECT_EQ(root->operand(1)->name(), "y");
  EXPECT_EQ(root->operand(2)->opcode(), HloOpcode::kSelect);
}

// A dot whose operands have only batch and contracting dimensions (einsum 'bi,bi->b', jnp.dot of two vectors) is a
// sum of products, as XLA's simplifier writes it: the operands lined up, converted to the accumulation type,
// multiplied and reduced over the contracting dimensions, whatever the dimension order, element type or rank.
TEST(AlgebraicSimplifierTest, DotOfOperandsWithoutFreeDimensionsIsASumOfProducts) {
  struct Case {
    const char* params;
    const char* dot;
    const char* finalOpcode;  // the replacement's root
  };
  const Case cases[] = {
      {"a = f32[4,30] parameter(0)\n  b = f32[4,30] parameter(1)",
       "f32[4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
       "reduce"},
      {"a = f32[30] parameter(0)\n  b = f32[30] parameter(1)",
       "f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}", "reduce"},
      // b's dimensions in another order than a's: b is transposed to a's.
      {"a = f32[4,8,6] parameter(0)\n  b = f32[6,4,8] parameter(1)",
       "f32[4,6] dot(a, b), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={1,0}, "
       "rhs_contracting_dims={2}",
       "reduce"},
      // a lists its batch dimensions out of order: the sum is transposed to the dot's order.
      {"a = f32[4,8,6] parameter(0)\n  b = f32[4,8,6] parameter(1)",
       "f32[6,4] dot(a, b), lhs_batch_dims={2,0}, lhs_contracting_dims={1}, rhs_batch_dims={2,0}, "
       "rhs_contracting_dims={1}",
       "transpose"},
      // Two contracting dimensions.
      {"a = f32[3,5,7] parameter(0)\n  b = f32[3,5,7] parameter(1)",
       "f32[5] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={0,2}, rhs_batch_dims={1}, "
       "rhs_contracting_dims={0,2}",
       "reduce"},
      {"a = bf16[4,30] parameter(0)\n  b = bf16[4,30] parameter(1)",
       "f32[4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
       "reduce"},
      // A narrow float result is summed in f32 and converted back.
      {"a = f16[30] parameter(0)\n  b = f16[30] parameter(1)",
       "f16[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}", "convert"},
      {"a = s8[4,30] parameter(0)\n  b = s8[4,30] parameter(1)",
       "s32[4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
       "reduce"},
      {"a = c64[4,8,6] parameter(0)\n  b = c64[4,8,6] parameter(1)",
       "c64[4,6] dot(a, b), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={0,2}, "
       "rhs_contracting_dims={1}",
       "reduce"},
  };
  for (const Case& c : cases) {
    const std::string text =
        std::string("HloModule m\nENTRY main {\n  ") + c.params + "\n  ROOT d = " + c.dot + "\n}\n";
    auto module = parseOrFail(text);
    auto original = parseOrFail(text);
    EXPECT_TRUE(simplify(*module)) << c.dot;
    const HloInstruction* root = module->entry()->root();
    EXPECT_EQ(root->opcodeString(), c.finalOpcode) << printModule(*module);
    EXPECT_EQ(root->shape(), original->entry()->root()->shape()) << printModule(*module);
    bool anyDot = false;
    bool anyMultiply = false;
    for (const auto& inst : module->entry()->instructions()) {
      anyDot = anyDot || inst->opcode() == HloOpcode::kDot;
      anyMultiply = anyMultiply || inst->opcode() == HloOpcode::kMultiply;
    }
    EXPECT_FALSE(anyDot) << printModule(*module);
    EXPECT_TRUE(anyMultiply) << printModule(*module);
    testing::expectResultsWithinRounding(*original, *module, 3);
  }
}

// A dot with a free dimension on either side is a matrix product (einsum 'bij,bi->bj', a matrix-vector product): it
// stays a dot; so does a vector dot that names its algorithm.
TEST(AlgebraicSimplifierTest, DotWithAFreeDimensionStays) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[4,8,6] parameter(0)
  b = f32[4,8] parameter(1)
  ROOT d = f32[4,6] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
)");
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[8] parameter(0)
  b = f32[8,6] parameter(1)
  ROOT d = f32[6] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
)");
  // A vector dot that names its algorithm rounds its operands its own way: it stays a dot.
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = f32[4,30] parameter(0)
  b = f32[4,30] parameter(1)
  ROOT d = f32[4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}, algorithm=dot_bf16_bf16_f32
}
)");
}

// reduce(negate(x), 0, add) is negate(reduce(x, 0, add)) when nothing else reads the negate, as XLA's simplifier
// writes it (JAX's gradient of a subtraction): the negation runs on the sums. A negate another op reads, a sum from
// a non-zero start and a maximum stay.
TEST(AlgebraicSimplifierTest, ASumOfANegationIsTheNegationOfTheSum) {
  const std::string text = R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] maximum(x, y)
}
ENTRY main {
  x = f32[4,12,8] parameter(0)
  y = f32[4,8] parameter(1)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  n = f32[4,12,8] negate(x)
  a = f32[8] reduce(n, zero), dimensions={0,1}, to_apply=add
  m = f32[4,8] negate(y)
  b = f32[8] reduce(m, zero), dimensions={0}, to_apply=add
  c = f32[8] reduce(m, one), dimensions={0}, to_apply=add
  k = f32[4,12,8] negate(x)
  d = f32[8] reduce(k, zero), dimensions={0,1}, to_apply=max
  ROOT t = (f32[8], f32[8], f32[8], f32[8]) tuple(a, b, c, d)
}
)";
  auto module = parseOrFail(text);
  auto original = parseOrFail(text);
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  const HloInstruction* a = root->operand(0);
  ASSERT_EQ(a->opcode(), HloOpcode::kNegate) << printModule(*module);
  ASSERT_EQ(a->operand(0)->opcode(), HloOpcode::kReduce);
  EXPECT_EQ(a->operand(0)->operand(0)->name(), "x");
  EXPECT_EQ(a->operand(0)->attributes().dimensions, (std::vector<int64_t>{0, 1}));
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(root->operand(i)->opcode(), HloOpcode::kReduce) << printModule(*module);
    EXPECT_EQ(root->operand(i)->operand(0)->opcode(), HloOpcode::kNegate) << printModule(*module);
  }
  testing::expectResultsWithinRounding(*original, *module, 3);
}

// (a * c1) * c2 is a * (c1 * c2) for constants, or broadcasts of scalar constants, on both sides, in any operand
// order, as XLA's simplifier writes it (a running mean's momentum times 1/n): one multiply per element.
TEST(AlgebraicSimplifierTest, ConstantFactorsOfAProductAreMultipliedFirst) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[16] parameter(0)
  tenth = f32[] constant(0.1)
  half = f32[] constant(0.5)
  tenths = f32[16] broadcast(tenth), dimensions={}
  halves = f32[16] broadcast(half), dimensions={}
  inner = f32[16] multiply(tenths, x)
  a = f32[16] multiply(halves, inner)
  k1 = f32[4] constant({1, 2, 3, 4})
  k2 = f32[4] constant({2, 2, 2, 0.5})
  y = f32[4] parameter(1)
  inner2 = f32[4] multiply(y, k1)
  b = f32[4] multiply(inner2, k2)
  p = f32[16] parameter(2)
  inner3 = f32[16] multiply(x, p)
  c = f32[16] multiply(inner3, halves)
  ROOT t = (f32[16], f32[4], f32[16]) tuple(a, b, c)
}
)";
  auto module = parseOrFail(text);
  auto original = parseOrFail(text);
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  const HloInstruction* a = root->operand(0);
  ASSERT_EQ(a->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(a->operand(0)->name(), "x");
  ASSERT_EQ(a->operand(1)->opcode(), HloOpcode::kBroadcast);
  EXPECT_EQ(floatValues(a->operand(1)->operand(0)), (std::vector<double>{static_cast<float>(0.1) * 0.5f}));
  const HloInstruction* b = root->operand(1);
  ASSERT_EQ(b->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(b->operand(0)->name(), "y");
  EXPECT_EQ(floatValues(b->operand(1)), (std::vector<double>{2, 4, 6, 2}));
  // A product of two parameters times a constant has one constant factor only: it stays.
  EXPECT_EQ(root->operand(2)->operand(0)->name(), "inner3") << printModule(*module);
  testing::expectResultsWithinRounding(*original, *module, 3);
}

// A product with a converted predicate is a select of the other factor or zero, in either operand order, as XLA's
// simplifier writes it (jnp.eye is a convert of `iota == iota`; its gradient multiplies by it again): the convert goes
// once nothing else reads it. A product with a convert from another type, or of a complex type, stays.
TEST(AlgebraicSimplifierTest, AProductWithAConvertedPredicateIsASelect) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[8,8] parameter(0)
  y = s32[8,8] parameter(1)
  i = s32[8,8] iota(), iota_dimension=0
  j = s32[8,8] iota(), iota_dimension=1
  eq = pred[8,8] compare(i, j), direction=EQ
  eye = f32[8,8] convert(eq)
  a = f32[8,8] multiply(x, eye)
  ieye = s32[8,8] convert(eq)
  b = s32[8,8] multiply(ieye, y)
  yf = f32[8,8] convert(y)
  c = f32[8,8] multiply(x, yf)
  ROOT t = (f32[8,8], s32[8,8], f32[8,8]) tuple(a, b, c)
}
)";
  auto module = parseOrFail(text);
  auto original = parseOrFail(text);
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  for (int i = 0; i < 2; ++i) {
    const HloInstruction* select = root->operand(i);
    ASSERT_EQ(select->opcode(), HloOpcode::kSelect) << printModule(*module);
    EXPECT_EQ(select->operand(0)->name(), "eq");
    EXPECT_EQ(select->operand(1)->name(), i == 0 ? "x" : "y");
    ASSERT_EQ(select->operand(2)->opcode(), HloOpcode::kBroadcast);
    EXPECT_EQ(select->operand(2)->operand(0)->opcode(), HloOpcode::kConstant);
  }
  EXPECT_EQ(root->operand(2)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(module->entry()->findInstruction("eye"), nullptr) << printModule(*module);
  testing::expectResultsWithinRounding(*original, *module, 3);
}

// Of predicates, x != false and x == true are x (jnp.remainder's sign test once its divisor is a constant).
TEST(AlgebraicSimplifierTest, APredicateComparedWithItsIdentityIsThePredicate) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p = pred[8] parameter(0)
  q = pred[8] parameter(1)
  no = pred[] constant(false)
  yes = pred[] constant(true)
  nos = pred[8] broadcast(no), dimensions={}
  yeses = pred[8] broadcast(yes), dimensions={}
  a = pred[8] compare(p, nos), direction=NE
  b = pred[8] compare(yeses, p), direction=EQ
  c = pred[8] compare(p, yeses), direction=NE
  d = pred[8] compare(p, q), direction=NE
  ROOT t = (pred[8], pred[8], pred[8], pred[8]) tuple(a, b, c, d)
}
)");
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0)->name(), "p") << printModule(*module);
  EXPECT_EQ(root->operand(1)->name(), "p");
  EXPECT_EQ(root->operand(2)->opcode(), HloOpcode::kCompare);
  EXPECT_EQ(root->operand(3)->opcode(), HloOpcode::kCompare);
}

// slice(slice(x)) is one slice of x (the first column of a top-k's first k): starts and strides composed.
TEST(AlgebraicSimplifierTest, ASliceOfASliceIsOneSlice) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = f32[8,20] parameter(0)
  a = f32[8,6] slice(x), slice={[0:8], [2:20:3]}
  b = f32[3,2] slice(a), slice={[1:7:2], [1:5:2]}
  c = f32[8,1] slice(a), slice={[0:8], [0:1]}
  ROOT t = (f32[3,2], f32[8,1]) tuple(b, c)
}
)";
  auto module = parseOrFail(text);
  auto original = parseOrFail(text);
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(root->operand(i)->opcode(), HloOpcode::kSlice) << printModule(*module);
    EXPECT_EQ(root->operand(i)->operand(0)->name(), "x") << printModule(*module);
  }
  // b: rows 1, 3, 5 of x; columns 1 and 3 of a, which are 5 and 11 of x.
  EXPECT_EQ(root->operand(0)->attributes().slice, (std::vector<SliceDim>{{1, 6, 2}, {5, 12, 6}}));
  EXPECT_EQ(root->operand(1)->attributes().slice, (std::vector<SliceDim>{{0, 8, 1}, {2, 3, 3}}));
  testing::expectSameResults(*original, *module);
}

// A broadcast of an iota is an iota of the broadcast's shape (jax.nn.one_hot over a batch), along the dimension the
// iota's dimension lands on.
TEST(AlgebraicSimplifierTest, ABroadcastOfAnIotaIsAnIota) {
  const std::string text = R"(
HloModule m
ENTRY main {
  i = s32[4] iota(), iota_dimension=0
  a = s32[32,2,4] broadcast(i), dimensions={2}
  j = s32[4,3] iota(), iota_dimension=1
  b = s32[3,4,5] broadcast(j), dimensions={1,0}
  ROOT t = (s32[32,2,4], s32[3,4,5]) tuple(a, b)
}
)";
  auto module = parseOrFail(text);
  auto original = parseOrFail(text);
  EXPECT_TRUE(simplify(*module));
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->operand(0)->opcode(), HloOpcode::kIota) << printModule(*module);
  EXPECT_EQ(root->operand(0)->attributes().iotaDimension, 2);
  ASSERT_EQ(root->operand(1)->opcode(), HloOpcode::kIota) << printModule(*module);
  EXPECT_EQ(root->operand(1)->attributes().iotaDimension, 0);
  testing::expectSameResults(*original, *module);
}

}  // namespace
}  // namespace fusionscope::core
