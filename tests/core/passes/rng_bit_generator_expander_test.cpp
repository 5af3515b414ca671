// rng-bit-generator-expander: every generator becomes elementwise HLO that computes XLA's numbers bit for bit
// (tests/data/rng/vectors.json through the evaluator), and the presets fuse a generator into its consumer.
#include "core/passes/rng_bit_generator_expander.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_computation.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"
#include "tests/core/testing/preset_testing.h"
#include "tests/core/testing/rng_vectors.h"

namespace fusionscope::core {
namespace {

using testing::countOpcode;

TEST(RngBitGeneratorExpanderTest, ExpansionComputesXlasNumbers) {
  for (const testing::RngVector& v : testing::loadRngVectors()) {
    std::unique_ptr<HloModule> module = testing::parseOrFail(v.module());
    ASSERT_NE(module, nullptr);
    RngBitGeneratorExpander pass;
    ASSERT_TRUE(testing::runPass(pass, *module)) << v.label();
    EXPECT_EQ(countOpcode(*module, HloOpcode::kRngBitGenerator), 0) << v.label();
    StatusOr<EvalResult> result = evaluateModule(*module, {v.stateValue()});
    ASSERT_TRUE(result.ok()) << v.label() << ": " << result.message();
    EXPECT_EQ(v.mismatch(result->result), "") << v.label() << "\n" << printModule(*module);
  }
}

TEST(RngBitGeneratorExpanderTest, ModulesWithoutGeneratorsAreLeftAlone) {
  testing::expectUnchanged<RngBitGeneratorExpander>(
      "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n");
}

TEST(RngBitGeneratorExpanderTest, BadGeneratorsAreRefusedByName) {
  std::unique_ptr<HloModule> module = testing::parseOrFail(
      "HloModule m\nENTRY e {\n  s = u64[2] parameter(0)\n  ROOT bits = (u64[2], f32[8]) rng-bit-generator(s), "
      "algorithm=rng_three_fry\n}\n");
  ASSERT_NE(module, nullptr);
  PassContext context;
  StatusOr<bool> changed = RngBitGeneratorExpander().run(*module, context);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.message(), "bits: generates integers of 8 to 64 bits, not f32");
}

// Dropout as jax.random with the `rbg` implementation writes it: bits, a uniform float from their top 23 bits,
// keep where it is below 0.9, with layouts as JAX writes them. Both presets leave one kernel for the generator and the
// dropout together, and the fused module computes what the generator computed.
constexpr std::string_view kDropout = R"(
HloModule dropout
ENTRY e {
  s = u64[2] parameter(0)
  x = f32[64,128] parameter(1)
  rng = (u64[2]{0}, u32[64,128]{1,0}) rng-bit-generator(s), algorithm=rng_default
  bits = u32[64,128]{1,0} get-tuple-element(rng), index=1
  nine = u32[] constant(9)
  nines = u32[64,128] broadcast(nine), dimensions={}
  mantissa = u32[64,128] shift-right-logical(bits, nines)
  one_bits = u32[] constant(1065353216)
  ones_bits = u32[64,128] broadcast(one_bits), dimensions={}
  float_bits = u32[64,128] or(mantissa, ones_bits)
  f = f32[64,128] bitcast-convert(float_bits)
  one = f32[] constant(1)
  ones = f32[64,128] broadcast(one), dimensions={}
  u = f32[64,128] subtract(f, ones)
  p = f32[] constant(0.9)
  ps = f32[64,128] broadcast(p), dimensions={}
  keep = pred[64,128] compare(u, ps), direction=LT
  scaled = f32[64,128] divide(x, ps)
  zero = f32[] constant(0)
  zeros = f32[64,128] broadcast(zero), dimensions={}
  y = f32[64,128] select(keep, scaled, zeros)
  state = u64[2]{0} get-tuple-element(rng), index=0
  ROOT out = (u64[2], f32[64,128]) tuple(state, y)
}
)";

TEST(RngBitGeneratorExpanderTest, PresetsFuseTheGeneratorIntoItsConsumer) {
  for (const char* preset : {"cpu", "gpu"}) {
    std::unique_ptr<HloModule> module = testing::parseOrFail(kDropout);
    ASSERT_NE(module, nullptr);
    const std::vector<Value> arguments = randomArguments(*module, 3);
    StatusOr<EvalResult> before = evaluateModule(*module, arguments);
    ASSERT_TRUE(before.ok()) << before.message();
    StatusOr<PipelineRun> run = testing::runPreset(*module, preset);
    ASSERT_TRUE(run.ok()) << run.message();
    EXPECT_EQ(countOpcode(*module, HloOpcode::kRngBitGenerator), 0) << preset;
    int64_t bigFusions = 0;
    for (const auto& inst : module->entry()->instructions()) {
      bigFusions += inst->opcode() == HloOpcode::kFusion && inst->shape().isArray() && inst->shape().elementCount() > 4;
    }
    EXPECT_EQ(bigFusions, 1) << preset << "\n" << printModule(*module);
    StatusOr<EvalResult> after = evaluateModule(*module, arguments);
    ASSERT_TRUE(after.ok()) << after.message();
    // The same state and mask; kept values within rounding (the cpu preset divides through a reciprocal).
    EXPECT_EQ(after->result.tupleElement(0).toString(0), before->result.tupleElement(0).toString(0)) << preset;
    const Value& want = before->result.tupleElement(1);
    const Value& got = after->result.tupleElement(1);
    int dropped = 0;
    for (int64_t i = 0; i < want.elementCount(); ++i) {
      ASSERT_EQ(got.doubleAt(i) == 0, want.doubleAt(i) == 0) << preset << " element " << i;
      ASSERT_NEAR(got.doubleAt(i), want.doubleAt(i), 1e-6) << preset << " element " << i;
      dropped += want.doubleAt(i) == 0;
    }
    EXPECT_GT(dropped, want.elementCount() / 20) << "about a tenth is dropped";
    EXPECT_LT(dropped, want.elementCount() / 5) << "about a tenth is dropped";
  }
}

}  // namespace
}  // namespace fusionscope::core
