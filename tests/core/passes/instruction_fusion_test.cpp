#include "core/passes/instruction_fusion.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/passes/fusion_rules.h"
#include "core/passes/fusion_utils.h"
#include "core/passes/merge_tracking.h"
#include "core/text/hlo_printer.h"
#include "tests/core/passes/fusion_testing.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryFusions;
using testing::entryInstruction;
using testing::fusedOpcodes;
using testing::parseOrFail;

#define ASSERT_MODULE(f) ASSERT_NE((f).module, nullptr)

// ---- kLoop -----------------------------------------------------------------------------------------------

TEST(InstructionFusionTest, ElementwiseChainBecomesOneLoopFusion) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[1000]{0} parameter(0)
  p1 = f32[1000]{0} parameter(1)
  exp.1 = f32[1000]{0} exponential(p0)
  add.2 = f32[1000]{0} add(exp.1, p1)
  ROOT neg.3 = f32[1000]{0} negate(add.2)
}
)");
  ASSERT_MODULE(f);
  EXPECT_TRUE(f.changed);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->name(), "fusion");
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "exponential", "negate"}));
  EXPECT_EQ(f.module->entry()->instructionCount(), 3) << f.text();  // p0, p1, fusion
}

// A chain where every value has two users (p[i] = p[i-1] + p[i-2]): each consumer fusion could copy hundreds of
// its ancestors. 16k adds became 259k instructions; copies now stop at 4 times what the computation held.
TEST(InstructionFusionTest, DuplicationIsBoundedInAComputation) {
  std::string text = "HloModule dag\nENTRY main {\n  p0 = f32[4] parameter(0)\n";
  const int n = 8000;
  for (int i = 1; i <= n; ++i) {
    text += "  p" + std::to_string(i) + " = f32[4] add(p" + std::to_string(i - 1) + ", p" +
            std::to_string(std::max(0, i - 2)) + ")\n";
  }
  text += "  ROOT r = f32[4] negate(p" + std::to_string(n) + ")\n}\n";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  const int64_t before = module->entry()->instructionCount();
  InstructionFusion pass;
  PassContext context(fusionConfigFor(Backend::kGpu));
  EXPECT_TRUE(testing::runPass(pass, *module, context));
  int64_t after = 0;
  for (const auto& computation : module->computations()) {
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() != HloOpcode::kParameter && inst->opcode() != HloOpcode::kFusion) ++after;
    }
  }
  EXPECT_LE(after, 5 * before);
  bool told = false;
  for (const FusionDecision& d : context.decisions()) {
    told |= d.reason.find("copies no more") != std::string::npos;
  }
  EXPECT_TRUE(told) << "a refusal says why";
}

TEST(InstructionFusionTest, FusedDecisionCarriesKindBytesAndReason) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[1000]{0} parameter(0)
  exp.1 = f32[1000]{0} exponential(p0)
  ROOT neg.2 = f32[1000]{0} negate(exp.1)
}
)");
  ASSERT_MODULE(f);
  const FusionDecision* d = f.decision("exp.1", "neg.2");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_TRUE(d->fused);
  EXPECT_EQ(d->pass, "fusion");
  EXPECT_EQ(d->computation, "main");
  EXPECT_EQ(d->fusion, "fusion");
  EXPECT_EQ(d->kind, FusionKind::kLoop);
  // exp.1 is written (4 KB) and read back (4 KB); p0 is read either way.
  EXPECT_EQ(d->bytesSaved, 8000);
  EXPECT_EQ(d->reason, "fused exp.1 into neg.2 (kLoop): saves 8 KB of reads and writes");
}

TEST(InstructionFusionTest, DataMovementOpsFuseAsLoop) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[32,64]{1,0} parameter(0)
  t = f32[64,32]{1,0} transpose(p0), dimensions={1,0}
  r = f32[2048]{0} reshape(t)
  s = f32[1024]{0} slice(r), slice={[0:1024]}
  ROOT n = f32[1024]{0} negate(s)
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"negate", "reshape", "slice", "transpose"}));
}

TEST(InstructionFusionTest, BitcastConsumerDoesNotStartAFusion) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[8,8]{1,0} parameter(0)
  p1 = f32[8,8]{1,0} parameter(1)
  a = f32[8,8]{1,0} add(p0, p1)
  ROOT b = f32[64]{0} bitcast(a)
}
)");
  ASSERT_MODULE(f);
  // A bitcast only renames a buffer: there is no kernel to fuse the add into.
  EXPECT_FALSE(f.changed) << f.text();
  EXPECT_TRUE(f.context.decisions().empty()) << f.reasons();
}

