#include "core/passes/fusion_merger.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

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

std::string reasons(const PassContext& context) {
  std::string text;
  for (const FusionDecision& decision : context.decisions()) text += decision.reason + "\n";
  return text;
}

bool hasReason(const PassContext& context, const std::string& part) {
  return std::any_of(context.decisions().begin(), context.decisions().end(),
                     [&](const FusionDecision& d) { return d.reason.find(part) != std::string::npos; });
}

// Runs the pass expecting no change: returns the decisions, checks the text stayed the same.
PassContext expectUnchanged(HloModule& module, FusionConfig config = {}) {
  const std::string before = printModule(module);
  FusionMerger pass;
  PassContext context(config);
  EXPECT_FALSE(runPass(pass, module, context)) << reasons(context) << printModule(module);
  EXPECT_EQ(printModule(module), before);
  return context;
}

TEST(FusionMergerTest, LoopFusionMergesIntoItsOnlyUser) {
  auto module = parseOrFail(R"(
HloModule single
fused_neg {
  a.0 = f32[64]{0} parameter(0)
  ROOT neg.0 = f32[64]{0} negate(a.0)
}
fused_add {
  b.0 = f32[64]{0} parameter(0)
  b.1 = f32[64]{0} parameter(1)
  ROOT add.0 = f32[64]{0} add(b.0, b.1)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  p1 = f32[64]{0} parameter(1)
  fusion.1 = f32[64]{0} fusion(p0), kind=kLoop, calls=fused_neg
  ROOT fusion.2 = f32[64]{0} fusion(fusion.1, p1), kind=kLoop, calls=fused_add
}
)");
  FusionMerger pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  EXPECT_EQ(entryInstruction(*module, "fusion.1"), nullptr) << printModule(*module);
  HloInstruction* fusion = entryInstruction(*module, "fusion.2");
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(module->entry()->root(), fusion);
  EXPECT_EQ(fusion->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(fusedOpcodes(*fusion), (Opcodes{"add", "negate"}));
  EXPECT_EQ(fusion->operandCount(), 2);  // p1, p0
  EXPECT_EQ(module->fusionCount(), 1);
  ASSERT_FALSE(context.decisions().empty());
  const FusionDecision& decision = context.decisions().front();
  EXPECT_TRUE(decision.fused);
  EXPECT_EQ(decision.pass, "fusion-merger");
  EXPECT_EQ(decision.producer, "fusion.1");
  EXPECT_EQ(decision.consumer, "fusion.2");
  // 256 B read + 256 B written by fusion.1, 256 B read back by fusion.2; fusion.2 now reads p0 (256 B).
  EXPECT_EQ(decision.bytesSaved, 512);
  EXPECT_EQ(decision.reason, "merged fusion.1 into its only user (fusion.2): saves 512 B of memory traffic");
}

constexpr std::string_view kTwoUsers = R"(
HloModule two_users
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_neg {
  a.0 = f32[64]{0} parameter(0)
  ROOT neg.0 = f32[64]{0} negate(a.0)
}
fused_add {
  b.0 = f32[64]{0} parameter(0)
  b.1 = f32[64]{0} parameter(1)
  ROOT add.0 = f32[64]{0} add(b.0, b.1)
}
fused_reduce {
  c.0 = f32[64]{0} parameter(0)
  c.1 = f32[] parameter(1)
  ROOT r.0 = f32[] reduce(c.0, c.1), dimensions={0}, to_apply=add
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  p1 = f32[64]{0} parameter(1)
  zero = f32[] constant(0)
  fusion.1 = f32[64]{0} fusion(p0), kind=kLoop, calls=fused_neg
  fusion.2 = f32[64]{0} fusion(fusion.1, p1), kind=kLoop, calls=fused_add
  fusion.3 = f32[] fusion(fusion.1, zero), kind=kInput, calls=fused_reduce
  ROOT t = (f32[64]{0}, f32[]) tuple(fusion.2, fusion.3)
}
)";

TEST(FusionMergerTest, LoopFusionMergesIntoAllItsUsers) {
  auto module = parseOrFail(kTwoUsers);
  FusionMerger pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  EXPECT_EQ(entryInstruction(*module, "fusion.1"), nullptr) << printModule(*module);
  EXPECT_EQ(fusedOpcodes(*entryInstruction(*module, "fusion.2")), (Opcodes{"add", "negate"}));
  EXPECT_EQ(fusedOpcodes(*entryInstruction(*module, "fusion.3")), (Opcodes{"negate", "reduce"}));
  EXPECT_EQ(entryInstruction(*module, "fusion.3")->fusionKind(), FusionKind::kInput);
  EXPECT_EQ(entryFusions(*module).size(), 2u);
  EXPECT_TRUE(hasReason(context, "merged fusion.1 into all 2 users (fusion.2, fusion.3)")) << reasons(context);
}

