#include "core/passes/multi_output_fusion.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/ir/hlo_verifier.h"
#include "core/passes/fusion_utils.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryFusions;
using testing::entryInstruction;
using testing::fusedOpcodes;
using testing::parseOrFail;
using testing::runPass;

using Opcodes = std::vector<std::string>;

// Every decision sentence, one per line, for failure messages and substring checks.
std::string reasons(const PassContext& context) {
  std::string text;
  for (const FusionDecision& decision : context.decisions()) text += decision.reason + "\n";
  return text;
}

bool hasReason(const PassContext& context, const std::string& part) {
  return std::any_of(context.decisions().begin(), context.decisions().end(),
                     [&](const FusionDecision& d) { return d.reason.find(part) != std::string::npos; });
}

const FusionDecision* firstFused(const PassContext& context) {
  for (const FusionDecision& decision : context.decisions()) {
    if (decision.fused) return &decision;
  }
  return nullptr;
}

// The fused root of a fusion as "opcode(operand opcodes...)", e.g. "tuple(reduce,exponential)".
std::string rootShape(const HloInstruction& fusion) {
  const HloInstruction* root = fusion.fusedComputation()->root();
  std::string text = std::string(root->opcodeString()) + "(";
  for (int i = 0; i < root->operandCount(); ++i) {
    if (i) text += ",";
    text += std::string(root->operand(i)->opcodeString());
  }
  return text + ")";
}

// Two loop fusions and a reduction fusion over p0, plus a loop fusion of another shape.
constexpr std::string_view kSiblings = R"(
HloModule siblings

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_neg {
  a.0 = f32[32,64]{1,0} parameter(0)
  ROOT neg.0 = f32[32,64]{1,0} negate(a.0)
}
fused_exp {
  b.0 = f32[32,64]{1,0} parameter(0)
  ROOT exp.0 = f32[32,64]{1,0} exponential(b.0)
}
ENTRY main {
  p0 = f32[32,64]{1,0} parameter(0)
  fusion.2 = f32[32,64]{1,0} fusion(p0), kind=kLoop, calls=fused_neg
  fusion.3 = f32[32,64]{1,0} fusion(p0), kind=kLoop, calls=fused_exp
  ROOT t = (f32[32,64]{1,0}, f32[32,64]{1,0}) tuple(fusion.2, fusion.3)
}
)";

TEST(MultiOutputFusionTest, SiblingLoopFusionsReadingTheSameOperandMerge) {
  auto module = parseOrFail(kSiblings);
  MultiOutputFusion pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 1u) << printModule(*module);
  const HloInstruction* fusion = fusions.front();
  EXPECT_EQ(fusion->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(fusion->operandCount(), 1);  // p0 read once
  EXPECT_EQ(fusedOpcodes(*fusion), (Opcodes{"exponential", "negate", "tuple"}));
  EXPECT_EQ(rootShape(*fusion), "tuple(negate,exponential)");
  // The ENTRY root reads the two outputs through get-tuple-element 0 and 1, in the old order.
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->operandCount(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(root->operand(i)->opcode(), HloOpcode::kGetTupleElement) << printModule(*module);
    EXPECT_EQ(root->operand(i)->operand(0), fusion);
    EXPECT_EQ(*root->operand(i)->attributes().tupleIndex, i);
  }
  const FusionDecision* decision = firstFused(context);
  ASSERT_NE(decision, nullptr);
  EXPECT_EQ(decision->pass, "multi-output-fusion");
  EXPECT_NE(decision->reason.find("merged fusion.2 and fusion.3 into one multi-output fusion"), std::string::npos)
      << decision->reason;
  EXPECT_NE(decision->reason.find("they share p0 (8.19 KB read once)"), std::string::npos) << decision->reason;
  EXPECT_EQ(decision->bytesSaved, 32 * 64 * 4);
}

TEST(MultiOutputFusionTest, SecondRunChangesNothing) {
  auto module = parseOrFail(kSiblings);
  MultiOutputFusion pass;
  ASSERT_TRUE(runPass(pass, *module));
  const std::string once = printModule(*module);
  EXPECT_FALSE(runPass(pass, *module));
  EXPECT_EQ(printModule(*module), once);
}