TEST(InstructionFusionTest, ConsumersAreVisitedFromTheRootUpward) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  a = f32[100]{0} negate(p0)
  b = f32[100]{0} abs(a)
  c = f32[100]{0} bitcast(b)
  d = f32[100]{0} sqrt(c)
  ROOT e = f32[100]{0} exponential(d)
}
)");
  ASSERT_MODULE(f);
  // The root takes d; the bitcast c then joins (free), and through it b and a: one fusion named `fusion`.
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->name(), "fusion");
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"abs", "bitcast", "exponential", "negate", "sqrt"}));
  ASSERT_GE(f.context.decisions().size(), 1u);
  EXPECT_EQ(f.context.decisions().front().producer, "d");
}

// ---- kInput ----------------------------------------------------------------------------------------------

TEST(InstructionFusionTest, ReductionTakesElementwiseProducersAsInputFusion) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[100,1000]{1,0} parameter(0)
  exponential.1 = f32[100,1000]{1,0} exponential(p0)
  c = f32[] constant(0)
  ROOT reduce.3 = f32[100]{0} reduce(exponential.1, c), dimensions={1}, to_apply=add
}
)"));
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kInput);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"constant", "exponential", "reduce"}));
  const FusionDecision* d = f.decision("exponential.1");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->reason, "fused exponential.1 into reduce.3 (kInput): saves 800 KB of reads and writes");
  // The reducer is called, never fused into.
  EXPECT_EQ(f.module->findComputation("add")->instructionCount(), 3);
}

TEST(InstructionFusionTest, ReductionEpilogueTakesConvertAndDivideByConstant) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,512]{1,0} parameter(0)
  c = f32[] constant(0)
  r = f32[64]{0} reduce(p0, c), dimensions={1}, to_apply=add
  n = f32[] constant(512)
  nb = f32[64]{0} broadcast(n), dimensions={}
  mean = f32[64]{0} divide(r, nb)
  ROOT out = f16[64]{0} convert(mean)
}
)"));
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kInput);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"broadcast", "constant", "constant", "convert", "divide", "reduce"}));
  EXPECT_EQ(entryFusions(*f.module).size(), 1u);
}

TEST(InstructionFusionTest, ReductionEpilogueRefusedWhenItReadsAnotherTensor) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,512]{1,0} parameter(0)
  p1 = f32[64]{0} parameter(1)
  c = f32[] constant(0)
  r = f32[64]{0} reduce(p0, c), dimensions={1}, to_apply=add
  ROOT a = f32[64]{0} add(r, p1)
}
)"));
  ASSERT_MODULE(f);
  EXPECT_FALSE(f.changed) << f.text();
  const FusionDecision* d = f.decision("r", "a");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_FALSE(d->fused);
  EXPECT_EQ(d->reason,
            "not fusing r into a: the epilogue would also read p1; a reduction epilogue may only combine the "
            "reduction's result with constants");
}

TEST(InstructionFusionTest, ReductionEpilogueRefusedWhenReductionHasOtherUsers) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,512]{1,0} parameter(0)
  c = f32[] constant(0)
  r = f32[64]{0} reduce(p0, c), dimensions={1}, to_apply=add
  n = f32[64]{0} negate(r)
  ROOT t = (f32[64]{0}, f32[64]{0}) tuple(n, r)
}
)"));
  ASSERT_MODULE(f);
  const FusionDecision* d = f.decision("r", "n");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("a reduction's epilogue must be the only user of the reduction; r has 2 users"),
            std::string::npos)
      << d->reason;
}

TEST(InstructionFusionTest, OneReductionPerFusion) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,512]{1,0} parameter(0)
  c = f32[] constant(0)
  r1 = f32[64]{0} reduce(p0, c), dimensions={1}, to_apply=add
  ROOT r2 = f32[] reduce(r1, c), dimensions={0}, to_apply=add
}
)"));
  ASSERT_MODULE(f);
  EXPECT_FALSE(f.changed) << f.text();
  const FusionDecision* d = f.decision("r1", "r2");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("already has a reduction or dot as its hero"), std::string::npos) << d->reason;
}

