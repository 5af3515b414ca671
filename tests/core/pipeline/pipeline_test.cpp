#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/ir/hlo_verifier.h"
#include "core/passes/fusion_utils.h"
#include "core/pipeline/pass_pipeline.h"
#include "core/pipeline/stage.h"
#include "core/pipeline/stages_json.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::parseOrFail;

constexpr std::string_view kModule = R"(
HloModule m

ENTRY main {
  p0 = f32[4]{0} parameter(0)
  e = f32[4]{0} exponential(p0)
  n = f32[4]{0} negate(e)
  ROOT a = f32[4]{0} abs(n)
}
)";

// Test passes with known effects.
class NoopPass : public HloPass {
 public:
  explicit NoopPass(std::string name = "noop") : m_name(std::move(name)) {}
  std::string_view name() const override { return m_name; }
  StatusOr<bool> run(HloModule&, PassContext& context) override {
    context.record({std::string(m_name), "main", "x", "y", false, "", std::nullopt, 0, "nothing to do"});
    return false;
  }

 private:
  std::string m_name;
};

// Fuses the root and its operand chain, one producer per run (so a fixed point needs several rounds).
class FuseOneStep : public HloPass {
 public:
  std::string_view name() const override { return "fuse-one"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override {
    HloComputation& entry = *module.entry();
    HloInstruction* root = entry.root();
    if (!root->isFusion()) {
      wrapInFusion(root, FusionKind::kLoop);
      return true;
    }
    for (HloInstruction* operand : root->operands()) {
      if (operand->opcode() == HloOpcode::kParameter) continue;
      std::string producer = operand->name();
      StatusOr<HloInstruction*> fused = fuseProducer(root, operand);
      if (!fused.ok()) return fused.status();
      context.record(
          {"fuse-one", "main", producer, root->name(), true, root->name(), FusionKind::kLoop, 32, "fused " + producer});
      return true;
    }
    return false;
  }
};

// Says it changed the module but did not.
class ClaimsChange : public HloPass {
 public:
  std::string_view name() const override { return "claims-change"; }
  StatusOr<bool> run(HloModule&, PassContext&) override { return true; }
};

// Changes the module but says it did not.
class HidesChange : public HloPass {
 public:
  std::string_view name() const override { return "hides-change"; }
  StatusOr<bool> run(HloModule& module, PassContext&) override {
    module.entry()->root()->mutableAttributes().raw.emplace_back("hidden", "1");
    return false;
  }
};

// Breaks the module (wrong shape) and reports it.
class BreaksModule : public HloPass {
 public:
  std::string_view name() const override { return "breaks"; }
  StatusOr<bool> run(HloModule& module, PassContext&) override {
    module.entry()->root()->mutableShape() = Shape(PrimitiveType::kF32, {5});
    return true;
  }
};

RunOptions checked() {
  RunOptions options;
  options.checkPasses = true;
  return options;
}

TEST(PipelineTest, StagesAtStartAndAfterEveryChangingPass) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  pipeline.addPass(std::make_unique<NoopPass>("first"));
  pipeline.addPass(std::make_unique<FuseOneStep>());
  pipeline.addPass(std::make_unique<NoopPass>("last"));
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_TRUE(run.ok()) << run.message();
  ASSERT_EQ(run->stages.size(), 2u);
  EXPECT_EQ(run->stages[0].label(), "pipeline start, before first");
  EXPECT_EQ(run->stages[1].label(), "after fuse-one, before last");
  EXPECT_EQ(run->stages[1].passPath, "test/fuse-one");
  EXPECT_EQ(run->stages[0].fusionCount, 0);
  EXPECT_EQ(run->stages[1].fusionCount, 1);
  ASSERT_EQ(run->passes.size(), 3u);
  EXPECT_FALSE(run->passes[0].changed);
  EXPECT_EQ(run->passes[0].stage, -1);
  EXPECT_EQ(run->passes[0].decisions.size(), 1u);
  EXPECT_EQ(run->passes[1].stage, 1);
  // Snapshots are independent of the module the pipeline keeps changing.
  EXPECT_EQ(run->stages[0].module->entry()->root()->opcode(), HloOpcode::kAbs);
  EXPECT_EQ(module->entry()->root()->opcode(), HloOpcode::kFusion);
}

TEST(PipelineTest, FixedPointRepeatsUntilNothingChanges) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  auto inner = std::make_unique<PassPipeline>("loop");
  inner->addPass(std::make_unique<FuseOneStep>());
  inner->setFixedPoint(10);
  pipeline.addPass(std::move(inner));
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_TRUE(run.ok()) << run.message();
  // wrap abs, fuse negate, fuse exponential: three stages after the start, then a round with no change.
  ASSERT_EQ(run->stages.size(), 4u);
  EXPECT_EQ(run->passes.size(), 4u);
  EXPECT_EQ(run->stages[3].label(), "after fuse-one, before fuse-one");
  EXPECT_EQ(run->stages[3].passPath, "loop/fuse-one");
  ASSERT_EQ(run->stages[3].fusions.size(), 1u);
  EXPECT_EQ(run->stages[3].fusions[0].members, (std::vector<std::string>{"e", "n", "a"}));
  EXPECT_EQ(run->stages[3].decisions.size(), 1u);
  EXPECT_EQ(run->stages[3].decisions[0].producer, "e");
}