TEST(MultiOutputFusionTest, CpuConfigDoesNothing) {
  auto module = parseOrFail(kSiblings);
  const std::string before = printModule(*module);
  MultiOutputFusion pass;
  PassContext context(fusionConfigFor(Backend::kCpu));
  EXPECT_FALSE(runPass(pass, *module, context));
  EXPECT_EQ(printModule(*module), before);
  EXPECT_TRUE(context.decisions().empty()) << reasons(context);
}

TEST(MultiOutputFusionTest, LoopsOfDifferentShapesAreNotMerged) {
  auto module = parseOrFail(R"(
HloModule shapes
fused_neg {
  a.0 = f32[8]{0} parameter(0)
  ROOT neg.0 = f32[8]{0} negate(a.0)
}
fused_reshape {
  b.0 = f32[8]{0} parameter(0)
  ROOT r.0 = f32[4,2]{1,0} reshape(b.0)
}
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  fusion.2 = f32[8]{0} fusion(p0), kind=kLoop, calls=fused_neg
  fusion.5 = f32[4,2]{1,0} fusion(p0), kind=kLoop, calls=fused_reshape
  ROOT t = (f32[8]{0}, f32[4,2]{1,0}) tuple(fusion.2, fusion.5)
}
)");
  const std::string before = printModule(*module);
  MultiOutputFusion pass;
  PassContext context;
  EXPECT_FALSE(runPass(pass, *module, context));
  EXPECT_EQ(printModule(*module), before);
  EXPECT_TRUE(hasReason(context,
                        "not merging fusion.2 and fusion.5: output shapes f32[8] and f32[4,2] are not the "
                        "same loop"))
      << reasons(context);
}

TEST(MultiOutputFusionTest, SiblingThatDependsOnTheOtherIsNotMerged) {
  auto module = parseOrFail(R"(
HloModule dependent
fused_neg {
  a.0 = f32[8]{0} parameter(0)
  ROOT neg.0 = f32[8]{0} negate(a.0)
}
fused_add {
  b.0 = f32[8]{0} parameter(0)
  b.1 = f32[8]{0} parameter(1)
  ROOT add.0 = f32[8]{0} add(b.0, b.1)
}
fused_abs {
  c.0 = f32[8]{0} parameter(0)
  ROOT abs.0 = f32[8]{0} abs(c.0)
}
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  fusion.2 = f32[8]{0} fusion(p0), kind=kLoop, calls=fused_neg
  fusion.4 = f32[8]{0} fusion(fusion.2), kind=kLoop, calls=fused_abs
  ROOT fusion.5 = f32[8]{0} fusion(p0, fusion.4), kind=kLoop, calls=fused_add
}
)");
  const std::string before = printModule(*module);
  MultiOutputFusion pass;
  PassContext context;
  EXPECT_FALSE(runPass(pass, *module, context));
  EXPECT_EQ(printModule(*module), before);
  EXPECT_TRUE(hasReason(context, "not merging fusion.2 and fusion.5: fusion.5 depends on fusion.2"))
      << reasons(context);
}

TEST(MultiOutputFusionTest, OnlyAScalarInCommonIsNoReasonToMerge) {
  auto module = parseOrFail(R"(
HloModule scalar
fused_a {
  a.0 = f32[] parameter(0)
  a.1 = f32[8]{0} parameter(1)
  b.a = f32[8]{0} broadcast(a.0), dimensions={}
  ROOT m.0 = f32[8]{0} multiply(b.a, a.1)
}
fused_b {
  c.0 = f32[] parameter(0)
  c.1 = f32[8]{0} parameter(1)
  b.c = f32[8]{0} broadcast(c.0), dimensions={}
  ROOT m.1 = f32[8]{0} add(b.c, c.1)
}
ENTRY main {
  s = f32[] parameter(0)
  p1 = f32[8]{0} parameter(1)
  p2 = f32[8]{0} parameter(2)
  fusion.1 = f32[8]{0} fusion(s, p1), kind=kLoop, calls=fused_a
  fusion.2 = f32[8]{0} fusion(s, p2), kind=kLoop, calls=fused_b
  ROOT t = (f32[8]{0}, f32[8]{0}) tuple(fusion.1, fusion.2)
}
)");
  MultiOutputFusion pass;
  EXPECT_FALSE(runPass(pass, *module));
  EXPECT_EQ(entryFusions(*module).size(), 2u);
}