TEST(FusionMergerTest, SecondRunChangesNothing) {
  auto module = parseOrFail(kTwoUsers);
  FusionMerger pass;
  ASSERT_TRUE(runPass(pass, *module));
  expectUnchanged(*module);
}

TEST(FusionMergerTest, ChainCollapsesInOneRun) {
  auto module = parseOrFail(R"(
HloModule chain
fused_1 {
  a.0 = f32[64]{0} parameter(0)
  ROOT neg.1 = f32[64]{0} negate(a.0)
}
fused_2 {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.2 = f32[64]{0} abs(b.0)
}
fused_3 {
  c.0 = f32[64]{0} parameter(0)
  c.1 = f32[64]{0} parameter(1)
  ROOT add.3 = f32[64]{0} add(c.0, c.1)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  fusion.1 = f32[64]{0} fusion(p0), kind=kLoop, calls=fused_1
  fusion.2 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_2
  ROOT fusion.3 = f32[64]{0} fusion(fusion.2, p0), kind=kLoop, calls=fused_3
}
)");
  FusionMerger pass;
  PassContext context;
  ASSERT_TRUE(runPass(pass, *module, context)) << reasons(context);
  auto fusions = entryFusions(*module);
  ASSERT_EQ(fusions.size(), 1u) << printModule(*module);
  EXPECT_EQ(fusions.front()->name(), "fusion.3");
  EXPECT_EQ(fusedOpcodes(*fusions.front()), (Opcodes{"abs", "add", "negate"}));
  EXPECT_EQ(fusions.front()->operandCount(), 1);  // p0, read once
  expectUnchanged(*module);
}

TEST(FusionMergerTest, UserThatIsNotAFusionKeepsTheProducer) {
  auto module = parseOrFail(R"(
HloModule tuple_user
fused_neg {
  a.0 = f32[64]{0} parameter(0)
  ROOT neg.0 = f32[64]{0} negate(a.0)
}
fused_abs {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  fusion.1 = f32[64]{0} fusion(p0), kind=kLoop, calls=fused_neg
  fusion.2 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs
  ROOT t = (f32[64]{0}, f32[64]{0}) tuple(fusion.1, fusion.2)
}
)");
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context, "not merging fusion.1: its user t is not a fusion")) << reasons(context);
  EXPECT_TRUE(hasReason(context, "not merging fusion.2: its user t is not a fusion")) << reasons(context);
}

TEST(FusionMergerTest, OutputFusionUserIsRefused) {
  auto module = parseOrFail(R"(
HloModule output_user
fused_neg {
  a.0 = f32[8,8]{1,0} parameter(0)
  ROOT neg.0 = f32[8,8]{1,0} negate(a.0)
}
fused_dot {
  d.0 = f32[8,8]{1,0} parameter(0)
  d.1 = f32[8,8]{1,0} parameter(1)
  dot.0 = f32[8,8]{1,0} dot(d.0, d.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT add.0 = f32[8,8]{1,0} add(dot.0, d.1)
}
ENTRY main {
  p0 = f32[8,8]{1,0} parameter(0)
  p1 = f32[8,8]{1,0} parameter(1)
  fusion.1 = f32[8,8]{1,0} fusion(p0), kind=kLoop, calls=fused_neg
  ROOT fusion.2 = f32[8,8]{1,0} fusion(fusion.1, p1), kind=kOutput, calls=fused_dot
}
)");
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context, "not merging fusion.1 into fusion.2: it is a kOutput fusion")) << reasons(context);
}

// A producer that slices a big input: each user would read the whole input instead of 64 bytes.
// `fusion` refuses a transpose into a reduction (pairRule); the merger asks the same rule and refuses it too.
TEST(FusionMergerTest, TransposeIsNotMergedIntoAReduction) {
  auto module = parseOrFail(R"(
HloModule transpose_into_reduce
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused_transpose {
  a.0 = f32[64,64]{1,0} parameter(0)
  t.0 = f32[64,64]{1,0} transpose(a.0), dimensions={1,0}
  ROOT n.0 = f32[64,64]{1,0} negate(t.0)
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
  ROOT fusion.2 = f32[64]{0} fusion(fusion.1, zero), kind=kInput, calls=fused_reduce
}
)");
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context,
                        "not merging fusion.1 into fusion.2: fusion.1 contains t.0; a transpose feeding a "
                        "reduction makes the reduction read memory out of order"))
      << reasons(context);
}