TEST(PipelineTest, ChangesNameWhatWentIntoWhichFusion) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  auto inner = std::make_unique<PassPipeline>("loop");
  inner->addPass(std::make_unique<FuseOneStep>());
  inner->setFixedPoint(10);
  pipeline.addPass(std::move(inner));
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_TRUE(run.ok()) << run.message();
  const StageChanges& wrap = run->stages[1].changes;
  EXPECT_EQ(wrap.added, (std::vector<std::string>{"fusion"}));
  EXPECT_EQ(wrap.removed, (std::vector<std::string>{"a"}));
  ASSERT_EQ(wrap.fused.size(), 1u);
  EXPECT_EQ(wrap.fused[0].instruction, "a");
  EXPECT_EQ(wrap.fused[0].fusion, "fusion");
  const StageChanges& fuseNegate = run->stages[2].changes;
  EXPECT_TRUE(fuseNegate.added.empty());
  EXPECT_EQ(fuseNegate.removed, (std::vector<std::string>{"n"}));
  EXPECT_EQ(fuseNegate.fused[0].fusion, "fusion");
  EXPECT_EQ(fuseNegate.instructionDelta, 0);  // moved, not deleted
}

TEST(PipelineTest, PassClaimingAChangeThatDidNotHappenMakesNoStage) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  pipeline.addPass(std::make_unique<ClaimsChange>());
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->stages.size(), 1u);
  EXPECT_TRUE(run->passes[0].changed);
  EXPECT_EQ(run->passes[0].stage, -1);
  EXPECT_EQ(run->stages[0].label(), "pipeline start, before claims-change");
}

TEST(PipelineTest, PassHidingAChangeFailsLoudlyWhenChecked) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  pipeline.addPass(std::make_unique<HidesChange>());
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.message().find("pass hides-change reported no change but changed the module"), std::string::npos)
      << run.message();
}

TEST(PipelineTest, VerifierRunsAfterEveryChangingPassWhenChecked) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  pipeline.addPass(std::make_unique<BreaksModule>());
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.message().find("after pass breaks: <test>:8:8: error: computation main, %a: operand 0 has shape"),
            std::string::npos)
      << run.message();
}

TEST(PipelineTest, DisabledPassesAreSkippedInNestedPipelines) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  auto inner = std::make_unique<PassPipeline>("inner");
  inner->addPass(std::make_unique<FuseOneStep>());
  inner->addPass(std::make_unique<NoopPass>());
  pipeline.addPass(std::move(inner));
  pipeline.setDisabledPasses({"fuse-one"});
  EXPECT_EQ(pipeline.leafPassNames(), (std::vector<std::string>{"fuse-one", "noop"}));
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->stages.size(), 1u);
  ASSERT_EQ(run->passes.size(), 1u);
  EXPECT_EQ(run->passes[0].pass, "noop");
}

TEST(PipelineTest, StagesJsonFollowsTheSchema) {
  auto module = parseOrFail(kModule);
  PassPipeline pipeline("test");
  pipeline.addPass(std::make_unique<FuseOneStep>());
  pipeline.addPass(std::make_unique<FuseOneStep>());
  pipeline.addPass(std::make_unique<NoopPass>());
  PassContext context;
  StatusOr<PipelineRun> run = runPipeline(pipeline, *module, context, checked());
  ASSERT_TRUE(run.ok()) << run.message();
  StagesJsonInfo info;
  info.source = "m.hlo";
  info.backend = "gpu";
  info.files = {{"hlo_graph_0.dot", "module_0.txt", "", ""}, {}, {"hlo_graph_2.dot", "module_2.txt", "", ""}};
  auto json = nlohmann::json::parse(stagesToJson(*run, info));
  EXPECT_EQ(json["schema"], "fusionscope.stages/1");
  EXPECT_EQ(json["module"], "m");
  EXPECT_EQ(json["entry"], "main");
  EXPECT_EQ(json["pipeline"], "test");
  ASSERT_EQ(json["stages"].size(), 3u);
  const auto& s0 = json["stages"][0];
  EXPECT_TRUE(s0["pass"].is_null());
  EXPECT_EQ(s0["label"], "pipeline start, before fuse-one");
  EXPECT_EQ(s0["files"]["dot"], "hlo_graph_0.dot");
  EXPECT_EQ(s0["instructions"], 4);
  EXPECT_FALSE(json["stages"][1]["dumped"]);
  const auto& s2 = json["stages"][2];
  EXPECT_EQ(s2["pass"], "fuse-one");
  EXPECT_EQ(s2["next_pass"], "noop");
  EXPECT_EQ(s2["fusions"], 1);
  EXPECT_EQ(s2["fusion_list"][0]["kind"], "kLoop");
  EXPECT_EQ(s2["fusion_list"][0]["members"], (nlohmann::json{"n", "a"}));
  EXPECT_EQ(s2["changes"]["fused"][0]["instruction"], "n");
  EXPECT_EQ(s2["decisions"][0]["reason"], "fused n");
  EXPECT_EQ(s2["decisions"][0]["bytes_saved"], 32);
  ASSERT_EQ(json["passes"].size(), 3u);
  EXPECT_EQ(json["passes"][2]["decisions"][0]["reason"], "nothing to do");
  EXPECT_TRUE(json["passes"][2]["stage"].is_null());
}

}  // namespace
}  // namespace fusionscope::core