constexpr std::string_view kReductions = R"(
HloModule reductions
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_r1 {
  a.0 = f32[32,64]{1,0} parameter(0)
  a.1 = f32[] parameter(1)
  ROOT r1 = f32[32]{0} reduce(a.0, a.1), dimensions={1}, to_apply=add
}
fused_r2 {
  b.0 = f32[32,64]{1,0} parameter(0)
  b.1 = f32[] parameter(1)
  m = f32[32,64]{1,0} multiply(b.0, b.0)
  ROOT r2 = f32[DIMS]{0} reduce(m, b.1), dimensions={REDUCED}, to_apply=add
}
ENTRY main {
  p0 = f32[32,64]{1,0} parameter(0)
  zero = f32[] constant(0)
  fusion.1 = f32[32]{0} fusion(p0, zero), kind=kInput, calls=fused_r1
  fusion.2 = f32[DIMS]{0} fusion(p0, zero), kind=kInput, calls=fused_r2
  ROOT t = (f32[32]{0}, f32[DIMS]{0}) tuple(fusion.1, fusion.2)
}
)";

std::string reductions(const std::string& dims, const std::string& reduced) {
  std::string text(kReductions);
  for (auto [from, to] : {std::pair<std::string, std::string>{"DIMS", dims}, {"REDUCED", reduced}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from)) text.replace(at, from.size(), to);
  }
  return text;
}

TEST(MultiOutputFusionTest, ReductionsOverTheSameDimensionsMerge) {
  auto module = parseOrFail(reductions("32", "1"));
  MultiOutputFusion pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 1u) << printModule(*module);
  EXPECT_EQ(fusions.front()->fusionKind(), FusionKind::kInput);
  EXPECT_EQ(rootShape(*fusions.front()), "tuple(reduce,reduce)");
  EXPECT_EQ(fusedOpcodes(*fusions.front()), (Opcodes{"multiply", "reduce", "reduce", "tuple"}));
}

TEST(MultiOutputFusionTest, ReductionsOverDifferentDimensionsDoNotMerge) {
  auto module = parseOrFail(reductions("64", "0"));
  MultiOutputFusion pass;
  PassContext context;
  EXPECT_FALSE(runPass(pass, *module, context));
  EXPECT_EQ(entryFusions(*module).size(), 2u);
  EXPECT_TRUE(hasReason(context,
                        "not merging fusion.1 and fusion.2: they reduce f32[32,64] over different dimensions "
                        "({1} and {0})"))
      << reasons(context);
}

TEST(MultiOutputFusionTest, LoopOverTheReducedShapeJoinsTheReduction) {
  auto module = parseOrFail(R"(
HloModule loop_and_reduce
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_r {
  a.0 = f32[32,64]{1,0} parameter(0)
  a.1 = f32[] parameter(1)
  ROOT r = f32[32]{0} reduce(a.0, a.1), dimensions={1}, to_apply=add
}
fused_neg {
  b.0 = f32[32,64]{1,0} parameter(0)
  ROOT neg = f32[32,64]{1,0} negate(b.0)
}
ENTRY main {
  p0 = f32[32,64]{1,0} parameter(0)
  zero = f32[] constant(0)
  fusion.1 = f32[32]{0} fusion(p0, zero), kind=kInput, calls=fused_r
  fusion.2 = f32[32,64]{1,0} fusion(p0), kind=kLoop, calls=fused_neg
  ROOT t = (f32[32]{0}, f32[32,64]{1,0}) tuple(fusion.1, fusion.2)
}
)");
  MultiOutputFusion pass;
  ASSERT_TRUE(runPass(pass, *module));
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 1u) << printModule(*module);
  EXPECT_EQ(fusions.front()->fusionKind(), FusionKind::kInput);  // a reduction is part of it
  EXPECT_EQ(rootShape(*fusions.front()), "tuple(reduce,negate)");
}

