// Buffer assignment: temporaries are reused after their last reader, outputs and parameters never are, and
// input_output_alias puts an output in its parameter's buffer.
#include "core/codegen/execution_plan.h"

#include <gtest/gtest.h>

#include "core/codegen/codegen_preparation.h"
#include "core/text/hlo_parser.h"
#include "tests/core/testing/codegen_testing.h"

namespace fusionscope::core {
namespace {

std::unique_ptr<HloModule> parse(std::string_view text) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.message();
  return module.ok() ? std::move(*module) : nullptr;
}

const PlanKernel& kernelNamed(const ExecutionPlan& plan, const std::string& name) {
  for (const PlanKernel& kernel : plan.kernels) {
    if (kernel.name == name) return kernel;
  }
  ADD_FAILURE() << "no kernel " << name << "\n" << planToString(plan);
  return plan.kernels.front();
}

TEST(ExecutionPlanTest, ChainReusesTemporaryBuffers) {
  auto module = parse(R"(HloModule chain
ENTRY e {
  p = f32[1024] parameter(0)
  a = f32[1024] exponential(p)
  b = f32[1024] negate(a)
  c = f32[1024] sqrt(b)
  d = f32[1024] abs(c)
  ROOT r = f32[1024] tanh(d)
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_EQ(plan->kernels.size(), 5u) << planToString(*plan);
  // a dies when b is computed, so c can take a's buffer; b's buffer goes to d.
  EXPECT_EQ(kernelNamed(*plan, "c").outputs[0], kernelNamed(*plan, "a").outputs[0]) << planToString(*plan);
  EXPECT_EQ(kernelNamed(*plan, "d").outputs[0], kernelNamed(*plan, "b").outputs[0]) << planToString(*plan);
  // A kernel never writes a buffer it reads.
  for (const PlanKernel& kernel : plan->kernels) {
    for (int in : kernel.inputs) {
      for (int out : kernel.outputs) EXPECT_NE(in, out) << kernel.name;
    }
  }
  // parameter + 2 temporaries + output.
  EXPECT_EQ(plan->buffers.size(), 4u) << planToString(*plan);
  EXPECT_EQ(plan->peakBytes, 4 * 4096);
  EXPECT_EQ(plan->temporaryBytesWithoutReuse, 4 * 4096);
}

TEST(ExecutionPlanTest, LiveValuesKeepTheirBuffers) {
  auto module = parse(R"(HloModule live
ENTRY e {
  p = f32[256] parameter(0)
  a = f32[256] exponential(p)
  b = f32[256] negate(p)
  c = f32[256] sqrt(b)
  ROOT r = f32[256] add(a, c)
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_TRUE(plan.ok()) << plan.message();
  // a is live until r, so neither b nor c may take its buffer.
  const int a = kernelNamed(*plan, "a").outputs[0];
  EXPECT_NE(kernelNamed(*plan, "b").outputs[0], a);
  EXPECT_NE(kernelNamed(*plan, "c").outputs[0], a);
  EXPECT_NE(kernelNamed(*plan, "c").outputs[0], kernelNamed(*plan, "b").outputs[0]);
}

// A custom-call or a collective cannot run here: planning refuses it, before anything is compiled, naming the
// instruction and what it is (the custom-call target).
TEST(ExecutionPlanTest, CustomCallsAndCollectivesAreRefusedByName) {
  auto custom = parse(R"(HloModule custom
ENTRY e {
  x = f32[4] parameter(0)
  n = f32[4] negate(x)
  ROOT c = (f32[4], f32[4]) custom-call(n), custom_call_target="__cudnn$convForward"
})");
  StatusOr<ExecutionPlan> plan = planExecution(*custom);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(),
            "c: cannot run custom-call target \"__cudnn$convForward\" (no CPU or GPU implementation here)");
  auto collective = parse(R"(HloModule collective
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(x), replica_groups={}, to_apply=add
})");
  plan = planExecution(*collective);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(), "r: cannot run collective all-reduce (a single-device runtime)");
}

TEST(ExecutionPlanTest, BitcastsAndTuplesNeedNoKernel) {
  auto module = parse(R"(HloModule views
ENTRY e {
  p = f32[4,8] parameter(0)
  c = f32[32] constant({0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31})
  r = f32[32] reshape(p)
  s = f32[32] add(r, c)
  ROOT t = (f32[32], f32[4,8]) tuple(s, p)
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_EQ(plan->kernels.size(), 1u) << planToString(*plan);
  const PlanKernel& add = plan->kernels[0];
  EXPECT_EQ(add.inputs[0], plan->parameters[0].buffer);  // the reshape reads the parameter's bytes
  EXPECT_NE(plan->buffers[static_cast<size_t>(add.inputs[1])].constant, nullptr);
  ASSERT_EQ(plan->outputs.size(), 2u);
  EXPECT_TRUE(plan->tupleOutput);
  EXPECT_EQ(plan->outputs[1].buffer, plan->parameters[0].buffer);
}

TEST(ExecutionPlanTest, AliasedOutputOverwritesAParameterItReadsOnlyElementwise) {
  auto module = parse(R"(HloModule alias, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  w = f32[64] parameter(0)
  g = f32[64] parameter(1)
  s = f32[64] multiply(g, g)
  w2 = f32[64] subtract(w, s)
  n = f32[64] negate(g)
  ROOT t = (f32[64], f32[64]) tuple(w2, n)
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_TRUE(plan.ok()) << plan.message();
  // w2 reads w[i] only to write w2[i] (elementwise): it is computed in place, without a copy kernel.
  ASSERT_TRUE(plan->outputs[0].aliasesParameter.has_value());
  EXPECT_EQ(*plan->outputs[0].aliasesParameter, 0);
  EXPECT_EQ(plan->outputs[0].buffer, plan->parameters[0].buffer);
  EXPECT_EQ(kernelNamed(*plan, "w2").outputs[0], plan->parameters[0].buffer) << planToString(*plan);
  for (const PlanKernel& kernel : plan->kernels) EXPECT_NE(kernel.kind, "copy") << planToString(*plan);
}

TEST(ExecutionPlanTest, AliasedOutputIsCopiedWhenItsKernelReadsOtherElementsOfTheParameter) {
  auto module = parse(R"(HloModule alias3, input_output_alias={ {0}: (0, {}, may-alias) }
fused {
  p = f32[64] parameter(0)
  r = f32[64] reverse(p), dimensions={0}
  ROOT d = f32[64] subtract(p, r)
}
ENTRY e {
  w = f32[64] parameter(0)
  g = f32[64] parameter(1)
  w2 = f32[64] fusion(w), kind=kLoop, calls=fused
  n = f32[64] negate(g)
  ROOT t = (f32[64], f32[64]) tuple(w2, n)
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_TRUE(plan.ok()) << plan.message();
  // Writing w2[i] over w[i] would corrupt w[63 - i] before it is read: a final copy moves w2 into w.
  EXPECT_NE(kernelNamed(*plan, "w2").outputs[0], plan->parameters[0].buffer) << planToString(*plan);
  EXPECT_EQ(plan->outputs[0].buffer, plan->parameters[0].buffer);
  EXPECT_EQ(plan->kernels.back().kind, "copy") << planToString(*plan);
}

TEST(ExecutionPlanTest, AliasedOutputGoesDirectlyIntoTheParameterBuffer) {
  auto module = parse(R"(HloModule alias2, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  w = f32[64] parameter(0)
  e1 = f32[64] exponential(w)
  ROOT n = f32[64] negate(e1)
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_EQ(plan->kernels.size(), 2u) << planToString(*plan);
  EXPECT_EQ(kernelNamed(*plan, "n").outputs[0], plan->parameters[0].buffer) << planToString(*plan);
  EXPECT_EQ(plan->outputs[0].buffer, plan->parameters[0].buffer);
}

TEST(ExecutionPlanTest, ParsesInputOutputAlias) {
  auto module = parse(R"(HloModule a, input_output_alias={ {1}: (0, {}, may-alias), {2}: (1, {}, may-alias) }
ENTRY e {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT t = (f32[], f32[], f32[]) tuple(p, p, q)
})");
  StatusOr<std::vector<std::pair<int64_t, int64_t>>> aliases = parseInputOutputAlias(*module);
  ASSERT_TRUE(aliases.ok()) << aliases.message();
  ASSERT_EQ(aliases->size(), 2u);
  EXPECT_EQ((*aliases)[0], std::make_pair(int64_t{1}, int64_t{0}));
  EXPECT_EQ((*aliases)[1], std::make_pair(int64_t{2}, int64_t{1}));
}

TEST(ExecutionPlanTest, TupleParameterIsANamedError) {
  auto module = parse(R"(HloModule t
ENTRY e {
  p = (f32[2], f32[2]) parameter(0)
  ROOT g = f32[2] get-tuple-element(p), index=0
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("p:"), std::string::npos) << plan.message();
}

}  // namespace
}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

// A library fusion with a dot is replaced by its instructions as the cpu preset's fusion groups them; a dot and
// the exp of its result stay two kernels there (the module as the cpu pipeline would leave it).
TEST(ExecutionPlanTest, LibraryFusionsRunAsTheirInstructions) {
  auto module = parse(R"(HloModule lib
fused {
  a = f32[64,64] parameter(0)
  b = f32[64,64] parameter(1)
  d = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[64,64] exponential(d)
}
ENTRY main {
  x = f32[64,64] parameter(0)
  y = f32[64,64] parameter(1)
  ROOT f = f32[64,64] fusion(x, y), kind=kCustom, calls=fused
}
)");
  ASSERT_NE(module, nullptr);
  StatusOr<std::unique_ptr<HloModule>> inlined = inlineLibraryFusions(*module);
  ASSERT_TRUE(inlined.ok()) << inlined.message();
  ASSERT_NE(*inlined, nullptr);
  StatusOr<ExecutionPlan> plan = planExecution(**inlined);
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_EQ(plan->kernels.size(), 2u) << planToString(*plan);
  EXPECT_EQ(plan->kernels[0].kind, "dot");
  EXPECT_EQ(plan->kernels[1].kind, "exponential");
  EXPECT_EQ(plan->outputs.at(0).name, "e");

  auto plain = parse("HloModule p\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n");
  ASSERT_NE(plain, nullptr);
  StatusOr<std::unique_ptr<HloModule>> none = inlineLibraryFusions(*plain);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
}

// A library fusion that is elementwise work and data movement into one reduction (a GP's pairwise distances) compiles
// as one kInput kernel under its own name; one with two reductions (the inner one would be recomputed per element of
// the outer) is replaced by its instructions as our fusion rules group them. Both compute what the evaluator does.
TEST(ExecutionPlanTest, LibraryFusionsOfOurKernelShapesAreOneKernel) {
  constexpr std::string_view kDistances = R"(HloModule distances
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused {
  x = f32[48,3] parameter(0)
  zero = f32[] parameter(1)
  l = f32[48,48,3] broadcast(x), dimensions={0,2}
  r = f32[48,48,3] broadcast(x), dimensions={1,2}
  d = f32[48,48,3] subtract(l, r)
  q = f32[48,48,3] multiply(d, d)
  ROOT s = f32[48,48] reduce(q, zero), dimensions={2}, to_apply=add
}
ENTRY main {
  x = f32[48,3] parameter(0)
  zero = f32[] constant(0)
  ROOT f = f32[48,48] fusion(x, zero), kind=kCustom, calls=fused
}
)";
  auto module = parse(kDistances);
  ASSERT_NE(module, nullptr);
  StatusOr<std::unique_ptr<HloModule>> prepared = inlineLibraryFusions(*module);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  ASSERT_NE(*prepared, nullptr);
  StatusOr<ExecutionPlan> plan = planExecution(**prepared);
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_EQ(plan->kernels.size(), 1u) << planToString(*plan);
  EXPECT_EQ(plan->kernels[0].kind, "kInput");
  EXPECT_EQ(plan->kernels[0].instructionName, "f");
  EXPECT_EQ(testing::compareWithEvaluator(*module), "");

  constexpr std::string_view kTwoReductions = R"(HloModule centred
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused {
  x = f32[64,128] parameter(0)
  zero = f32[] parameter(1)
  m = f32[64] reduce(x, zero), dimensions={1}, to_apply=add
  mb = f32[64,128] broadcast(m), dimensions={0}
  c = f32[64,128] subtract(x, mb)
  q = f32[64,128] multiply(c, c)
  ROOT v = f32[64] reduce(q, zero), dimensions={1}, to_apply=add
}
ENTRY main {
  x = f32[64,128] parameter(0)
  zero = f32[] constant(0)
  ROOT f = f32[64] fusion(x, zero), kind=kCustom, calls=fused
}
)";
  auto two = parse(kTwoReductions);
  ASSERT_NE(two, nullptr);
  StatusOr<std::unique_ptr<HloModule>> inlined = inlineLibraryFusions(*two);
  ASSERT_TRUE(inlined.ok()) << inlined.message();
  ASSERT_NE(*inlined, nullptr);
  StatusOr<ExecutionPlan> twoPlan = planExecution(**inlined);
  ASSERT_TRUE(twoPlan.ok()) << twoPlan.message();
  // Fused by our own rules: the mean's reduction, then one fusion computing the centred squares and their sum (not
  // five kernels).
  ASSERT_EQ(twoPlan->kernels.size(), 2u) << planToString(*twoPlan);
  EXPECT_EQ(twoPlan->kernels[0].kind, "reduce");
  EXPECT_EQ(twoPlan->kernels[1].instruction->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(testing::compareWithEvaluator(*two), "");
}

// A while is one step of the entry's program with its own condition and body programs. The loop state has a
// buffer per tuple element; the body's new tensor (its own temporary) is swapped into the state, not copied, and
// the counter passed through unchanged needs no move at all.
TEST(ExecutionPlanTest, WhileIsAStepWithSubPrograms) {
  auto module = parse(R"(HloModule loop
cond {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[256] get-tuple-element(p), index=1
  e = f32[256] exponential(x)
  ROOT r = (s32[], f32[256]) tuple(i, e)
}
ENTRY e {
  x = f32[256] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[256]) tuple(zero, x)
  w = (s32[], f32[256]) while(t), condition=cond, body=body
  ROOT y = f32[256] get-tuple-element(w), index=1
})");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_TRUE(plan.ok()) << plan.message();
  ASSERT_EQ(plan->steps.size(), 1u) << planToString(*plan);
  const PlanStep& loop = plan->steps[0];
  ASSERT_EQ(loop.kind, PlanStep::Kind::kWhile);
  EXPECT_EQ(loop.instruction, "w");
  ASSERT_EQ(loop.state.size(), 2u);
  ASSERT_EQ(loop.init.size(), 2u);
  EXPECT_EQ(loop.init[1].from, plan->parameters[0].buffer);
  EXPECT_EQ(loop.init[1].to, loop.state[1]);
  ASSERT_EQ(loop.condition.size(), 1u);
  EXPECT_EQ(plan->kernels[static_cast<size_t>(loop.condition[0].kernel)].name, "lt");
  ASSERT_EQ(loop.body.size(), 1u);
  const PlanKernel& exp = plan->kernels[static_cast<size_t>(loop.body[0].kernel)];
  EXPECT_EQ(exp.name, "e");
  EXPECT_EQ(exp.inputs[0], loop.state[1]);  // the body reads its parameter in the state buffers
  ASSERT_EQ(loop.update.size(), 1u) << planToString(*plan);
  EXPECT_EQ(loop.update[0].from, exp.outputs[0]);
  EXPECT_EQ(loop.update[0].to, loop.state[1]);
  EXPECT_TRUE(loop.update[0].swap);
  EXPECT_EQ(plan->outputs[0].buffer, loop.state[1]);
  EXPECT_EQ(firstControlFlowStep(*plan), &loop);
  EXPECT_NE(planToString(*plan).find("while w"), std::string::npos);
}

// Calls are not planned (CpuExecutable::compile inlines them first, as inlineLibraryFusions does).
TEST(ExecutionPlanTest, CallsAreInlinedBeforePlanning) {
  auto module = parse(R"(HloModule calls
twice {
  p = f32[8] parameter(0)
  ROOT a = f32[8] add(p, p)
}
ENTRY e {
  x = f32[8] parameter(0)
  ROOT c = f32[8] call(x), to_apply=twice
})");
  StatusOr<ExecutionPlan> direct = planExecution(*module);
  ASSERT_FALSE(direct.ok());
  EXPECT_NE(direct.message().find("c: call is not lowered"), std::string::npos) << direct.message();
  StatusOr<std::unique_ptr<HloModule>> inlined = inlineLibraryFusions(*module);
  ASSERT_TRUE(inlined.ok()) << inlined.message();
  ASSERT_NE(*inlined, nullptr);
  StatusOr<ExecutionPlan> plan = planExecution(**inlined);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->kernels.size(), 1u) << planToString(*plan);
}

// A scan's dynamic-update-slice in the loop body writes its row into the state buffer it updates (nothing reads the
// old value after it): no copy of the whole output per trip, and no move after the body. When the old value is
// still read afterwards, the update gets a buffer of its own.
TEST(ExecutionPlanTest, LoopBodyUpdatesItsStateInPlace) {
  const char* kText = R"(HloModule scan
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
body {
  p = (s32[], f32[16,32], f32[32]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  out = f32[16,32] get-tuple-element(p), index=1
  h = f32[32] get-tuple-element(p), index=2
  row = f32[1,32] reshape(h)
  zero = s32[] constant(0)
  nout = f32[16,32] dynamic-update-slice(out, row, i, zero)
  READ_OLD
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  ROOT r = (s32[], f32[16,32], f32[32]) tuple(ni, nout, NEW_H)
}
cond {
  p = (s32[], f32[16,32], f32[32]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(16)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  h = f32[32] parameter(0)
  out = f32[16,32] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[16,32], f32[32]) tuple(zero, out, h)
  ROOT w = (s32[], f32[16,32], f32[32]) while(init), condition=cond, body=body
})";
  auto planFor = [&](const std::string& readOld, const std::string& newH) {
    std::string text = kText;
    text.replace(text.find("READ_OLD"), 8, readOld);
    text.replace(text.find("NEW_H"), 5, newH);
    auto module = parse(text);
    StatusOr<ExecutionPlan> plan = planExecution(*module);
    EXPECT_TRUE(plan.ok()) << plan.message();
    return plan.ok() ? *plan : ExecutionPlan{};
  };
  const ExecutionPlan inPlace = planFor("", "h");
  ASSERT_EQ(inPlace.steps.size(), 1u) << planToString(inPlace);
  const PlanStep& loop = inPlace.steps[0];
  const PlanKernel& update = kernelNamed(inPlace, "nout");
  EXPECT_EQ(update.updatedInput, 0);
  EXPECT_EQ(update.outputs[0], loop.state[1]) << planToString(inPlace);
  EXPECT_EQ(update.inputs[0], loop.state[1]);
  EXPECT_EQ(update.bytesWritten, 32 * 4);
  for (const PlanMove& move : loop.update) EXPECT_NE(move.to, loop.state[1]) << planToString(inPlace);

  // The old value is summed after the update: the update may not overwrite it.
  const ExecutionPlan copied = planFor(
      "z = f32[] constant(0)\n  total = f32[] reduce(out, z), dimensions={0,1}, to_apply=add\n"
      "  bt = f32[32] broadcast(total), dimensions={}\n  nh = f32[32] add(h, bt)",
      "nh");
  ASSERT_EQ(copied.steps.size(), 1u) << planToString(copied);
  const PlanKernel& notInPlace = kernelNamed(copied, "nout");
  EXPECT_EQ(notInPlace.updatedInput, -1);
  EXPECT_NE(notInPlace.outputs[0], copied.steps[0].state[1]) << planToString(copied);
}

}  // namespace
}  // namespace fusionscope::core