TEST(InstructionFusionTest, TransposeIsNotFusedIntoAReduction) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,128]{1,0} parameter(0)
  transpose.2 = f32[128,64]{1,0} transpose(p0), dimensions={1,0}
  c = f32[] constant(0)
  ROOT reduce.5 = f32[128]{0} reduce(transpose.2, c), dimensions={1}, to_apply=add
}
)"));
  ASSERT_MODULE(f);
  EXPECT_FALSE(f.changed) << f.text();
  const FusionDecision* d = f.decision("transpose.2", "reduce.5");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_EQ(d->reason,
            "not fusing transpose.2 into reduce.5: a transpose feeding a reduction makes the reduction read memory "
            "out of order");
}

TEST(InstructionFusionTest, LayoutPreservingCopyIsFusedIntoAReduction) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,128]{1,0} parameter(0)
  copy = f32[64,128]{1,0} copy(p0)
  c = f32[] constant(0)
  ROOT r = f32[64]{0} reduce(copy, c), dimensions={1}, to_apply=add
}
)"));
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"constant", "copy", "reduce"}));
}

TEST(InstructionFusionTest, ScatterKeepsItsFirstOperandOutside) {
  Fused f = runFusion(R"(
HloModule m
add {
  lhs = s32[] parameter(0)
  rhs = s32[] parameter(1)
  ROOT add = s32[] add(lhs, rhs)
}
ENTRY main {
  p0 = s32[8]{0} parameter(0)
  operand = s32[8]{0} negate(p0)
  indices = s32[4,1]{1,0} parameter(1)
  one = s32[] constant(1)
  updates = s32[4,1]{1,0} broadcast(one), dimensions={}
  ROOT scatter = s32[8]{0} scatter(operand, indices, updates), to_apply=add, update_window_dims={1},
      inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kInput);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"broadcast", "constant", "scatter"}));
  EXPECT_EQ(f.root()->operand(0)->name(), "operand");
  const FusionDecision* d = f.decision("operand");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("updates its first operand in place"), std::string::npos) << d->reason;
}

// ---- kOutput ---------------------------------------------------------------------------------------------

constexpr std::string_view kDenseLayer = R"(
HloModule m
ENTRY main {
  x = f32[32,256]{1,0} parameter(0)
  w = f32[256,128]{1,0} parameter(1)
  b = f32[128]{0} parameter(2)
  dot.1 = f32[32,128]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bias = f32[32,128]{1,0} broadcast(b), dimensions={1}
  add.2 = f32[32,128]{1,0} add(dot.1, bias)
  zero = f32[] constant(0)
  zeros = f32[32,128]{1,0} broadcast(zero), dimensions={}
  ROOT relu = f32[32,128]{1,0} maximum(add.2, zeros)
}
)";

TEST(InstructionFusionTest, GpuOutputFusesDotWithBiasAndActivation) {
  Fused f = runFusion(kDenseLayer);
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kOutput);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "broadcast", "broadcast", "constant", "dot", "maximum"}));
  EXPECT_EQ(entryFusions(*f.module).size(), 1u);
}

TEST(InstructionFusionTest, CpuDoesNotOutputFuseAMatrixMatrixDot) {
  Fused f = runFusion(kDenseLayer, cpu());
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(f.get("dot.1")->opcode(), HloOpcode::kDot);
  const FusionDecision* d = f.decision("dot.1");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("the cpu backend output-fuses only an unbatched matrix-vector dot into an add; dot.1 is"),
            std::string::npos)
      << d->reason;
}

TEST(InstructionFusionTest, CpuOutputFusesAMatrixVectorDot) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  m = f32[256,512]{1,0} parameter(0)
  v = f32[512]{0} parameter(1)
  b = f32[256]{0} parameter(2)
  mv = f32[256]{0} dot(m, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT add = f32[256]{0} add(mv, b)
}
)",
                      cpu());
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kOutput);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "dot"}));
}

TEST(InstructionFusionTest, DotOperandsStayOutsideTheOutputFusion) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  x = f32[256,32]{1,0} parameter(0)
  w = f32[256,128]{1,0} parameter(1)
  b = f32[32,128]{1,0} parameter(2)
  xt = f32[32,256]{1,0} transpose(x), dimensions={1,0}
  dot = f32[32,128]{1,0} dot(xt, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT add = f32[32,128]{1,0} add(dot, b)
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "dot"}));
  EXPECT_EQ(f.get("xt")->opcode(), HloOpcode::kTranspose);
  const FusionDecision* d = f.decision("xt");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("dot reads its operands straight from memory"), std::string::npos) << d->reason;
}

