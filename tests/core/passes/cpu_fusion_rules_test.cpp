// The cpu preset's fusion rules (XLA CPU's CpuInstructionFusion), one test per row of docs/PIPELINES.md's table.
#include <algorithm>

#include <gtest/gtest.h>

#include "core/passes/fusion_rules.h"
#include "tests/core/passes/fusion_testing.h"

namespace fusionscope::core {
namespace {

using testing::fusedOpcodes;

#define ASSERT_MODULE(f) ASSERT_NE((f).module, nullptr)

void expectReason(const Fused& f, std::string_view producer, std::string_view consumer, std::string_view text) {
  const FusionDecision* d = f.decision(producer, consumer);
  ASSERT_NE(d, nullptr) << f.reasons();
  EXPECT_NE(d->reason.find(text), std::string::npos) << d->reason;
}

TEST(CpuFusionRulesTest, ProducersFuseIntoAReductionOverAnyDimensionAsALoopFusion) {
  // A column reduction: the gpu preset makes it kInput; XLA CPU has no kInput fusion and computes the reduce
  // inside a loop over its output.
  constexpr std::string_view kEntry = R"(
ENTRY main {
  p0 = f32[256,64]{1,0} parameter(0)
  e = f32[256,64]{1,0} exponential(p0)
  c = f32[] constant(0)
  ROOT r = f32[64]{0} reduce(e, c), dimensions={0}, to_apply=add
}
)";
  Fused gpu = runFusion(withReducer(kEntry));
  ASSERT_MODULE(gpu);
  EXPECT_EQ(gpu.root()->fusionKind(), FusionKind::kInput);
  Fused f = runFusion(withReducer(kEntry), cpu());
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"constant", "exponential", "reduce"}));
}

TEST(CpuFusionRulesTest, AReductionFusesIntoItsElementwiseConsumer) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,512]{1,0} parameter(0)
  w = f32[64]{0} parameter(1)
  c = f32[] constant(0)
  r = f32[64]{0} reduce(p0, c), dimensions={1}, to_apply=add
  ROOT out = f32[64]{0} subtract(w, r)
}
)"),
                      cpu());
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(f.root()->fusionKind(), FusionKind::kLoop);
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"constant", "reduce", "subtract"}));
}

TEST(CpuFusionRulesTest, AReductionIsNotRecomputedThroughABroadcast) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,512]{1,0} parameter(0)
  c = f32[] constant(0)
  r = f32[64]{0} reduce(p0, c), dimensions={1}, to_apply=add
  b = f32[64,512]{1,0} broadcast(r), dimensions={0}
  ROOT out = f32[64,512]{1,0} subtract(p0, b)
}
)"),
                      cpu());
  ASSERT_MODULE(f);
  EXPECT_EQ(f.get("r")->opcode(), HloOpcode::kReduce) << f.text();
  expectReason(f, "r", "", "reads each element of r 512 times");
}

TEST(CpuFusionRulesTest, AFusionIsNotFusedIntoItsUsers) {
  Fused f = runFusion(R"(
HloModule m
fused_n {
  a = f32[128]{0} parameter(0)
  ROOT n = f32[128]{0} negate(a)
}
ENTRY main {
  p0 = f32[128]{0} parameter(0)
  fn = f32[128]{0} fusion(p0), kind=kLoop, calls=fused_n
  ROOT e = f32[128]{0} exponential(fn)
}
)",
                      cpu());
  ASSERT_MODULE(f);
  EXPECT_EQ(f.root()->opcode(), HloOpcode::kExp) << f.text();
  expectReason(f, "fn", "e", "fn is already a fusion; the cpu backend fuses only plain instructions into a consumer");
  Fused gpu = runFusion(f.text());
  ASSERT_MODULE(gpu);
  EXPECT_TRUE(gpu.root()->isFusion()) << "the gpu preset merges the two: " << gpu.text();
}

TEST(CpuFusionRulesTest, OnlyAnUnbatchedMatrixVectorDotTakesAnAddAsItsEpilogue) {
  constexpr std::string_view kMatVec = R"(
HloModule m
ENTRY main {
  m = f32[256,512]{1,0} parameter(0)
  v = f32[512]{0} parameter(1)
  b = f32[256]{0} parameter(2)
  mv = f32[256]{0} dot(m, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = f32[256]{0} OP(mv, b)
}
)";
  auto with = [&](std::string op) {
    std::string text(kMatVec);
    text.replace(text.find("OP"), 2, op);
    return runFusion(text, cpu());
  };
  Fused add = with("add");
  ASSERT_MODULE(add);
  ASSERT_TRUE(add.root()->isFusion()) << add.text();
  EXPECT_EQ(add.root()->fusionKind(), FusionKind::kOutput);
  Fused multiply = with("multiply");
  ASSERT_MODULE(multiply);
  EXPECT_EQ(multiply.root()->opcode(), HloOpcode::kMultiply) << multiply.text();
  expectReason(multiply, "mv", "out", "output-fuses a matrix-vector dot only into an add; out is not a plain add");
}