TEST(FusionMergerTest, MergeThatWouldIncreaseTrafficIsRefused) {
  auto module = parseOrFail(R"(
HloModule traffic
fused_slice {
  a.0 = f32[100000]{0} parameter(0)
  ROOT s.0 = f32[16]{0} slice(a.0), slice={[0:16]}
}
fused_add {
  b.0 = f32[16]{0} parameter(0)
  b.1 = f32[16]{0} parameter(1)
  ROOT add.0 = f32[16]{0} add(b.0, b.1)
}
fused_add.1 {
  b.0 = f32[16]{0} parameter(0)
  b.1 = f32[16]{0} parameter(1)
  ROOT add.0 = f32[16]{0} add(b.0, b.1)
}
fused_add.2 {
  b.0 = f32[16]{0} parameter(0)
  b.1 = f32[16]{0} parameter(1)
  ROOT add.0 = f32[16]{0} add(b.0, b.1)
}
ENTRY main {
  p0 = f32[100000]{0} parameter(0)
  p1 = f32[16]{0} parameter(1)
  p2 = f32[16]{0} parameter(2)
  p3 = f32[16]{0} parameter(3)
  fusion.1 = f32[16]{0} fusion(p0), kind=kLoop, calls=fused_slice
  fusion.2 = f32[16]{0} fusion(fusion.1, p1), kind=kLoop, calls=fused_add
  fusion.3 = f32[16]{0} fusion(fusion.1, p2), kind=kLoop, calls=fused_add.1
  fusion.4 = f32[16]{0} fusion(fusion.1, p3), kind=kLoop, calls=fused_add.2
  ROOT t = (f32[16]{0}, f32[16]{0}, f32[16]{0}) tuple(fusion.2, fusion.3, fusion.4)
}
)");
  PassContext context = expectUnchanged(*module);
  // Saved 400 KB + 4 x 64 B, added 3 x 400 KB.
  EXPECT_TRUE(hasReason(context, "not merging fusion.1: merging would increase memory traffic by 800 KB"))
      << reasons(context);
}

TEST(FusionMergerTest, OutputReusedByManyConsumersIsRefused) {
  auto module = parseOrFail(R"(
HloModule many_users
fused_neg {
  a.0 = f32[64]{0} parameter(0)
  ROOT neg.0 = f32[64]{0} negate(a.0)
}
fused_abs {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
fused_abs.1 {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
fused_abs.2 {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
fused_abs.3 {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
fused_abs.4 {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  fusion.1 = f32[64]{0} fusion(p0), kind=kLoop, calls=fused_neg
  u.1 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs
  u.2 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs.1
  u.3 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs.2
  u.4 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs.3
  u.5 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs.4
  ROOT t = (f32[64]{0}, f32[64]{0}, f32[64]{0}, f32[64]{0}, f32[64]{0}) tuple(u.1, u.2, u.3, u.4, u.5)
}
)");
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context, "not merging fusion.1: its output is reused by 5 consumers")) << reasons(context);
}

TEST(FusionMergerTest, ExpensiveProducerWithSeveralUsersIsRefused) {
  auto module = parseOrFail(R"(
HloModule expensive_users
fused_exp {
  a.0 = f32[64]{0} parameter(0)
  ROOT exp.0 = f32[64]{0} exponential(a.0)
}
fused_abs {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
fused_abs.1 {
  b.0 = f32[64]{0} parameter(0)
  ROOT abs.0 = f32[64]{0} abs(b.0)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  fusion.1 = f32[64]{0} fusion(p0), kind=kLoop, calls=fused_exp
  fusion.2 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs
  fusion.3 = f32[64]{0} fusion(fusion.1), kind=kLoop, calls=fused_abs.1
  ROOT t = (f32[64]{0}, f32[64]{0}) tuple(fusion.2, fusion.3)
}
)");
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context, "not merging fusion.1: it contains expensive exp.0 and has 2 users"))
      << reasons(context);
}

TEST(FusionMergerTest, ExpensiveProducerReadManyTimesByItsUserIsRefused) {
  auto module = parseOrFail(R"(
HloModule reread
fused_exp {
  a.0 = f32[8]{0} parameter(0)
  ROOT exp.0 = f32[8]{0} exponential(a.0)
}
fused_broadcast_add {
  b.0 = f32[8]{0} parameter(0)
  b.1 = f32[100,8]{1,0} parameter(1)
  bc = f32[100,8]{1,0} broadcast(b.0), dimensions={1}
  ROOT add.0 = f32[100,8]{1,0} add(bc, b.1)
}
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  p1 = f32[100,8]{1,0} parameter(1)
  fusion.1 = f32[8]{0} fusion(p0), kind=kLoop, calls=fused_exp
  ROOT fusion.2 = f32[100,8]{1,0} fusion(fusion.1, p1), kind=kLoop, calls=fused_broadcast_add
}
)");
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context,
                        "not merging fusion.1 into fusion.2: fusion.2 reads each element of its output 100 "
                        "times, so exp.0 would be recomputed for every read"))
      << reasons(context);
}