TEST(InstructionFusionTest, OutputFusionCanBeSwitchedOff) {
  FusionConfig config = fusionConfigFor(Backend::kGpu);
  config.outputFusion = false;
  Fused f = runFusion(kDenseLayer, config);
  ASSERT_MODULE(f);
  EXPECT_EQ(f.get("dot.1")->opcode(), HloOpcode::kDot) << f.text();
  const FusionDecision* d = f.decision("dot.1");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("does not fuse epilogues into dots"), std::string::npos) << d->reason;
}

// ---- duplication and the cost model -----------------------------------------------------------------------

TEST(InstructionFusionTest, ExpensiveProducerWithSeveralUsersIsNotDuplicated) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[1000]{0} parameter(0)
  p1 = f32[1000]{0} parameter(1)
  exp.1 = f32[1000]{0} exponential(p0)
  add.2 = f32[1000]{0} add(exp.1, p1)
  mul.3 = f32[1000]{0} multiply(exp.1, p1)
  sub.4 = f32[1000]{0} subtract(exp.1, p1)
  ROOT t = (f32[1000]{0}, f32[1000]{0}, f32[1000]{0}) tuple(add.2, mul.3, sub.4)
}
)");
  ASSERT_MODULE(f);
  EXPECT_FALSE(f.changed) << f.text();
  const FusionDecision* d = f.decision("exp.1", "add.2");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_FALSE(d->fused);
  EXPECT_EQ(d->reason,
            "not fusing exp.1 into add.2: exp.1 is expensive and has 3 users; duplicating it would recompute it");
}

TEST(InstructionFusionTest, TinyExpensiveProducerIsDuplicated) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[] parameter(0)
  p1 = f32[100]{0} parameter(1)
  e = f32[] exponential(p0)
  b = f32[100]{0} broadcast(e), dimensions={}
  a = f32[100]{0} add(p1, b)
  ROOT t = (f32[100]{0}, f32[]) tuple(a, e)
}
)");
  ASSERT_MODULE(f);
  // e has one element (<= duplicateExpensiveMaxElements); the broadcast reuses it, but recomputing one
  // scalar per element of a 100-element add is refused by the reuse rule, so only the broadcast moves.
  const HloInstruction* a = f.root()->operand(0);
  ASSERT_TRUE(a->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*a), (Opcodes{"add", "broadcast"}));

  // Without the broadcast in between, a scalar exp is simply duplicated.
  Fused g = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  e = f32[] exponential(p0)
  a = f32[] add(e, p1)
  ROOT t = (f32[], f32[]) tuple(a, e)
}
)");
  ASSERT_MODULE(g);
  ASSERT_TRUE(g.root()->operand(0)->isFusion()) << g.text();
  EXPECT_EQ(fusedOpcodes(*g.root()->operand(0)), (Opcodes{"add", "exponential"}));
  EXPECT_EQ(g.root()->operand(1)->name(), "e");
  const FusionDecision* d = g.decision("e");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("e is duplicated and stays for its 1 other user"), std::string::npos) << d->reason;
}

TEST(InstructionFusionTest, DuplicateExpensiveLimitComesFromTheConfig) {
  constexpr std::string_view kText = R"(
HloModule m
ENTRY main {
  p0 = f32[4]{0} parameter(0)
  e = f32[4]{0} exponential(p0)
  a = f32[4]{0} add(e, e)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(a, e)
}
)";
  Fused strict = runFusion(kText);
  ASSERT_MODULE(strict);
  EXPECT_FALSE(strict.changed) << strict.text();
  FusionConfig config = fusionConfigFor(Backend::kGpu);
  config.duplicateExpensiveMaxElements = 4;
  Fused lenient = runFusion(kText, config);
  ASSERT_MODULE(lenient);
  ASSERT_TRUE(lenient.root()->operand(0)->isFusion()) << lenient.text();
  EXPECT_EQ(fusedOpcodes(*lenient.root()->operand(0)), (Opcodes{"add", "exponential"}));
}

