#include "core/passes/float_normalization.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::parseOrFail;

// Runs the pass on `text` and checks the evaluator gives the same bits before and after (the pass only changes
// where bf16 values are computed, never what they are).
std::unique_ptr<HloModule> normalizeAndCompare(const std::string& text) {
  auto original = parseOrFail(text);
  auto module = parseOrFail(text);
  FloatNormalization pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  testing::expectSameResults(*original, *module, 7);
  return module;
}

TEST(FloatNormalizationTest, Bf16ArithmeticRunsInF32BetweenConverts) {
  auto module = normalizeAndCompare(R"(
HloModule m
ENTRY main {
  a = bf16[16,32] parameter(0)
  b = bf16[16,32] parameter(1)
  m = bf16[16,32] multiply(a, b)
  ROOT e = bf16[16,32] exponential(m)
}
)");
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kConvert) << printModule(*module);
  EXPECT_EQ(root->shape().elementType(), PrimitiveType::kBF16);
  const HloInstruction* exp = root->operand(0);
  EXPECT_EQ(exp->opcode(), HloOpcode::kExp);
  EXPECT_EQ(exp->shape().elementType(), PrimitiveType::kF32);
  for (const auto& inst : module->entry()->instructions()) {
    const bool bf16 = inst->shape().isArray() && inst->shape().elementType() == PrimitiveType::kBF16;
    if (bf16) {
      EXPECT_TRUE(inst->opcode() == HloOpcode::kParameter || inst->opcode() == HloOpcode::kConvert)
          << inst->name() << " still computes in bf16";
    }
  }
}

// A bf16 reduction reduces with an f32 clone of its reducer that rounds each step to bf16, so its sums are the
// same bits; the original reducer is left for anything else that calls it.
TEST(FloatNormalizationTest, Bf16ReductionsGetAnF32ReducerThatRoundsEachStep) {
  auto module = normalizeAndCompare(R"(
HloModule m
add {
  x = bf16[] parameter(0)
  y = bf16[] parameter(1)
  ROOT s = bf16[] add(x, y)
}
ENTRY main {
  a = bf16[8,300] parameter(0)
  zero = bf16[] constant(0)
  ROOT r = bf16[8] reduce(a, zero), dimensions={1}, to_apply=add
}
)");
  const HloInstruction* reduce = module->entry()->root()->operand(0);
  ASSERT_EQ(reduce->opcode(), HloOpcode::kReduce) << printModule(*module);
  EXPECT_EQ(reduce->shape().elementType(), PrimitiveType::kF32);
  const HloComputation* reducer = reduce->toApply();
  ASSERT_NE(reducer, nullptr);
  EXPECT_NE(reducer->name(), "add");
  EXPECT_EQ(reducer->root()->opcode(), HloOpcode::kConvert) << "each step rounded to bf16 and back";
  EXPECT_EQ(reducer->root()->shape().elementType(), PrimitiveType::kF32);
}

TEST(FloatNormalizationTest, ModulesWithoutBf16AreLeftAlone) {
  testing::expectUnchanged<FloatNormalization>(R"(
HloModule m
ENTRY main {
  a = f32[16] parameter(0)
  h = f16[16] convert(a)
  n = f16[16] negate(h)
  ROOT c = bf16[16] convert(n)
}
)");
}

TEST(FloatNormalizationTest, RealBf16ModuleVerifiesAndIsIdempotent) {
  testing::expectVerifiedAndIdempotent<FloatNormalization>(std::string(FS_SOURCE_DIR) +
                                                          "/tests/data/xla/modules/bf16_block_adamw.before.txt");
}

}  // namespace
}  // namespace fusionscope::core