TEST(CpuFusionRulesTest, ReduceWindowAndScatterTakeNoProducers) {
  Fused f = runFusion(withReducer(R"(
ENTRY main {
  p0 = f32[64,64]{1,0} parameter(0)
  e = f32[64,64]{1,0} exponential(p0)
  c = f32[] constant(0)
  ROOT rw = f32[32,32]{1,0} reduce-window(e, c), window={size=2x2 stride=2x2}, to_apply=add
}
)"),
                      cpu());
  ASSERT_MODULE(f);
  EXPECT_EQ(f.root()->opcode(), HloOpcode::kReduceWindow) << f.text();
  expectReason(f, "e", "rw", "the cpu backend fuses only into loop-fusible instructions; rw is emitted");
}

TEST(CpuFusionRulesTest, WideAndMinorDimensionConcatenationsStayOnTheirOwn) {
  // Along the minor dimension with rows of 128 elements or more: a copy loop of its own.
  Fused minor = runFusion(R"(
HloModule m
ENTRY main {
  a = f32[32,64]{1,0} parameter(0)
  b = f32[32,64]{1,0} parameter(1)
  ea = f32[32,64]{1,0} exponential(a)
  ROOT cat = f32[32,128]{1,0} concatenate(ea, b), dimensions={1}
}
)",
                          cpu());
  ASSERT_MODULE(minor);
  EXPECT_EQ(minor.root()->opcode(), HloOpcode::kConcatenate) << minor.text();
  expectReason(minor, "ea", "cat", "cat concatenates along the most minor dimension (128 elements per row");

  // Shorter rows fuse, whatever their bytes: the halves of a rotary embedding, 2 KB in all (XLA CPU of jaxlib 0.10
  // fuses this concatenate of bf16_block_adamw with both halves).
  Fused shortRows = runFusion(R"(
HloModule m
ENTRY main {
  a = f32[16,16]{1,0} parameter(0)
  b = f32[16,16]{1,0} parameter(1)
  s = f32[16,16]{1,0} subtract(a, b)
  t = f32[16,16]{1,0} add(a, b)
  ROOT cat = f32[16,32]{1,0} concatenate(s, t), dimensions={1}
}
)",
                              cpu());
  ASSERT_MODULE(shortRows);
  ASSERT_TRUE(shortRows.root()->isFusion()) << shortRows.text();
  EXPECT_EQ(shortRows.root()->fusedComputation()->root()->opcode(), HloOpcode::kConcatenate) << shortRows.text();

  // Along the major dimension it fuses.
  Fused major = runFusion(R"(
HloModule m
ENTRY main {
  a = f32[32,32]{1,0} parameter(0)
  b = f32[32,32]{1,0} parameter(1)
  ea = f32[32,32]{1,0} exponential(a)
  ROOT cat = f32[64,32]{1,0} concatenate(ea, b), dimensions={0}
}
)",
                          cpu());
  ASSERT_MODULE(major);
  EXPECT_TRUE(major.root()->isFusion()) << major.text();

  std::string wide = "HloModule m\nENTRY main {\n";
  std::string operands;
  for (int i = 0; i < 9; ++i) {
    wide += "  p" + std::to_string(i) + " = f32[4]{0} parameter(" + std::to_string(i) + ")\n";
    wide += "  n" + std::to_string(i) + " = f32[4]{0} negate(p" + std::to_string(i) + ")\n";
    operands += (i ? ", n" : "n") + std::to_string(i);
  }
  wide += "  ROOT cat = f32[36]{0} concatenate(" + operands + "), dimensions={0}\n}\n";
  Fused nine = runFusion(wide, cpu());
  ASSERT_MODULE(nine);
  EXPECT_EQ(nine.root()->opcode(), HloOpcode::kConcatenate) << nine.text();
  expectReason(nine, "n0", "cat", "cat concatenates 9 operands; a fused loop would choose among them per element");
}

