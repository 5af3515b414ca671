// batch-norm-expander: batch-norm-training/-inference/-grad become reductions, broadcasts and elementwise ops, as
// XLA's BatchNormExpander writes them, and compute what the evaluator computes for the batch-norm ops.
#include "core/passes/batch_norm_expander.h"

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_clone.h"
#include "core/ir/hlo_computation.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::countOpcode;

// feature_index=1 of [N, C, H, W] (PyTorch's layout, not the last dimension); the variance given to inference
// and grad is a square plus one, so rsqrt sees a positive value whatever the random arguments are.
constexpr std::string_view kBatchNorms = R"(
HloModule m
ENTRY main {
  x = f32[3,4,2,5]{3,2,1,0} parameter(0)
  scale = f32[4]{0} parameter(1)
  offset = f32[4]{0} parameter(2)
  dy = f32[3,4,2,5]{3,2,1,0} parameter(3)
  train = (f32[3,4,2,5]{3,2,1,0}, f32[4]{0}, f32[4]{0}) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
  y = f32[3,4,2,5]{3,2,1,0} get-tuple-element(train), index=0
  mean = f32[4]{0} get-tuple-element(train), index=1
  v = f32[4]{0} get-tuple-element(train), index=2
  one = f32[] constant(1)
  ones = f32[4]{0} broadcast(one), dimensions={}
  sq = f32[4]{0} multiply(offset, offset)
  var = f32[4]{0} add(sq, ones)
  infer = f32[3,4,2,5]{3,2,1,0} batch-norm-inference(x, scale, offset, mean, var), epsilon=0.01, feature_index=1
  grad = (f32[3,4,2,5]{3,2,1,0}, f32[4]{0}, f32[4]{0}) batch-norm-grad(x, scale, mean, var, dy), epsilon=0.001, feature_index=1
  gx = f32[3,4,2,5]{3,2,1,0} get-tuple-element(grad), index=0
  gs = f32[4]{0} get-tuple-element(grad), index=1
  go = f32[4]{0} get-tuple-element(grad), index=2
  ROOT out = (f32[3,4,2,5]{3,2,1,0}, f32[4]{0}, f32[4]{0}, f32[3,4,2,5]{3,2,1,0}, f32[3,4,2,5]{3,2,1,0}, f32[4]{0}, f32[4]{0}) tuple(y, mean, v, infer, gx, gs, go)
}
)";

bool expand(HloModule& module) {
  BatchNormExpander pass;
  return testing::runPass(pass, module);
}