TEST(InstructionFusionTest, CheapBroadcastIsDuplicatedIntoEveryConsumer) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[128]{0} parameter(0)
  p1 = f32[64,128]{1,0} parameter(1)
  b = f32[64,128]{1,0} broadcast(p0), dimensions={1}
  x = f32[64,128]{1,0} add(p1, b)
  y = f32[64,128]{1,0} multiply(p1, b)
  ROOT t = (f32[64,128]{1,0}, f32[64,128]{1,0}) tuple(x, y)
}
)");
  ASSERT_MODULE(f);
  ASSERT_EQ(entryFusions(*f.module).size(), 2u) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()->operand(0)), (Opcodes{"add", "broadcast"}));
  EXPECT_EQ(fusedOpcodes(*f.root()->operand(1)), (Opcodes{"broadcast", "multiply"}));
  EXPECT_EQ(f.get("b"), nullptr) << "the last consumer took the broadcast; nothing else reads it";
}

TEST(InstructionFusionTest, CheapElementwiseIsDuplicatedWhenAllUsersTakeIt) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[1000]{0} parameter(0)
  p1 = f32[1000]{0} parameter(1)
  s = f32[1000]{0} subtract(p0, p1)
  x = f32[1000]{0} negate(s)
  y = f32[1000]{0} abs(s)
  ROOT t = (f32[1000]{0}, f32[1000]{0}) tuple(x, y)
}
)");
  ASSERT_MODULE(f);
  ASSERT_EQ(entryFusions(*f.module).size(), 2u) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()->operand(0)), (Opcodes{"negate", "subtract"}));
  EXPECT_EQ(fusedOpcodes(*f.root()->operand(1)), (Opcodes{"abs", "subtract"}));
  const FusionDecision* first = f.decision("s", "y");
  ASSERT_NE(first, nullptr) << f.reasons();
  // This copy reads p0 and p1 instead of s (4 KB more); removing s's own kernel (12 KB) pays for both.
  EXPECT_EQ(first->bytesSaved, -4000);
  EXPECT_NE(first->reason.find("duplicated into each of its 2 users, which together saves 4 KB"), std::string::npos)
      << first->reason;
}

TEST(InstructionFusionTest, CheapElementwiseIsNotDuplicatedWhenItWouldAddReads) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[1000]{0} parameter(0)
  p1 = f32[1000]{0} parameter(1)
  p2 = f32[1000]{0} parameter(2)
  s = f32[1000]{0} subtract(p0, p1)
  x = f32[1000]{0} multiply(s, p2)
  ROOT t = (f32[1000]{0}, f32[1000]{0}) tuple(x, s)
}
)");
  ASSERT_MODULE(f);
  // s stays for the tuple, so a copy inside x would only make x read p0 and p1 instead of s.
  EXPECT_FALSE(f.changed) << f.text();
  const FusionDecision* d = f.decision("s", "x");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_EQ(d->bytesSaved, -4000);
  EXPECT_NE(d->reason.find("duplicating it would add 4 KB of reads"), std::string::npos) << d->reason;
}

TEST(InstructionFusionTest, ExpensiveProducerIsNotRecomputedThroughABroadcast) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[16]{0} parameter(0)
  p1 = f32[16,1024]{1,0} parameter(1)
  exp.1 = f32[16]{0} exponential(p0)
  b = f32[16,1024]{1,0} broadcast(exp.1), dimensions={0}
  ROOT add.2 = f32[16,1024]{1,0} add(p1, b)
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "broadcast"}));
  const FusionDecision* d = f.decision("exp.1");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("reads each element of exp.1 1024 times"), std::string::npos) << d->reason;
}

TEST(InstructionFusionTest, CheapProducerIsFusedThroughABroadcast) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[16]{0} parameter(0)
  p1 = f32[16,1024]{1,0} parameter(1)
  n = f32[16]{0} negate(p0)
  b = f32[16,1024]{1,0} broadcast(n), dimensions={0}
  ROOT add = f32[16,1024]{1,0} add(p1, b)
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "broadcast", "negate"}));
}

// ---- limits ----------------------------------------------------------------------------------------------