TEST(MultiOutputFusionTest, ProducerWithOtherUsersBecomesAnExtraOutputOfTheReduction) {
  auto module = parseOrFail(R"(
HloModule producer_consumer
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_exp {
  a.0 = f32[16,128]{1,0} parameter(0)
  a.1 = f32[16,128]{1,0} parameter(1)
  m = f32[16,128]{1,0} multiply(a.0, a.1)
  ROOT e = f32[16,128]{1,0} exponential(m)
}
fused_reduce {
  b.0 = f32[16,128]{1,0} parameter(0)
  b.1 = f32[] parameter(1)
  ROOT r = f32[16]{0} reduce(b.0, b.1), dimensions={1}, to_apply=add
}
ENTRY main {
  p0 = f32[16,128]{1,0} parameter(0)
  p1 = f32[16,128]{1,0} parameter(1)
  zero = f32[] constant(0)
  fusion.1 = f32[16,128]{1,0} fusion(p0, p1), kind=kLoop, calls=fused_exp
  fusion.2 = f32[16]{0} fusion(fusion.1, zero), kind=kInput, calls=fused_reduce
  other = f32[16,128]{1,0} negate(fusion.1)
  ROOT t = (f32[16]{0}, f32[16,128]{1,0}) tuple(fusion.2, other)
}
)");
  MultiOutputFusion pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  EXPECT_EQ(entryInstruction(*module, "fusion.1"), nullptr) << printModule(*module);
  HloInstruction* fusion = entryInstruction(*module, "fusion.2");
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(fusion->fusionKind(), FusionKind::kInput);
  EXPECT_EQ(fusedOpcodes(*fusion), (Opcodes{"exponential", "multiply", "reduce", "tuple"}));
  EXPECT_EQ(rootShape(*fusion), "tuple(reduce,exponential)");
  // negate reads the exponential from output 1 instead of a second kernel.
  const HloInstruction* other = entryInstruction(*module, "other");
  ASSERT_NE(other, nullptr) << printModule(*module);
  ASSERT_EQ(other->operand(0)->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(other->operand(0)->operand(0), fusion);
  EXPECT_EQ(*other->operand(0)->attributes().tupleIndex, 1);
  EXPECT_TRUE(hasReason(context, "fused fusion.1 into fusion.2 as an extra output")) << reasons(context);
}

// `fusion` refuses a transpose into a reduction (pairRule); this pass may not build it either, whether the
// transposing loop is the reduction's producer or its sibling.
TEST(MultiOutputFusionTest, TransposingProducerStaysOutsideTheReduction) {
  auto module = parseOrFail(R"(
HloModule transposed_producer
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_transpose {
  a.0 = f32[64,64]{1,0} parameter(0)
  t.0 = f32[64,64]{1,0} transpose(a.0), dimensions={1,0}
  ROOT e = f32[64,64]{1,0} exponential(t.0)
}
fused_reduce {
  b.0 = f32[64,64]{1,0} parameter(0)
  b.1 = f32[] parameter(1)
  ROOT r = f32[64]{0} reduce(b.0, b.1), dimensions={1}, to_apply=add
}
ENTRY main {
  p0 = f32[64,64]{1,0} parameter(0)
  zero = f32[] constant(0)
  fusion.1 = f32[64,64]{1,0} fusion(p0), kind=kLoop, calls=fused_transpose
  fusion.2 = f32[64]{0} fusion(fusion.1, zero), kind=kInput, calls=fused_reduce
  ROOT t = (f32[64]{0}, f32[64,64]{1,0}) tuple(fusion.2, fusion.1)
}
)");
  const std::string before = printModule(*module);
  MultiOutputFusion pass;
  PassContext context;
  EXPECT_FALSE(runPass(pass, *module, context)) << reasons(context) << printModule(*module);
  EXPECT_EQ(printModule(*module), before);
  EXPECT_TRUE(hasReason(context,
                        "not fusing fusion.1 into fusion.2: fusion.1 contains t.0; a transpose feeding a "
                        "reduction makes the reduction read memory out of order"))
      << reasons(context);
}

TEST(MultiOutputFusionTest, TransposingSiblingDoesNotJoinAReduction) {
  auto module = parseOrFail(R"(
HloModule transposed_sibling
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_transpose {
  a.0 = f32[64,64]{1,0} parameter(0)
  t.0 = f32[64,64]{1,0} transpose(a.0), dimensions={1,0}
  ROOT e = f32[64,64]{1,0} exponential(t.0)
}
fused_reduce {
  b.0 = f32[64,64]{1,0} parameter(0)
  b.1 = f32[] parameter(1)
  ROOT r = f32[64]{0} reduce(b.0, b.1), dimensions={1}, to_apply=add
}
ENTRY main {
  p0 = f32[64,64]{1,0} parameter(0)
  zero = f32[] constant(0)
  fusion.1 = f32[64,64]{1,0} fusion(p0), kind=kLoop, calls=fused_transpose
  fusion.2 = f32[64]{0} fusion(p0, zero), kind=kInput, calls=fused_reduce
  ROOT t = (f32[64,64]{1,0}, f32[64]{0}) tuple(fusion.1, fusion.2)
}
)");
  const std::string before = printModule(*module);
  MultiOutputFusion pass;
  PassContext context;
  EXPECT_FALSE(runPass(pass, *module, context)) << reasons(context) << printModule(*module);
  EXPECT_EQ(printModule(*module), before);
  EXPECT_TRUE(hasReason(context,
                        "not merging fusion.1 and fusion.2: fusion.1 contains t.0; a transpose feeding a "
                        "reduction"))
      << reasons(context);
}

TEST(MultiOutputFusionTest, ProducerReachingTheReductionAnotherWayStaysOutside) {
  auto module = parseOrFail(R"(
HloModule cycle
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_reduce {
  b.0 = f32[16,128]{1,0} parameter(0)
  b.1 = f32[16,128]{1,0} parameter(1)
  b.2 = f32[] parameter(2)
  sum = f32[16,128]{1,0} add(b.0, b.1)
  ROOT r = f32[16]{0} reduce(sum, b.2), dimensions={1}, to_apply=add
}
ENTRY main {
  p0 = f32[16,128]{1,0} parameter(0)
  zero = f32[] constant(0)
  exp.1 = f32[16,128]{1,0} exponential(p0)
  copy.2 = f32[16,128]{1,0} copy(exp.1)
  ROOT fusion.3 = f32[16]{0} fusion(exp.1, copy.2, zero), kind=kInput, calls=fused_reduce
}
)");
  const std::string before = printModule(*module);
  MultiOutputFusion pass;
  PassContext context;
  EXPECT_FALSE(runPass(pass, *module, context));
  EXPECT_EQ(printModule(*module), before);
  EXPECT_TRUE(hasReason(context, "not fusing exp.1 into fusion.3: fusion.3 also depends on exp.1 through another path"))
      << reasons(context);
}

TEST(MultiOutputFusionTest, OperandLimitIsRespected) {
  auto module = parseOrFail(R"(
HloModule limits
fused_a {
  a.0 = f32[64]{0} parameter(0)
  a.1 = f32[64]{0} parameter(1)
  ROOT r.a = f32[64]{0} add(a.0, a.1)
}
fused_b {
  b.0 = f32[64]{0} parameter(0)
  b.1 = f32[64]{0} parameter(1)
  ROOT r.b = f32[64]{0} multiply(b.0, b.1)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  p1 = f32[64]{0} parameter(1)
  p2 = f32[64]{0} parameter(2)
  fusion.1 = f32[64]{0} fusion(p0, p1), kind=kLoop, calls=fused_a
  fusion.2 = f32[64]{0} fusion(p0, p2), kind=kLoop, calls=fused_b
  ROOT t = (f32[64]{0}, f32[64]{0}) tuple(fusion.1, fusion.2)
}
)");
  MultiOutputFusion pass;
  PassContext context;
  context.mutableFusionConfig().maxOperands = 2;
  EXPECT_FALSE(runPass(pass, *module, context));
  EXPECT_TRUE(
      hasReason(context, "not merging fusion.1 and fusion.2: the merged fusion would have 3 operands (limit 2)"))
      << reasons(context);
}

// However big the computation (here past the 4,096 instructions where candidates were once taken window by
// window), candidates go largest first: the pair at the end that saves more merges before the one at the start.
TEST(MultiOutputFusionTest, BigComputationsMergeLargestFirst) {
  std::string text =
      "HloModule windows\nENTRY main {\n  p_small = f32[64]{0} parameter(0)\n"
      "  q = f32[2]{0} parameter(1)\n  p_big = f32[4096]{0} parameter(2)\n"
      "  n.a = f32[64]{0} negate(p_small)\n  n.b = f32[64]{0} abs(p_small)\n  x.0 = f32[2]{0} negate(q)\n";
  constexpr int kChain = 4200;
  for (int i = 1; i <= kChain; ++i) text += fmt::format("  x.{} = f32[2]{{0}} negate(x.{})\n", i, i - 1);
  text += "  m.a = f32[4096]{0} negate(p_big)\n  m.b = f32[4096]{0} abs(p_big)\n";
  text += fmt::format(
      "  ROOT t = (f32[64]{{0}}, f32[64]{{0}}, f32[2]{{0}}, f32[4096]{{0}}, f32[4096]{{0}}) tuple(n.a, n.b, x.{}, m.a, "
      "m.b)\n}}\n",
      kChain);
  auto module = parseOrFail(text);
  MultiOutputFusion pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  std::vector<std::string> merged;
  for (const FusionDecision& decision : context.decisions()) {
    if (decision.fused) merged.push_back(decision.reason);
  }
  ASSERT_EQ(merged.size(), 2u) << reasons(context);
  EXPECT_NE(merged[0].find("merged m.a and m.b"), std::string::npos) << merged[0];
  EXPECT_NE(merged[1].find("merged n.a and n.b"), std::string::npos) << merged[1];
  EXPECT_TRUE(verifyModule(*module).ok()) << verifyModule(*module).message();
}

TEST(MultiOutputFusionTest, PairSavingMoreBytesGoesFirst) {
  // fusion.1 shares the small p_small with fusion.2 and the big p_big with fusion.3; the instruction limit
  // leaves room for one merge only, so it must be the one that saves more.
  auto module = parseOrFail(R"(
HloModule priority
fused_1 {
  a.0 = f32[64]{0} parameter(0)
  a.1 = f32[4096]{0} parameter(1)
  s.1 = f32[64]{0} slice(a.1), slice={[0:64]}
  ROOT r.1 = f32[64]{0} add(a.0, s.1)
}
fused_2 {
  b.0 = f32[64]{0} parameter(0)
  ROOT r.2 = f32[64]{0} negate(b.0)
}
fused_3 {
  c.0 = f32[4096]{0} parameter(0)
  s.3 = f32[64]{0} slice(c.0), slice={[64:128]}
  ROOT r.3 = f32[64]{0} abs(s.3)
}
ENTRY main {
  p_small = f32[64]{0} parameter(0)
  p_big = f32[4096]{0} parameter(1)
  fusion.1 = f32[64]{0} fusion(p_small, p_big), kind=kLoop, calls=fused_1
  fusion.2 = f32[64]{0} fusion(p_small), kind=kLoop, calls=fused_2
  fusion.3 = f32[64]{0} fusion(p_big), kind=kLoop, calls=fused_3
  ROOT t = (f32[64]{0}, f32[64]{0}, f32[64]{0}) tuple(fusion.1, fusion.2, fusion.3)
}
)");
  MultiOutputFusion pass;
  PassContext context;
  context.mutableFusionConfig().maxFusedInstructions = 4;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  EXPECT_EQ(entryInstruction(*module, "fusion.3"), nullptr) << printModule(*module);
  ASSERT_NE(entryInstruction(*module, "fusion.2"), nullptr) << printModule(*module);
  const FusionDecision* decision = firstFused(context);
  ASSERT_NE(decision, nullptr);
  EXPECT_NE(decision->reason.find("merged fusion.1 and fusion.3"), std::string::npos) << decision->reason;
  EXPECT_TRUE(hasReason(context, "would have 5 instructions (limit 4)")) << reasons(context);
}

TEST(MultiOutputFusionTest, UnfusedElementwiseSiblingsAreWrapped) {
  auto module = parseOrFail(R"(
HloModule unfused
ENTRY main {
  p0 = f32[128]{0} parameter(0)
  p1 = f32[128]{0} parameter(1)
  a = f32[128]{0} exponential(p0)
  b = f32[128]{0} add(p0, p1)
  ROOT t = (f32[128]{0}, f32[128]{0}) tuple(a, b)
}
)");
  MultiOutputFusion pass;
  ASSERT_TRUE(runPass(pass, *module));
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 1u) << printModule(*module);
  EXPECT_EQ(fusions.front()->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(fusedOpcodes(*fusions.front()), (Opcodes{"add", "exponential", "tuple"}));
}

// --- The corpus cases, with the outcome XLA's own tests expect (SOURCES.md). ---

std::filesystem::path corpusFile(const std::string& name) {
  return testing::corpusDir() / "hlo" / name;
}

// fusion.1 and fusion.2 share two operands, so they merge first: fusion.2 is deleted and the unfused reduce r,
// which read it, now reads a get-tuple-element of fusion.1. When the pair (r, neg) is taken in the same round,
// r must be seen as reducing that f32[32,64] (before the fix, its cached iteration space still pointed at the
// deleted fusion.2's shape: a use after free under ASan).
TEST(MultiOutputFusionTest, ReduceOfAFusionThatMergedStillSeesItsInputShape) {
  auto module = parseOrFail(R"(
HloModule reduce_of_merged
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_add {
  a.0 = f32[32,64]{1,0} parameter(0)
  a.1 = f32[32,64]{1,0} parameter(1)
  ROOT add.0 = f32[32,64]{1,0} add(a.0, a.1)
}
fused_sub {
  b.0 = f32[32,64]{1,0} parameter(0)
  b.1 = f32[32,64]{1,0} parameter(1)
  ROOT sub.0 = f32[32,64]{1,0} subtract(b.0, b.1)
}
ENTRY main {
  p0 = f32[32,64]{1,0} parameter(0)
  p1 = f32[32,64]{1,0} parameter(1)
  zero = f32[] constant(0)
  fusion.1 = f32[32,64]{1,0} fusion(p0, p1), kind=kLoop, calls=fused_add
  fusion.2 = f32[32,64]{1,0} fusion(p0, p1), kind=kLoop, calls=fused_sub
  r = f32[32]{0} reduce(fusion.2, zero), dimensions={1}, to_apply=add
  neg = f32[32,64]{1,0} negate(fusion.2)
  ROOT t = (f32[32,64]{1,0}, f32[32]{0}, f32[32,64]{1,0}) tuple(fusion.1, r, neg)
}
)");
  MultiOutputFusion pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  EXPECT_FALSE(hasReason(context, "is not the shape")) << reasons(context);
  EXPECT_TRUE(hasReason(context, "merged r and neg")) << reasons(context) << printModule(*module);
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 2u) << printModule(*module);
  EXPECT_TRUE(verifyModule(*module).ok()) << printModule(*module);
}

