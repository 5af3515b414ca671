// topk-decomposer: a top-k as XLA CPU's TopkDecomposer writes it (a stable sort of the values with their indices, the
// first k of each), run by the cpu preset and before every compilation.
#include "core/passes/topk_decomposer.h"

#include <string>

#include <gtest/gtest.h>

#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"
#include "tests/core/testing/preset_testing.h"

namespace fusionscope::core {
namespace {

constexpr const char* kTopK = R"(
HloModule m
ENTRY main {
  x = f32[32,6]{1,0} parameter(0)
  t = (f32[32,2]{1,0}, s32[32,2]{1,0}) topk(x), k=2, largest=true, metadata={op_name="jit(moe)/top_k"}
  v = f32[32,2]{1,0} get-tuple-element(t), index=0
  i = s32[32,2]{1,0} get-tuple-element(t), index=1
  c = f32[32,2]{1,0} convert(i)
  ROOT s = f32[32,2]{1,0} add(v, c)
}
)";

TEST(TopKDecomposerTest, ATopKIsAStableSortOfValuesAndIndicesAndItsFirstK) {
  auto module = testing::parseOrFail(kTopK);
  auto original = testing::parseOrFail(kTopK);
  TopKDecomposer pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* sort = nullptr;
  for (const auto& inst : module->entry()->instructions()) {
    EXPECT_NE(inst->opcode(), HloOpcode::kTopK) << printModule(*module);
    if (inst->opcode() == HloOpcode::kSort) sort = inst.get();
    // Every part keeps the top-k's source op, and the results keep their layouts.
    if (inst->opcode() != HloOpcode::kParameter && inst->name() != "v" && inst->name() != "i" && inst->name() != "c" &&
        inst->name() != "s") {
      ASSERT_TRUE(inst->attributes().metadata) << inst->name();
      EXPECT_NE(printInstruction(*inst).find("jit(moe)/top_k"), std::string::npos) << printInstruction(*inst);
    }
  }
  ASSERT_NE(sort, nullptr) << printModule(*module);
  EXPECT_EQ(sort->operand(1)->opcode(), HloOpcode::kIota);
  EXPECT_NE(printInstruction(*sort).find("is_stable=true"), std::string::npos) << printInstruction(*sort);
  const HloInstruction* values = testing::entryInstruction(*module, "v")->operand(0)->operand(0);
  EXPECT_EQ(values->opcode(), HloOpcode::kSlice) << printModule(*module);
  EXPECT_EQ(values->shape(), original->entry()->findInstruction("v")->shape());
  testing::expectSameResults(*original, *module);
}

// The cpu preset decomposes a top-k before fusion, as XLA CPU does, so that the slices of its first k fuse into
// their users; the gpu preset keeps it (XLA GPU has a top-k kernel of its own).
TEST(TopKDecomposerTest, TheCpuPresetDecomposesATopKAndTheGpuPresetKeepsIt) {
  for (const char* preset : {"cpu", "gpu"}) {
    auto module = testing::parseOrFail(kTopK);
    StatusOr<PipelineRun> run = testing::runPreset(*module, preset);
    ASSERT_TRUE(run.ok()) << run.message();
    bool topk = false;
    bool sort = false;
    for (const auto& inst : module->entry()->instructions()) {
      topk = topk || inst->opcode() == HloOpcode::kTopK;
      sort = sort || inst->opcode() == HloOpcode::kSort;
    }
    EXPECT_EQ(topk, std::string(preset) == "gpu") << preset << "\n" << printModule(*module);
    EXPECT_EQ(sort, std::string(preset) == "cpu") << preset << "\n" << printModule(*module);
  }
}

}  // namespace
}  // namespace fusionscope::core