TEST(InstructionFusionTest, MaxOperandsIsRespected) {
  FusionConfig config = fusionConfigFor(Backend::kGpu);
  config.maxOperands = 3;
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  p1 = f32[100]{0} parameter(1)
  p2 = f32[100]{0} parameter(2)
  p3 = f32[100]{0} parameter(3)
  a = f32[100]{0} add(p0, p1)
  b = f32[100]{0} multiply(p2, p3)
  ROOT c = f32[100]{0} subtract(a, b)
}
)",
                      config);
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()).size(), 2u);
  EXPECT_LE(f.root()->operandCount(), 3);
  EXPECT_NE(f.reasons().find("the fusion would read 4 inputs; the gpu backend allows 3 per kernel"), std::string::npos)
      << f.reasons();
}

TEST(InstructionFusionTest, MaxFusedInstructionsIsRespected) {
  FusionConfig config = fusionConfigFor(Backend::kGpu);
  config.maxFusedInstructions = 2;
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  a = f32[100]{0} negate(p0)
  b = f32[100]{0} abs(a)
  ROOT c = f32[100]{0} sqrt(b)
}
)",
                      config);
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"abs", "sqrt"}));
  const FusionDecision* d = f.decision("a");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("the fusion would hold 3 instructions; the gpu backend allows 2"), std::string::npos)
      << d->reason;
}

// ---- constants -------------------------------------------------------------------------------------------

TEST(InstructionFusionTest, SmallConstantsGoInsideLargeOnesStayOutside) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[4]{0} parameter(0)
  two = f32[] constant(2)
  twos = f32[4]{0} broadcast(two), dimensions={}
  table = f32[4]{0} constant({1, 2, 3, 4})
  m = f32[4]{0} multiply(p0, twos)
  ROOT a = f32[4]{0} add(m, table)
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "broadcast", "constant", "multiply"}));
  EXPECT_EQ(f.get("table")->opcode(), HloOpcode::kConstant);
  const FusionDecision* d = f.decision("table");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find("table has 4 elements; constants with more than 1 element stay outside"), std::string::npos)
      << d->reason;

  FusionConfig config = fusionConfigFor(Backend::kGpu);
  config.smallConstantMaxElements = 4;
  Fused g = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[4]{0} parameter(0)
  p1 = f32[4]{0} parameter(1)
  table = f32[4]{0} constant({1, 2, 3, 4})
  m = f32[4]{0} multiply(p0, p1)
  ROOT a = f32[4]{0} add(m, table)
}
)",
                      config);
  ASSERT_MODULE(g);
  EXPECT_EQ(fusedOpcodes(*g.root()), (Opcodes{"add", "constant", "multiply"})) << g.text();
}

TEST(InstructionFusionTest, AConstantAloneDoesNotStartAFusion) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[4]{0} parameter(0)
  c = f32[] constant(2)
  b = f32[4]{0} broadcast(c), dimensions={}
  ROOT a = f32[4]{0} add(p0, b)
}
)");
  ASSERT_MODULE(f);
  // The broadcast starts the fusion; the scalar then follows it in.
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "broadcast", "constant"}));

  Fused g = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[] parameter(0)
  c = f32[] constant(2)
  ROOT a = f32[] add(p0, c)
}
)");
  ASSERT_MODULE(g);
  EXPECT_FALSE(g.changed) << g.text();
  const FusionDecision* d = g.decision("c");
  ASSERT_NE(d, nullptr) << g.reasons();
  EXPECT_NE(d->reason.find("a constant is only folded into a consumer that is fused anyway"), std::string::npos);
}

// ---- what is never fused ---------------------------------------------------------------------------------

TEST(InstructionFusionTest, ParametersTuplesAndPlumbingAreNotLogged) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = (f32[8]{0}, f32[8]{0}) parameter(0)
  g0 = f32[8]{0} get-tuple-element(p0), index=0
  g1 = f32[8]{0} get-tuple-element(p0), index=1
  ROOT a = f32[8]{0} add(g0, g1)
}
)");
  ASSERT_MODULE(f);
  EXPECT_FALSE(f.changed) << f.text();
  EXPECT_TRUE(f.context.decisions().empty()) << f.reasons();
  EXPECT_EQ(producerRule(*f.get("p0"), fusionConfigFor(Backend::kGpu)).reason, "parameters are inputs");
  EXPECT_FALSE(producerRule(*f.get("p0"), fusionConfigFor(Backend::kGpu)).record);
}