TEST(MultiOutputFusionCorpusTest, SiblingReduceFusionsBecomeOne) {
  auto path = corpusFile("xla_mof_MultiOutputFusionSiblingReduceFusions.hlo");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "corpus file missing: " << path;
  auto module = parseOrFail(testing::readBytes(path));
  ASSERT_NE(module, nullptr);
  MultiOutputFusion pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 1u) << printModule(*module);
  EXPECT_TRUE(isMultiOutputFusion(*fusions.front()));
  EXPECT_EQ(rootShape(*fusions.front()), "tuple(reduce,reduce)");
  EXPECT_EQ(fusions.front()->fusionKind(), FusionKind::kInput);
  EXPECT_TRUE(hasReason(context, "merged fusion.1 and fusion.2 into one multi-output fusion")) << reasons(context);
}

TEST(MultiOutputFusionCorpusTest, ElementwiseAndReduceBecomeOneFusion) {
  auto path = corpusFile("xla_mof_ProducerConsumerFusionElementwiseAndReduce.hlo");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "corpus file missing: " << path;
  auto module = parseOrFail(testing::readBytes(path));
  ASSERT_NE(module, nullptr);
  MultiOutputFusion pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 1u) << printModule(*module);
  EXPECT_EQ(rootShape(*fusions.front()), "tuple(reduce,exponential)");
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kTuple);
  ASSERT_EQ(root->operandCount(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(root->operand(i)->opcode(), HloOpcode::kGetTupleElement);
    EXPECT_EQ(root->operand(i)->operand(0), fusions.front());
    EXPECT_EQ(*root->operand(i)->attributes().tupleIndex, i);
  }
}

