#pragma once

// One run of the `fusion` pass on a module text, with the decisions it recorded (pass tests of the fusion
// rules share it).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/passes/fusion_config.h"
#include "core/passes/hlo_pass.h"
#include "core/passes/instruction_fusion.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {

using Opcodes = std::vector<std::string>;

// The module after one run of `fusion`, with the decisions it recorded.
struct Fused {
  std::unique_ptr<HloModule> module;
  PassContext context;
  bool changed = false;

  const HloInstruction* root() const { return module->entry()->root(); }
  const HloInstruction* get(std::string_view name) const { return testing::entryInstruction(*module, name); }
  std::string text() const { return printModule(*module); }

  // The decision about `producer` (into `consumer`, if given), or null.
  const FusionDecision* decision(std::string_view producer, std::string_view consumer = {}) const {
    for (const FusionDecision& d : context.decisions()) {
      if (d.producer == producer && (consumer.empty() || d.consumer == consumer)) return &d;
    }
    return nullptr;
  }
  std::string reasons() const {
    std::string all;
    for (const FusionDecision& d : context.decisions()) all += d.reason + "\n";
    return all;
  }
};

inline Fused runFusion(std::string_view text, FusionConfig config = fusionConfigFor(Backend::kGpu)) {
  Fused result{testing::parseOrFail(text), PassContext(std::move(config)), false};
  if (!result.module) return result;
  InstructionFusion pass;
  result.changed = testing::runPass(pass, *result.module, result.context);
  return result;
}

inline FusionConfig cpu() {
  return fusionConfigFor(Backend::kCpu);
}

constexpr std::string_view kAddReducer = R"(
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
)";

inline std::string withReducer(std::string_view entry) {
  return std::string("HloModule m\n") + std::string(kAddReducer) + std::string(entry);
}

}  // namespace fusionscope::core