TEST(BatchNormExpanderTest, ExpandsEveryBatchNormIntoReductionsAndElementwiseOps) {
  auto module = testing::parseOrFail(kBatchNorms);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(expand(*module));
  const HloComputation& entry = *module->entry();
  const std::string text = printModule(*module);
  for (HloOpcode opcode : {HloOpcode::kBatchNormTraining, HloOpcode::kBatchNormInference, HloOpcode::kBatchNormGrad}) {
    EXPECT_EQ(countOpcode(entry, opcode), 0) << text;
  }
  // Training: Σx and Σx²; grad: Σdy and Σ(dy·(x − mean)); inference reduces nothing.
  EXPECT_EQ(countOpcode(entry, HloOpcode::kReduce), 4) << text;
  // rsqrt(var + ε): once in training and inference; twice in grad (per feature for grad_scale, per element for
  // grad_x), as XLA writes it.
  EXPECT_EQ(countOpcode(entry, HloOpcode::kRsqrt), 4) << text;

  const HloInstruction* train = testing::entryInstruction(*module, "y")->operand(0);
  ASSERT_EQ(train->opcode(), HloOpcode::kTuple) << text;
  EXPECT_EQ(train->operand(0)->opcode(), HloOpcode::kAdd);       // normalized * scale + offset
  EXPECT_EQ(train->operand(1)->opcode(), HloOpcode::kDivide);    // Σx / N
  EXPECT_EQ(train->operand(2)->opcode(), HloOpcode::kSubtract);  // E[x²] − E[x]²
  const HloInstruction* sum = train->operand(1)->operand(0);
  ASSERT_EQ(sum->opcode(), HloOpcode::kReduce);
  EXPECT_EQ(sum->attributes().dimensions, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(sum->operand(0)->name(), "x");
  EXPECT_EQ(sum->shape().toString(), "f32[4]{0}");
  // The mean is Σx divided by the 30 elements of each feature.
  EXPECT_NE(text.find("f32[] constant(30)"), std::string::npos) << text;

  // Every scale and offset reaches the [N, C, H, W] shape along dimension 1.
  for (const auto& inst : entry.instructions()) {
    if (inst->opcode() == HloOpcode::kBroadcast && inst->operand(0)->shape().rank() == 1 && inst->shape().rank() == 4) {
      EXPECT_EQ(inst->attributes().dimensions, (std::vector<int64_t>{1})) << inst->name();
    }
  }
  // One add reducer serves every sum.
  const HloComputation* reducer = sum->toApply();
  ASSERT_NE(reducer, nullptr);
  EXPECT_EQ(reducer->root()->opcode(), HloOpcode::kAdd);
  for (const auto& inst : entry.instructions()) {
    if (inst->opcode() == HloOpcode::kReduce) {
      EXPECT_EQ(inst->toApply(), reducer);
    }
  }
}

TEST(BatchNormExpanderTest, ExpansionComputesWhatTheEvaluatorComputesForBatchNorms) {
  auto module = testing::parseOrFail(kBatchNorms);
  ASSERT_NE(module, nullptr);
  std::unique_ptr<HloModule> expanded = cloneModule(*module);
  ASSERT_TRUE(expand(*expanded));
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::vector<Value> arguments = randomArguments(*module, seed);
    StatusOr<EvalResult> before = evaluateModule(*module, arguments);
    ASSERT_TRUE(before.ok()) << before.message();
    StatusOr<EvalResult> after = evaluateModule(*expanded, arguments);
    ASSERT_TRUE(after.ok()) << after.message();
    EXPECT_EQ(compareValues(before->result, after->result), "") << printModule(*expanded);
  }
}

TEST(BatchNormExpanderTest, ARootBatchNormIsReplacedByItsTuple) {
  auto module = testing::parseOrFail(R"(
HloModule m
ENTRY main {
  x = f32[6,3]{1,0} parameter(0)
  scale = f32[6]{0} parameter(1)
  offset = f32[6]{0} parameter(2)
  ROOT train = (f32[6,3]{1,0}, f32[6]{0}, f32[6]{0}) batch-norm-training(x, scale, offset), epsilon=1e-05, feature_index=0
}
)");
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(expand(*module));
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kTuple) << printModule(*module);
  EXPECT_EQ(root->shape().toString(), "(f32[6,3]{1,0}, f32[6]{0}, f32[6]{0})");
  EXPECT_EQ(root->operand(1)->operand(0)->attributes().dimensions, (std::vector<int64_t>{1}));
}

TEST(BatchNormExpanderTest, ModulesWithoutBatchNormsAreLeftAlone) {
  testing::expectUnchanged<BatchNormExpander>(R"(
HloModule m
ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT r = f32[4]{0} rsqrt(x)
}
)");
}

TEST(BatchNormExpanderTest, MobileNetTrainingStepHasNoBatchNormLeft) {
  const std::filesystem::path path = testing::corpusDir() / "hlo" / "model_mobilenet_v2_torchxla_train.hlo";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  std::unique_ptr<HloModule> result;
  testing::expectVerifiedAndIdempotent<BatchNormExpander>(path.string(), &result);
  ASSERT_NE(result, nullptr);
  for (const auto& computation : result->computations()) {
    for (const auto& inst : computation->instructions()) {
      EXPECT_NE(inst->opcode(), HloOpcode::kBatchNormTraining) << inst->name();
      EXPECT_NE(inst->opcode(), HloOpcode::kBatchNormGrad) << inst->name();
    }
  }
}

}  // namespace
}  // namespace fusionscope::core
