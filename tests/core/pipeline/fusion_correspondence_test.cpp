// Which unfused instructions each fusion of a fused compile stands for (replacedInstructions): matched by what the
// ops compute, since XLA renames instructions as it fuses; on hand-made modules and on the real MNIST step XLA
// compiled with fusion on and off (tests/data/xla/mnist_step).
#include "core/pipeline/fusion_correspondence.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/common/source_paths.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<HloModule> parseOrDie(std::string_view text) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.message();
  return module.ok() ? std::move(*module) : nullptr;
}

// w - 0.5 * g, fused: the fused instructions are renamed (mul.3, mul.4, sub.9), and the scale has no metadata.
constexpr const char* kFused = R"(HloModule jit_step

fused_computation.2 {
  param_0.2 = f32[8]{0} parameter(0)
  param_1.6 = f32[8]{0} parameter(1)
  constant.6 = f32[] constant(0.5)
  mul.4 = f32[8]{0} broadcast(constant.6), dimensions={}
  mul.3 = f32[8]{0} multiply(param_1.6, mul.4), metadata={op_name="jit(step)/mul" stack_frame_id=5}
  ROOT sub.9 = f32[8]{0} subtract(param_0.2, mul.3), metadata={op_name="jit(step)/sub" stack_frame_id=7}
}

ENTRY main.9 {
  w.1 = f32[8]{0} parameter(0)
  g.1 = f32[8]{0} parameter(1)
  ROOT multiply_subtract_fusion.1 = f32[8]{0} fusion(w.1, g.1), kind=kLoop, calls=fused_computation.2,
    metadata={op_name="jit(step)/sub" stack_frame_id=7}
}
)";

// The same program with fusion disabled: XLA:CPU wraps each op in a one-op fusion. wrapped_add computes a
// subtract too, but from another source line (stack_frame_id=8): not the same op. The negate is nowhere fused.
constexpr const char* kUnfused = R"(HloModule jit_step

wrapped_broadcast_computation.4 {
  param_0.16 = f32[] parameter(0)
  ROOT mul.3 = f32[8]{0} broadcast(param_0.16), dimensions={}
}

wrapped_multiply_computation.2 {
  param_0.17 = f32[8]{0} parameter(0)
  param_1.10 = f32[8]{0} parameter(1)
  ROOT mul.4 = f32[8]{0} multiply(param_0.17, param_1.10), metadata={op_name="jit(step)/mul" stack_frame_id=5}
}

wrapped_subtract_computation.1 {
  param_0.18 = f32[8]{0} parameter(0)
  param_1.11 = f32[8]{0} parameter(1)
  ROOT sub.12 = f32[8]{0} subtract(param_0.18, param_1.11), metadata={op_name="jit(step)/sub" stack_frame_id=7}
}

wrapped_add_computation {
  param_0 = f32[8]{0} parameter(0)
  param_1 = f32[8]{0} parameter(1)
  ROOT sub.13 = f32[8]{0} subtract(param_0, param_1), metadata={op_name="jit(step)/sub" stack_frame_id=8}
}

ENTRY main.9 {
  w.1 = f32[8]{0} parameter(0)
  g.1 = f32[8]{0} parameter(1)
  constant.12 = f32[] constant(0.5)
  wrapped_broadcast.4 = f32[8]{0} fusion(constant.12), kind=kLoop, calls=wrapped_broadcast_computation.4
  wrapped_multiply.2 = f32[8]{0} fusion(g.1, wrapped_broadcast.4), kind=kLoop, calls=wrapped_multiply_computation.2
  wrapped_subtract.1 = f32[8]{0} fusion(w.1, wrapped_multiply.2), kind=kLoop, calls=wrapped_subtract_computation.1
  wrapped_add = f32[8]{0} fusion(w.1, wrapped_subtract.1), kind=kLoop, calls=wrapped_add_computation
  ROOT negate.1 = f32[8]{0} negate(wrapped_add)
}
)";