TEST(FusionMergerTest, OperandLimitIsRespected) {
  auto module = parseOrFail(R"(
HloModule limits
fused_add {
  a.0 = f32[64]{0} parameter(0)
  a.1 = f32[64]{0} parameter(1)
  ROOT add.0 = f32[64]{0} add(a.0, a.1)
}
fused_mul {
  b.0 = f32[64]{0} parameter(0)
  b.1 = f32[64]{0} parameter(1)
  ROOT mul.0 = f32[64]{0} multiply(b.0, b.1)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  p1 = f32[64]{0} parameter(1)
  p2 = f32[64]{0} parameter(2)
  fusion.1 = f32[64]{0} fusion(p0, p1), kind=kLoop, calls=fused_add
  ROOT fusion.2 = f32[64]{0} fusion(fusion.1, p2), kind=kLoop, calls=fused_mul
}
)");
  FusionConfig config;
  config.maxOperands = 2;
  PassContext context = expectUnchanged(*module, config);
  EXPECT_TRUE(
      hasReason(context, "not merging fusion.1 into fusion.2: the merged fusion would have 3 operands (limit 2)"))
      << reasons(context);
}

TEST(FusionMergerTest, MultiOutputProducerIsLeftAlone) {
  auto module = parseOrFail(R"(
HloModule mof_producer
fused_two {
  a.0 = f32[64]{0} parameter(0)
  n.0 = f32[64]{0} negate(a.0)
  e.0 = f32[64]{0} abs(a.0)
  ROOT t.0 = (f32[64]{0}, f32[64]{0}) tuple(n.0, e.0)
}
fused_add {
  b.0 = f32[64]{0} parameter(0)
  b.1 = f32[64]{0} parameter(1)
  ROOT add.0 = f32[64]{0} add(b.0, b.1)
}
ENTRY main {
  p0 = f32[64]{0} parameter(0)
  fusion.1 = (f32[64]{0}, f32[64]{0}) fusion(p0), kind=kLoop, calls=fused_two
  g0 = f32[64]{0} get-tuple-element(fusion.1), index=0
  g1 = f32[64]{0} get-tuple-element(fusion.1), index=1
  ROOT fusion.2 = f32[64]{0} fusion(g0, g1), kind=kLoop, calls=fused_add
}
)");
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context, "not merging fusion.1: it is a multi-output fusion")) << reasons(context);
}

TEST(FusionMergerCorpusTest, CostBasedNoMerge) {
  auto path = testing::corpusDir() / "hlo" / "xla_merger_CostBasedNoMerge.hlo";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "corpus file missing: " << path;
  auto module = parseOrFail(testing::readBytes(path));
  ASSERT_NE(module, nullptr);
  // XLA: pass returns false, fusion.59 re-reads the outputs of fusion.66 and fusion.67 heavily. Both are reductions
  // (marked kLoop): a fusion is what its hero makes it, so merging them would compute a reduction per element read.
  PassContext context = expectUnchanged(*module);
  EXPECT_TRUE(hasReason(context, "not merging fusion.66 into fusion.59: fusion.59 already has a reduction or dot as "
                                 "its hero; a fusion has one at most"))
      << reasons(context);
  EXPECT_TRUE(hasReason(context, "not merging fusion.67 into fusion.59: fusion.59 already has a reduction or dot as "
                                 "its hero; a fusion has one at most"))
      << reasons(context);
  EXPECT_TRUE(hasReason(context, "not merging fusion.59: its result is the output of e")) << reasons(context);
}

class FusionMergerModuleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FusionMergerModuleTest, VerifiesAndReachesAFixedPoint) {
  auto parsed = parseHloModuleFile(GetParam());
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  HloModule& module = **parsed;
  FusionMerger pass;
  PassContext context;
  runPass(pass, module, context);  // verifies
  for (const FusionDecision& decision : context.decisions()) EXPECT_FALSE(decision.reason.empty());
  const std::string once = printModule(module);
  PassContext again;
  EXPECT_FALSE(runPass(pass, module, again)) << GetParam();
  EXPECT_EQ(printModule(module), once);
}

INSTANTIATE_TEST_SUITE_P(AllModules, FusionMergerModuleTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FusionMergerModuleTest);

}  // namespace
}  // namespace fusionscope::core