TEST(CpuFusionRulesTest, ALoopFusionHoldsAtMostSixReductions) {
  // Seven row sums added up: the fusion of the adds takes reductions until it holds more than five.
  std::string text = "HloModule m\n" + std::string(kAddReducer) + "ENTRY main {\n  c = f32[] constant(0)\n";
  for (int i = 0; i < 7; ++i) {
    const std::string n = std::to_string(i);
    text += "  p" + n + " = f32[8,64]{1,0} parameter(" + n + ")\n";
    text += "  r" + n + " = f32[8]{0} reduce(p" + n + ", c), dimensions={1}, to_apply=add\n";
  }
  text += "  s1 = f32[8]{0} add(r0, r1)\n";
  for (int i = 2; i < 7; ++i) {
    text +=
        "  s" + std::to_string(i) + " = f32[8]{0} add(s" + std::to_string(i - 1) + ", r" + std::to_string(i) + ")\n";
  }
  text += "  ROOT out = f32[8]{0} negate(s6)\n}\n";
  Fused f = runFusion(text, cpu());
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  int reduces = 0;
  for (const std::string& op : fusedOpcodes(*f.root())) reduces += op == "reduce";
  EXPECT_EQ(reduces, 6) << f.text();
  const FusionDecision* d = nullptr;
  for (const FusionDecision& decision : f.context.decisions()) {
    if (decision.reason.find("reductions; the cpu backend allows 5 per fusion") != std::string::npos) d = &decision;
  }
  EXPECT_NE(d, nullptr) << f.reasons();
}

TEST(CpuFusionRulesTest, TheInPlaceOperandOfADynamicUpdateSliceStaysOutside) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p = f32[64]{0} parameter(0)
  u = f32[8]{0} parameter(1)
  i = s32[] parameter(2)
  n = f32[64]{0} negate(p)
  e = f32[8]{0} exponential(u)
  ROOT d = f32[64]{0} dynamic-update-slice(n, e, i)
}
)",
                      cpu());
  ASSERT_MODULE(f);
  ASSERT_TRUE(f.root()->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*f.root()), (Opcodes{"dynamic-update-slice", "exponential"}));
  expectReason(f, "n", "", "updates its first operand in place, so that operand stays a buffer of its own");
}

// "Effectively at most unary" (XLA's EffectivelyAtMostUnary) counts the operands of at least the producer's true
// rank (dimensions of size 1 not counted); broadcasts, iotas and scalar constants never count. So a scalar computed
// from scalars (an index clamp) is not unary: each scalar operand is as large as its result.
TEST(CpuFusionRulesTest, EffectivelyAtMostUnaryComparesTrueRanks) {
  auto module = testing::parseOrFail(R"(
HloModule m
ENTRY main {
  x = f32[8,8] parameter(0)
  y = f32[8,8] parameter(1)
  v = f32[8] parameter(2)
  w = f32[1,8] parameter(3)
  z = f32[1,8] parameter(4)
  i = s32[] parameter(5)
  k = f32[8,8] constant({...})
  zero = s32[] constant(0)
  n = s32[] constant(64)
  two = f32[] constant(2)
  twos = f32[8,8] broadcast(two), dimensions={}
  vs = f32[8,8] broadcast(v), dimensions={1}
  column = f32[8,8] iota(), iota_dimension=0
  lt = pred[] compare(i, zero), direction=LT
  wrapped = s32[] add(i, n)
  clamp = s32[] select(lt, wrapped, i)
  scaled = f32[8,8] multiply(x, twos)
  biased = f32[8,8] add(x, vs)
  indexed = f32[8,8] add(x, column)
  product = f32[8,8] multiply(x, y)
  weighted = f32[8,8] multiply(x, k)
  rows = f32[1,8] add(w, z)
  ROOT t = (s32[], s32[], f32[8,8], f32[8,8], f32[8,8], f32[8,8], f32[8,8], f32[1,8]) tuple(clamp, wrapped, scaled,
      biased, indexed, product, weighted, rows)
}
)");
  ASSERT_NE(module, nullptr);
  auto unary = [&](std::string_view name) {
    const HloInstruction* inst = testing::entryInstruction(*module, name);
    EXPECT_NE(inst, nullptr) << name;
    return inst != nullptr && effectivelyAtMostUnary(*inst);
  };
  EXPECT_FALSE(unary("clamp"));   // lt, wrapped and i: three scalars as large as the scalar result
  EXPECT_TRUE(unary("wrapped"));  // i, and a scalar constant
  EXPECT_TRUE(unary("scaled"));   // x, and a broadcast
  EXPECT_TRUE(unary("biased"));
  EXPECT_TRUE(unary("indexed"));  // x, and an iota
  EXPECT_FALSE(unary("product"));
  EXPECT_FALSE(unary("weighted"));  // a constant that is not a scalar counts
  EXPECT_FALSE(unary("rows"));      // [1,8] operands: true rank 1, the result's
}

