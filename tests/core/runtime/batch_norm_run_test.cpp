// Batch norms on the CPU backend: `run` expands them (batch-norm-expander) whatever pipeline ran, and the
// expansion computes what the evaluator's batch-norm ops compute.
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/codegen/codegen_preparation.h"
#include "core/codegen/execution_plan.h"
#include "core/ir/hlo_computation.h"
#include "core/text/hlo_parser.h"
#include "tests/core/testing/codegen_testing.h"
#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

// Training on [N, C, H, W] (feature_index=1, PyTorch's layout), inference and grad on [N, H, W, C] with the
// feature in the middle (feature_index=2); the variances handed to inference and grad are squares plus a
// half, so rsqrt sees a positive value whatever the random arguments are.
constexpr std::string_view kBatchNorms = R"(HloModule bn
ENTRY e {
  x = f32[4,3,5,6] parameter(0)
  scale = f32[3] parameter(1)
  offset = f32[3] parameter(2)
  z = f32[2,5,6,4] parameter(3)
  zscale = f32[6] parameter(4)
  zoffset = f32[6] parameter(5)
  zmean = f32[6] parameter(6)
  zv = f32[6] parameter(7)
  dz = f32[2,5,6,4] parameter(8)
  train = (f32[4,3,5,6], f32[3], f32[3]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
  y = f32[4,3,5,6] get-tuple-element(train), index=0
  mean = f32[3] get-tuple-element(train), index=1
  var = f32[3] get-tuple-element(train), index=2
  half = f32[] constant(0.5)
  halves = f32[6] broadcast(half), dimensions={}
  zsq = f32[6] multiply(zv, zv)
  zvar = f32[6] add(zsq, halves)
  infer = f32[2,5,6,4] batch-norm-inference(z, zscale, zoffset, zmean, zvar), epsilon=0.0001, feature_index=2
  grad = (f32[2,5,6,4], f32[6], f32[6]) batch-norm-grad(z, zscale, zmean, zvar, dz), epsilon=0.001, feature_index=2
  gz = f32[2,5,6,4] get-tuple-element(grad), index=0
  gscale = f32[6] get-tuple-element(grad), index=1
  goffset = f32[6] get-tuple-element(grad), index=2
  ROOT t = (f32[4,3,5,6], f32[3], f32[3], f32[2,5,6,4], f32[2,5,6,4], f32[6], f32[6]) tuple(y, mean, var, infer, gz, gscale, goffset)
})";

TEST(BatchNormRunTest, TrainingInferenceAndGradMatchTheEvaluator) {
  // Unfused (`run --pipeline=none`: CpuExecutable expands them) and through both presets (the pass runs first).
  testing::expectAllAgree(kBatchNorms);
}

TEST(BatchNormRunTest, ABatchNormAtTheRootRunsAsItsTuple) {
  testing::expectAllAgree(R"(HloModule bnroot
ENTRY e {
  x = f32[16,8] parameter(0)
  scale = f32[16] parameter(1)
  offset = f32[16] parameter(2)
  ROOT train = (f32[16,8], f32[16], f32[16]) batch-norm-training(x, scale, offset), epsilon=1e-05, feature_index=0
})");
}

// MobileNet v2's PyTorch/XLA training step (52 batch-norm-training and 52 batch-norm-grad): after the expansion
// nothing in it is refused by name while planning. Not compiled here (2,000 kernels, 38M-element activations).
TEST(BatchNormRunTest, MobileNetTrainingStepPlansAfterTheExpansion) {
  const std::filesystem::path path = testing::corpusDir() / "hlo" / "model_mobilenet_v2_torchxla_train.hlo";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModuleFile(path.string());
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<std::unique_ptr<HloModule>> prepared = prepareForCodegen(**module);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  ASSERT_NE(*prepared, nullptr);
  StatusOr<ExecutionPlan> plan = planExecution(**prepared);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_GT(plan->kernels.size(), 1000u);
}

}  // namespace
}  // namespace fusionscope::core