// --- Every sample and corpus module: still valid, and a second run is a no-op. ---

class MultiOutputFusionModuleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MultiOutputFusionModuleTest, VerifiesAndReachesAFixedPoint) {
  auto parsed = parseHloModuleFile(GetParam());
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  HloModule& module = **parsed;
  MultiOutputFusion pass;
  PassContext context;
  runPass(pass, module, context);  // verifies
  for (const FusionDecision& decision : context.decisions()) EXPECT_FALSE(decision.reason.empty());
  const std::string once = printModule(module);
  PassContext again;
  EXPECT_FALSE(runPass(pass, module, again)) << GetParam();
  EXPECT_EQ(printModule(module), once);
}

INSTANTIATE_TEST_SUITE_P(AllModules, MultiOutputFusionModuleTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MultiOutputFusionModuleTest);

}  // namespace
}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

// An argmax (a variadic reduce: value and index, a tuple) beside a sum over the same rows: the sum is not merged with
// it, since a kernel takes a tuple-shaped output only as its one output (the gpu preset used to build
// ((f32[8], s32[8]), f32[8]) here, which no kernel could run).
TEST(MultiOutputFusionTest, AVariadicReduceIsNotASibling) {
  auto module = testing::parseOrFail(R"(
HloModule argmax_and_sum

argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  v = f32[] select(gt, v0, v1)
  i = s32[] select(gt, i0, i1)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_argmax {
  p = f32[8,64]{1,0} parameter(0)
  iota = s32[8,64]{1,0} iota(), iota_dimension=1
  lowest = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[8]{0}, s32[8]{0}) reduce(p, iota, lowest, zero), dimensions={1}, to_apply=argmax
}
fused_sum {
  q = f32[8,64]{1,0} parameter(0)
  e = f32[8,64]{1,0} exponential(q)
  z = f32[] constant(0)
  ROOT s = f32[8]{0} reduce(e, z), dimensions={1}, to_apply=add
}
ENTRY main {
  x = f32[8,64]{1,0} parameter(0)
  m = (f32[8]{0}, s32[8]{0}) fusion(x), kind=kInput, calls=fused_argmax
  s = f32[8]{0} fusion(x), kind=kInput, calls=fused_sum
  ROOT t = ((f32[8]{0}, s32[8]{0}), f32[8]{0}) tuple(m, s)
}
)");
  ASSERT_NE(module, nullptr);
  MultiOutputFusion pass;
  PassContext context(fusionConfigFor(Backend::kGpu));
  testing::runPass(pass, *module, context);
  EXPECT_EQ(testing::entryFusions(*module).size(), 2u) << printModule(*module);
  bool refused = false;
  for (const FusionDecision& decision : context.decisions()) {
    refused |= decision.reason.find("m produces a tuple (r is a variadic reduce)") != std::string::npos;
  }
  EXPECT_TRUE(refused);
}

}  // namespace
}  // namespace fusionscope::core