TEST(InstructionFusionTest, CustomCallsRngSortAndSideEffectsAreNotFused) {
  Fused f = runFusion(R"(
HloModule m
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  cc = f32[8]{0} custom-call(p0), custom_call_target="my_kernel"
  r = f32[8]{0} rng(lo, hi), distribution=rng_uniform
  s = f32[8]{0} sort(p0), dimensions={0}, to_apply=lt
  a = f32[8]{0} add(cc, r)
  ROOT m = f32[8]{0} multiply(a, s)
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "multiply"}));
  EXPECT_EQ(f.get("cc")->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(f.get("r")->opcode(), HloOpcode::kRng);
  EXPECT_EQ(f.get("s")->opcode(), HloOpcode::kSort);
  // The comparator of sort is a called computation: untouched.
  EXPECT_EQ(f.module->findComputation("lt")->instructionCount(), 3);
}

TEST(InstructionFusionTest, NothingIsFusedInsideReducers) {
  Fused f = runFusion(R"(
HloModule m
reducer {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  e = f32[] exponential(x)
  n = f32[] negate(e)
  ROOT s = f32[] add(n, y)
}
ENTRY main {
  p0 = f32[64,32]{1,0} parameter(0)
  c = f32[] constant(0)
  ROOT r = f32[64]{0} reduce(p0, c), dimensions={1}, to_apply=reducer
}
)");
  ASSERT_MODULE(f);
  EXPECT_FALSE(f.changed) << f.text();
  const HloComputation* reducer = f.module->findComputation("reducer");
  ASSERT_NE(reducer, nullptr);
  EXPECT_EQ(reducer->instructionCount(), 5);
  EXPECT_EQ(f.module->fusionCount(), 0);
}

TEST(InstructionFusionTest, WhileBodiesAreFused) {
  Fused f = runFusion(R"(
HloModule m
cond {
  s = (s32[], f32[100]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[100]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[100]{0} get-tuple-element(s), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  e = f32[100]{0} exponential(x)
  y = f32[100]{0} negate(e)
  ROOT t = (s32[], f32[100]{0}) tuple(next, y)
}
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[100]{0}) tuple(zero, p0)
  ROOT w = (s32[], f32[100]{0}) while(init), condition=cond, body=body
}
)");
  ASSERT_MODULE(f);
  EXPECT_TRUE(f.changed);
  const HloComputation* body = f.module->findComputation("body");
  const HloInstruction* y = body->root()->operand(1);
  ASSERT_TRUE(y->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*y), (Opcodes{"exponential", "negate"}));
  for (const FusionDecision& d : f.context.decisions()) {
    if (d.producer == "e") {
      EXPECT_EQ(d.computation, "body");
    }
  }
}

TEST(InstructionFusionTest, ControlDependenciesKeepAProducerOutside) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  a = f32[100]{0} negate(p0)
  b = f32[100]{0} abs(p0), control-predecessors={a}
  ROOT c = f32[100]{0} add(a, b)
}
)");
  ASSERT_MODULE(f);
  const FusionDecision* d = f.decision("a");
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_FALSE(d->fused);
  EXPECT_NE(d->reason.find("has control dependencies"), std::string::npos) << d->reason;
}

// ---- existing fusions ------------------------------------------------------------------------------------

TEST(InstructionFusionTest, ExistingFusionsMergeWithProducersAndConsumers) {
  Fused f = runFusion(R"(
HloModule m
fused_a {
  x = f32[100]{0} parameter(0)
  ROOT n = f32[100]{0} negate(x)
}
fused_b {
  x = f32[100]{0} parameter(0)
  y = f32[100]{0} parameter(1)
  ROOT m = f32[100]{0} multiply(x, y)
}
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  p1 = f32[100]{0} parameter(1)
  a = f32[100]{0} fusion(p0), kind=kLoop, calls=fused_a
  s = f32[100]{0} sqrt(a)
  ROOT b = f32[100]{0} fusion(s, p1), kind=kLoop, calls=fused_b
}
)");
  ASSERT_MODULE(f);
  EXPECT_TRUE(f.changed);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->name(), "b");
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"multiply", "negate", "sqrt"}));
  EXPECT_EQ(entryFusions(*f.module).size(), 1u);
  EXPECT_EQ(f.module->findComputation("fused_a"), nullptr) << "the merged producer's computation is gone";
}

// ---- structure of the run --------------------------------------------------------------------------------

