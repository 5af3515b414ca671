#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_module.h"
#include "core/ir/hlo_verifier.h"
#include "core/passes/hlo_pass.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"

namespace fusionscope::testing {

// Parses HLO text written in a test; fails the test (and returns null) on a parse error.
inline std::unique_ptr<core::HloModule> parseOrFail(std::string_view text) {
  auto parsed = core::parseHloModule(text, "<test>");
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  if (!parsed.ok()) return nullptr;
  return std::move(parsed).value();
}

// Runs one pass the way the pipeline does and checks the result still verifies. Returns whether the pass
// reported a change; a pass error fails the test. The module is printed when anything fails.
inline bool runPass(core::HloPass& pass, core::HloModule& module, core::PassContext& context) {
  auto changed = pass.run(module, context);
  EXPECT_TRUE(changed.ok()) << pass.name() << ": " << changed.message() << "\n" << core::printModule(module);
  if (!changed.ok()) return false;
  Status verified = core::verifyModule(module);
  EXPECT_TRUE(verified.ok()) << "after " << pass.name() << ": " << verified.message() << "\n"
                             << core::printModule(module);
  return *changed;
}

inline bool runPass(core::HloPass& pass, core::HloModule& module) {
  core::PassContext context;
  return runPass(pass, module, context);
}

// The instruction named `name` in the entry computation, or null.
inline core::HloInstruction* entryInstruction(const core::HloModule& module, std::string_view name) {
  return module.entry() ? module.entry()->findInstruction(name) : nullptr;
}

// Opcode spellings of the non-parameter instructions inside a fusion, sorted; empty if not a fusion.
inline std::vector<std::string> fusedOpcodes(const core::HloInstruction& fusion) {
  std::vector<std::string> opcodes;
  if (const core::HloComputation* fused = fusion.fusedComputation()) {
    for (const auto& inst : fused->instructions()) {
      if (inst->opcode() != core::HloOpcode::kParameter) opcodes.emplace_back(inst->opcodeString());
    }
  }
  std::sort(opcodes.begin(), opcodes.end());
  return opcodes;
}

// Fusion instructions of the entry computation, in text order.
inline std::vector<core::HloInstruction*> entryFusions(const core::HloModule& module) {
  std::vector<core::HloInstruction*> fusions;
  for (const auto& inst : module.entry()->instructions()) {
    if (inst->isFusion()) fusions.push_back(inst.get());
  }
  return fusions;
}

}  // namespace fusionscope::testing