// An index clamp read by two dynamic-update-slices and by the root tuple is not copied into the two updates: it reads
// three scalars to write one, and the tuple cannot take it (XLA CPU keeps it as one fusion all three read).
TEST(CpuFusionRulesTest, AScalarIndexClampThatNotEveryUserTakesIsNotCopied) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  p = f32[64] parameter(0)
  q = f32[64] parameter(1)
  u = f32[8] parameter(2)
  i = s32[] parameter(3)
  zero = s32[] constant(0)
  n = s32[] constant(64)
  lt = pred[] compare(i, zero), direction=LT
  wrapped = s32[] add(i, n)
  clamp = s32[] select(lt, wrapped, i)
  e = f32[8] exponential(u)
  a = f32[64] dynamic-update-slice(p, e, clamp)
  b = f32[64] dynamic-update-slice(q, e, clamp)
  ROOT t = (f32[64], f32[64], s32[]) tuple(a, b, clamp)
}
)",
                      cpu());
  ASSERT_MODULE(f);
  const HloInstruction* clampValue = f.root()->operand(2);
  ASSERT_TRUE(clampValue->isFusion()) << f.text();
  EXPECT_EQ(fusedOpcodes(*clampValue), (Opcodes{"add", "compare", "constant", "constant", "select"})) << f.text();
  for (int i = 0; i < 2; ++i) {
    const HloInstruction* update = f.root()->operand(i);
    EXPECT_EQ(update->opcode(), HloOpcode::kDynamicUpdateSlice) << f.text();
    EXPECT_EQ(update->operand(2), clampValue) << "the clamp was copied into " << update->name() << "\n" << f.text();
  }
}

// The counterpart: a dynamic-slice of one element out of 64 (a decode step's sampled token) read by a dynamic-update-
// slice and by a reshape, both of which take it, is copied into each, whatever the bytes each copy reads again (XLA
// CPU's kv_decode module has it in both fusions).
TEST(CpuFusionRulesTest, AProducerEveryUserTakesIsCopiedIntoEach) {
  Fused f = runFusion(R"(
HloModule m
ENTRY main {
  sorted = s32[64]{0} parameter(0)
  i = s32[] parameter(1)
  cache = s32[8]{0} parameter(2)
  pos = s32[] parameter(3)
  zero = s32[] constant(0)
  lt = pred[] compare(i, zero), direction=LT
  n = s32[] constant(64)
  wrapped = s32[] add(i, n)
  clamp = s32[] select(lt, wrapped, i)
  token = s32[1]{0} dynamic-slice(sorted, clamp), dynamic_slice_sizes={1}
  doubled = s32[1]{0} add(token, token)
  written = s32[8]{0} dynamic-update-slice(cache, doubled, pos)
  scalar = s32[] reshape(token)
  ROOT t = (s32[8]{0}, s32[]) tuple(written, scalar)
}
)",
                      cpu());
  ASSERT_MODULE(f);
  for (int i = 0; i < 2; ++i) {
    const HloInstruction* user = f.root()->operand(i);
    ASSERT_TRUE(user->isFusion()) << f.text();
    const Opcodes ops = fusedOpcodes(*user);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "dynamic-slice"), 1) << user->name() << "\n" << f.text();
  }
}

