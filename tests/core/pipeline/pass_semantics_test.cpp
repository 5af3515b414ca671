// The property the whole product rests on: no pass changes what a module computes. Every registered pass
// alone, and the gpu and cpu pipelines, run on every sample and corpus module the evaluator can afford;
// each stage is evaluated on seeded random inputs and compared with stage 0 (core/eval tolerances).
#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage_check.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

// The evaluator's budget per evaluation (testing::kEvaluationBudget). Checking every pass alone evaluates two stages
// for each of about 40 passes (30-50 s for a 1e8-operation module in the dev build), so it takes modules up to 6e7
// operations; bigger ones are checked by the pipeline tests below, which run every pass too. The pipelines take the
// whole budget in the dev build; under the sanitizers the limits are the ones the suite always had there.
constexpr int64_t kMaxWork = 60'000'000;
constexpr int64_t kMaxWorkPipeline = testing::kSanitizedBuild ? 60'000'000 : testing::kEvaluationBudget;
constexpr int64_t kMaxWorkGpuPipeline = testing::kSanitizedBuild ? 1'000'000'000 : testing::kEvaluationBudget;
// Above this, one input set instead of two.
constexpr int64_t kTwoSeedsBelow = 60'000'000;

class PassSemanticsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<HloModule>> parsed = parseHloModuleFile(GetParam());
    ASSERT_TRUE(parsed.ok()) << parsed.message();
    m_module = std::move(*parsed);
    if (Status evaluable = checkEvaluable(*m_module); !evaluable.ok()) {
      GTEST_SKIP() << "the evaluator cannot run this module: " << evaluable.message();
    }
    m_work = estimateEvaluationWork(*m_module);
  }

  bool tooExpensive(int64_t limit) const { return m_work > limit; }
  std::vector<uint64_t> seeds() const {
    return m_work > kTwoSeedsBelow ? std::vector<uint64_t>{1} : std::vector<uint64_t>{1, 2};
  }

  // Runs `spec` on a copy of the module and checks every stage against stage 0 on two input sets.
  void expectStagesAgree(const PipelineSpec& spec, const std::string& what, std::vector<uint64_t> seeds = {1, 2}) {
    std::unique_ptr<HloModule> module = cloneModule(*m_module);
    StatusOr<std::unique_ptr<PassPipeline>> pipeline = buildPipeline(spec);
    ASSERT_TRUE(pipeline.ok()) << pipeline.message();
    PassContext context(fusionConfigFor(backendFor(spec)));
    RunOptions options;
    options.checkPasses = true;
    StatusOr<PipelineRun> run = runPipeline(**pipeline, *module, context, options);
    ASSERT_TRUE(run.ok()) << what << ": " << run.message();
    for (uint64_t seed : seeds) {
      StatusOr<std::vector<StageCheck>> checks = checkStagesAgree(*run, seed);
      ASSERT_TRUE(checks.ok()) << what << ": " << checks.message();
      for (const StageCheck& check : *checks) {
        EXPECT_TRUE(check.agrees) << what << ", stage " << check.stage << " [" << check.label << "], seed " << seed
                                  << ": " << check.error << check.difference
                                  << "; first differing instruction: " << check.instruction << "\n"
                                  << printModule(*run->stages[static_cast<size_t>(check.stage)].module);
      }
    }
  }

  std::unique_ptr<HloModule> m_module;
  int64_t m_work = 0;
};

#define FS_SKIP_IF_ABOVE(limit)                                                                                \
  if (tooExpensive(limit)) {                                                                                   \
    GTEST_SKIP() << testing::tooExpensiveToInterpret(m_work, limit);                                           \
  }

TEST_P(PassSemanticsTest, EveryPassAloneKeepsTheResults) {
  if (tooExpensive(kMaxWork)) {
    GTEST_SKIP() << testing::tooExpensiveToInterpret(m_work, kMaxWork)
                 << ": each pass alone is too slow here; the pipeline tests run every pass on it within their budget";
  }
  for (const PassInfo& info : registeredPasses()) {
    PipelineSpec spec;
    spec.passes = {info.name};
    expectStagesAgree(spec, "pass " + info.name, seeds());
  }
}