TEST(FusionCorrespondenceTest, MatchesRenamedOpsByWhatTheyCompute) {
  std::unique_ptr<HloModule> fused = parseOrDie(kFused);
  std::unique_ptr<HloModule> unfused = parseOrDie(kUnfused);
  ASSERT_TRUE(fused && unfused);
  std::map<std::string, std::vector<std::string>> replaced = replacedInstructions(*fused, *unfused);
  ASSERT_EQ(replaced.size(), 1u) << printModule(*fused);
  // In the fusion's post order: the broadcast (opcode and shape only), the multiply, the subtract.
  EXPECT_EQ(replaced.at("multiply_subtract_fusion.1"),
            (std::vector<std::string>{"wrapped_broadcast.4", "wrapped_multiply.2", "wrapped_subtract.1"}));
}

TEST(FusionCorrespondenceTest, OpKeyIgnoresNamesAndLayoutButNotMetadata) {
  std::unique_ptr<HloModule> fused = parseOrDie(kFused);
  std::unique_ptr<HloModule> unfused = parseOrDie(kUnfused);
  ASSERT_TRUE(fused && unfused);
  const HloInstruction* fusedSub = fused->findComputation("fused_computation.2")->findInstruction("sub.9");
  const HloInstruction* unfusedSub =
      unfused->findComputation("wrapped_subtract_computation.1")->findInstruction("sub.12");
  const HloInstruction* otherLine = unfused->findComputation("wrapped_add_computation")->findInstruction("sub.13");
  ASSERT_TRUE(fusedSub && unfusedSub && otherLine);
  EXPECT_EQ(opKey(*fusedSub), opKey(*unfusedSub));
  EXPECT_NE(opKey(*fusedSub), opKey(*otherLine));
  EXPECT_NE(opKey(*fusedSub).find("jit(step)/sub"), std::string::npos) << opKey(*fusedSub);
  EXPECT_NE(opKey(*fusedSub).find("stack_frame_id=7"), std::string::npos) << opKey(*fusedSub);
}

// The real MNIST step (jax 0.10, XLA:CPU): every unfused kernel-level op that fusion absorbed is found in a fusion,
// and w - 0.5 * dw is the broadcast, multiply and subtract XLA ran as three kernels unfused.
TEST(FusionCorrespondenceTest, RealJaxMnistStep) {
  const fs::path dir = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "mnist_step";
  StatusOr<std::unique_ptr<HloModule>> fused =
      parseHloModuleFile((dir / "fused" / "module_0018.jit_step.cpu_after_optimizations.txt").string());
  StatusOr<std::unique_ptr<HloModule>> unfused =
      parseHloModuleFile((dir / "unfused" / "module_0018.jit_step.cpu_after_optimizations.txt").string());
  ASSERT_TRUE(fused.ok()) << fused.message();
  ASSERT_TRUE(unfused.ok()) << unfused.message();
  std::map<std::string, std::vector<std::string>> replaced = replacedInstructions(**fused, **unfused);

  std::vector<std::string> scaleAndSubtract = replaced.at("multiply_subtract_fusion.1");
  std::sort(scaleAndSubtract.begin(), scaleAndSubtract.end());
  EXPECT_EQ(scaleAndSubtract,
            (std::vector<std::string>{"wrapped_broadcast.4", "wrapped_multiply.2", "wrapped_subtract.1"}));
  // No fused instruction keeps its unfused name: matching by name would find nothing.
  std::set<std::string> listed;
  for (const auto& [fusion, names] : replaced) {
    EXPECT_FALSE(names.empty()) << fusion;
    listed.insert(names.begin(), names.end());
  }
  // Every one-op fusion XLA wrapped in the unfused run is part of some fusion of the fused run.
  for (const auto& inst : (*unfused)->entry()->instructions()) {
    if (inst->name().rfind("wrapped_", 0) == 0) {
      EXPECT_TRUE(listed.count(inst->name())) << inst->name();
    }
  }
}

}  // namespace
}  // namespace fusionscope::core