// A LAPACK call takes its matrix column-major: XLA gives a row-major operand a layout copy, a loop fusion that takes
// the producer as any user does. So a sum that reads more than it writes (h = g + shift, read by a Cholesky call and
// by the symmetrisation (h + h^T) / 2) is copied into the symmetrisation. A mask over a LAPACK result is laid out
// column-major itself (no copy), and the call then cannot take it: the product of two factors stays one fusion both
// read.
TEST(CpuFusionRulesTest, ALapackOperandThatNeedsALayoutCopyTakesItsProducer) {
  Fused copied = runFusion(R"(
HloModule m
ENTRY main {
  g = f32[6,6]{1,0} parameter(0)
  shift = f32[6,6]{1,0} parameter(1)
  h = f32[6,6]{1,0} add(g, shift)
  lu = (f32[6,6]{0,1}, s32[6]{0}, s32[]) custom-call(h), custom_call_target="lapack_sgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  factors = f32[6,6]{0,1} get-tuple-element(lu), index=0
  ht = f32[6,6]{1,0} transpose(h), dimensions={1,0}
  s = f32[6,6]{1,0} add(h, ht)
  two = f32[] constant(2)
  b2 = f32[6,6]{1,0} broadcast(two), dimensions={}
  sym = f32[6,6]{1,0} divide(s, b2)
  ROOT t = (f32[6,6]{0,1}, f32[6,6]{1,0}) tuple(factors, sym)
}
)",
                           cpu());
  ASSERT_MODULE(copied);
  const HloInstruction* sym = copied.root()->operand(1);
  ASSERT_TRUE(sym->isFusion()) << copied.text();
  Opcodes ops = fusedOpcodes(*sym);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "add"), 2) << copied.text();

  Fused kept = runFusion(R"(
HloModule m
ENTRY main {
  a = f32[6,6]{1,0} parameter(0)
  chol = (f32[6,6]{0,1}, s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  l = f32[6,6]{0,1} get-tuple-element(chol), index=0
  b = f32[6,6]{1,0} parameter(1)
  chol2 = (f32[6,6]{0,1}, s32[]) custom-call(b), custom_call_target="lapack_spotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  l2 = f32[6,6]{0,1} get-tuple-element(chol2), index=0
  h = f32[6,6]{0,1} multiply(l, l2)
  lu = (f32[6,6]{0,1}, s32[6]{0}, s32[]) custom-call(h), custom_call_target="lapack_sgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  factors = f32[6,6]{0,1} get-tuple-element(lu), index=0
  ht = f32[6,6]{1,0} transpose(h), dimensions={1,0}
  s = f32[6,6]{1,0} add(h, ht)
  ROOT t = (f32[6,6]{0,1}, f32[6,6]{1,0}) tuple(factors, s)
}
)",
                         cpu());
  ASSERT_MODULE(kept);
  const HloInstruction* sum = kept.root()->operand(1);
  ops = sum->isFusion() ? fusedOpcodes(*sum) : Opcodes{};
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "multiply"), 0) << kept.text();
}

// XLA's InstructionFusion never duplicates an expensive producer, whatever its size: the exp of a one-element
// hyperparameter (a Gaussian process's length scale) that two fusions read stays one fusion; the gpu preset copies
// a one-element exp into each user.
TEST(CpuFusionRulesTest, AnExpensiveProducerOfOneElementIsNotDuplicated) {
  constexpr std::string_view kModule = R"(
HloModule m
ENTRY main {
  s = f32[1] parameter(0)
  x = f32[64] parameter(1)
  y = f32[64] parameter(2)
  e = f32[1] exponential(s)
  r = f32[] reshape(e)
  b = f32[64] broadcast(r), dimensions={}
  m = f32[64] multiply(x, b)
  d = f32[64] divide(y, b)
  ROOT t = (f32[64], f32[64]) tuple(m, d)
}
)";
  Fused f = runFusion(kModule, cpu());
  ASSERT_MODULE(f);
  const HloInstruction* first = f.root()->operand(0);
  const HloInstruction* second = f.root()->operand(1);
  ASSERT_TRUE(first->isFusion() && second->isFusion()) << f.text();
  for (const HloInstruction* user : {first, second}) {
    const Opcodes ops = fusedOpcodes(*user);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "exponential"), 0) << "exp copied into " << user->name() << "\n"
                                                                    << f.text();
  }
  expectReason(f, "e", "", "is expensive");
}

TEST(CpuFusionRulesTest, LoopFusibleIsXlaCpusList) {
  auto module = testing::parseOrFail(withReducer(R"(
ENTRY main {
  p0 = f32[8,8]{1,0} parameter(0)
  c = f32[] constant(0)
  r = f32[8]{0} reduce(p0, c), dimensions={1}, to_apply=add
  t = f32[8,8]{1,0} transpose(p0), dimensions={1,0}
  s = f32[8,8]{1,0} sort(p0), dimensions={1}, to_apply=add
  rw = f32[4,4]{1,0} reduce-window(p0, c), window={size=2x2 stride=2x2}, to_apply=add
  ROOT out = (f32[8], f32[8,8], f32[4,4]) tuple(r, t, rw)
}
)"));
  ASSERT_NE(module, nullptr);
  EXPECT_TRUE(isLoopFusible(*testing::entryInstruction(*module, "r")));
  EXPECT_TRUE(isLoopFusible(*testing::entryInstruction(*module, "t")));
  EXPECT_FALSE(isLoopFusible(*testing::entryInstruction(*module, "rw")));
}

}  // namespace
}  // namespace fusionscope::core