TEST(InstructionFusionTest, NoCycleThroughADuplicatedProducer) {
  // p -> q -> c and p -> c: the cheap p is duplicated into c (and stays for q), so no cycle can form.
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  p = f32[100]{0} negate(p0)
  q = f32[100]{0} exponential(p)
  ROOT c = f32[100]{0} add(p, q)
}
)");
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"add", "exponential", "negate"}));

  // The rule itself: moving p (not duplicating it) into c while q also leads there would close a cycle.
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p0 = f32[100]{0} parameter(0)
  p = f32[100]{0} negate(p0)
  q = f32[100]{0} exponential(p)
  ROOT c = f32[100]{0} add(p, q)
}
)");
  ASSERT_NE(module, nullptr);
  TopologicalOrder order = TopologicalOrder::of(*module->entry());
  const HloInstruction* p = entryInstruction(*module, "p");
  const HloInstruction* c = entryInstruction(*module, "c");
  FusionVerdict moved = cycleRule(order, *p, *c, /*duplicate=*/false);
  EXPECT_FALSE(moved);
  EXPECT_EQ(moved.reason, "another path leads from p to c; fusing them would create a cycle");
  EXPECT_TRUE(cycleRule(order, *p, *c, /*duplicate=*/true));
}

TEST(InstructionFusionTest, SecondRunChangesNothing) {
  auto module = parseOrFail(withReducer(R"(
ENTRY main {
  logits = f32[32,1000]{1,0} parameter(0)
  ninf = f32[] constant(-inf)
  max = f32[32]{0} reduce(logits, ninf), dimensions={1}, to_apply=add
  maxb = f32[32,1000]{1,0} broadcast(max), dimensions={0}
  shifted = f32[32,1000]{1,0} subtract(logits, maxb)
  e = f32[32,1000]{1,0} exponential(shifted)
  zero = f32[] constant(0)
  sum = f32[32]{0} reduce(e, zero), dimensions={1}, to_apply=add
  sumb = f32[32,1000]{1,0} broadcast(sum), dimensions={0}
  ROOT softmax = f32[32,1000]{1,0} divide(e, sumb)
}
)"));
  ASSERT_NE(module, nullptr);
  InstructionFusion pass;
  PassContext first;
  EXPECT_TRUE(testing::runPass(pass, *module, first));
  EXPECT_GE(module->fusionCount(), 2);
  const std::string once = printModule(*module);
  PassContext second;
  EXPECT_FALSE(testing::runPass(pass, *module, second));
  EXPECT_EQ(printModule(*module), once);
  for (const FusionDecision& d : second.decisions()) EXPECT_FALSE(d.fused) << d.reason;
}

TEST(InstructionFusionTest, UnchangedModuleIsLeftExactlyAsItWas) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  p1 = f32[8]{0} parameter(1)
  ROOT a = f32[8]{0} add(p0, p1)
}
)");
  ASSERT_NE(module, nullptr);
  const std::string before = printModule(*module);
  InstructionFusion pass;
  PassContext context;
  EXPECT_FALSE(testing::runPass(pass, *module, context));
  EXPECT_EQ(printModule(*module), before);
  EXPECT_TRUE(context.decisions().empty());
  EXPECT_EQ(pass.name(), "fusion");
}

TEST(InstructionFusionTest, EveryRefusalIsLoggedOnceUnderTheFinalNames) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p0 = f32[1000]{0} parameter(0)
  p1 = f32[1000]{0} parameter(1)
  e = f32[1000]{0} exponential(p0)
  n = f32[1000]{0} negate(e)
  x = f32[1000]{0} add(n, p1)
  y = f32[1000]{0} multiply(e, p1)
  ROOT t = (f32[1000]{0}, f32[1000]{0}) tuple(x, y)
}
)");
  ASSERT_MODULE(f);
  std::vector<std::string> refusals;
  for (const FusionDecision& d : f.context.decisions()) {
    if (!d.fused) refusals.push_back(d.producer + " -> " + d.consumer);
  }
  std::vector<std::string> unique = refusals;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  EXPECT_EQ(refusals.size(), unique.size()) << f.reasons();
  for (const FusionDecision& d : f.context.decisions()) {
    if (d.fused) continue;
    EXPECT_NE(entryInstruction(*f.module, d.producer), nullptr) << d.reason;
    EXPECT_NE(entryInstruction(*f.module, d.consumer), nullptr) << d.reason;
  }
  EXPECT_NE(f.reasons().find("e is expensive and has 2 users"), std::string::npos) << f.reasons();
}

}  // namespace
}  // namespace fusionscope::core