TEST_P(PassSemanticsTest, GpuPipelineKeepsTheResults) {
  FS_SKIP_IF_ABOVE(kMaxWorkGpuPipeline);
  PipelineSpec spec;
  spec.preset = "gpu";
  expectStagesAgree(spec, "gpu pipeline", seeds());
}

TEST_P(PassSemanticsTest, CpuPipelineKeepsTheResults) {
  FS_SKIP_IF_ABOVE(kMaxWorkPipeline);
  PipelineSpec spec;
  spec.preset = "cpu";
  expectStagesAgree(spec, "cpu pipeline", seeds());
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, PassSemanticsTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });

TEST(PassSemanticsCorpus, CorpusIsPresent) {
  if (!testing::sharedCorpusPresent()) {
    GTEST_SKIP() << "corpus not found at " << testing::corpusDir() << ": only the samples were checked";
  }
  EXPECT_GE(testing::corpusHloFiles().size(), 10u);
}

// The check itself must be able to fail: a deliberately wrong "pass" (negate swapped for abs) is caught
// at the right stage and instruction.
TEST(StageCheckTest, ReportsTheFirstStageAndInstructionThatDiffer) {
  auto parsed = parseHloModule(R"(
HloModule wrong
ENTRY main {
  p0 = f32[4]{0} parameter(0)
  n = f32[4]{0} negate(p0)
  ROOT e = f32[4]{0} exponential(n)
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  PipelineRun run;
  Stage first;
  first.module = cloneModule(**parsed);
  run.stages.push_back(std::move(first));
  std::unique_ptr<HloModule> broken = cloneModule(**parsed);
  HloInstruction* n = broken->entry()->findInstruction("n");
  // Swap the opcode by rebuilding the instruction as abs under the same name.
  HloInstruction* replacement =
      broken->entry()->addInstruction("abs", HloOpcode::kAbs, n->shape(), {broken->entry()->findInstruction("p0")});
  n->replaceAllUsesWith(replacement);
  ASSERT_TRUE(broken->entry()->removeInstruction(n).ok());
  ASSERT_TRUE(broken->entry()->renameInstruction(replacement, "n").ok());
  ASSERT_TRUE(broken->entry()->sortInPostOrder().ok());
  Stage second;
  second.index = 1;
  second.pass = "wrong";
  second.module = std::move(broken);
  run.stages.push_back(std::move(second));

  StatusOr<std::vector<StageCheck>> checks = checkStagesAgree(run, 7);
  ASSERT_TRUE(checks.ok()) << checks.message();
  ASSERT_EQ(checks->size(), 2u);
  EXPECT_TRUE((*checks)[0].agrees);
  EXPECT_FALSE((*checks)[1].agrees);
  EXPECT_NE((*checks)[1].difference.find("element"), std::string::npos) << (*checks)[1].difference;
  EXPECT_EQ((*checks)[1].instruction.rfind("n (", 0), 0u) << (*checks)[1].instruction;
}

TEST(StageCheckTest, UnsupportedOpcodeIsNamed) {
  auto parsed = parseHloModule(R"(
HloModule unsupported
ENTRY main {
  p0 = f32[4]{0} parameter(0)
  ROOT c = f32[4]{0} custom-call(p0), custom_call_target="MyKernel"
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  PipelineRun run;
  Stage first;
  first.module = std::move(*parsed);
  run.stages.push_back(std::move(first));
  StatusOr<std::vector<StageCheck>> checks = checkStagesAgree(run, 1);
  ASSERT_FALSE(checks.ok());
  EXPECT_NE(checks.message().find("custom-call MyKernel"), std::string::npos) << checks.message();
}

}  // namespace
}  // namespace fusionscope::core
