#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/eval/result_check.h"
#include "core/ir/hlo_module.h"
#include "core/ir/hlo_verifier.h"
#include "core/passes/fusion_config.h"
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

// As runPass, with `backend`'s fusion rules and settings (the cpu preset's simplifier rewrites differ, say).
inline bool runPass(core::HloPass& pass, core::HloModule& module, core::Backend backend) {
  core::PassContext context(core::fusionConfigFor(backend));
  return runPass(pass, module, context);
}

// The evaluator gives `original` and `rewritten` (a pass's output for it) the same results on the same random
// arguments (`seed`), printed in full.
inline void expectSameResults(const core::HloModule& original, const core::HloModule& rewritten, uint64_t seed = 7) {
  const std::vector<core::Value> args = core::randomArguments(original, seed);
  auto before = core::evaluateModule(original, args);
  auto after = core::evaluateModule(rewritten, args);
  ASSERT_TRUE(before.ok()) << before.message();
  ASSERT_TRUE(after.ok()) << after.message() << "\n" << core::printModule(rewritten);
  EXPECT_EQ(before->result.toString(0), after->result.toString(0));
}

inline void expectSameResults(std::string_view originalText, const core::HloModule& rewritten, uint64_t seed = 7) {
  auto original = parseOrFail(originalText);
  ASSERT_NE(original, nullptr);
  expectSameResults(*original, rewritten, seed);
}

// As expectSameResults, for a rewrite that may round differently (a sum in another order): `rewritten`'s results
// pass the result check against `original`'s, within the bounds rounding explains.
inline void expectResultsWithinRounding(const core::HloModule& original, const core::HloModule& rewritten,
                                        uint64_t seed = 7) {
  const std::vector<core::Value> args = core::randomArguments(original, seed);
  auto before = core::evaluateModule(original, args);
  auto after = core::evaluateModule(rewritten, args);
  ASSERT_TRUE(before.ok()) << before.message();
  ASSERT_TRUE(after.ok()) << after.message() << "\n" << core::printModule(rewritten);
  auto bounds = core::resultBounds(original, args, before->result);
  ASSERT_TRUE(bounds.ok()) << bounds.message();
  EXPECT_EQ(core::resultCheckFailure(core::checkResult(*bounds, before->result, after->result)), "")
      << core::printModule(rewritten);
}

// `text` is a module the pass `Pass` must leave alone: it reports no change and the module prints the same.
template <typename Pass>
void expectUnchanged(std::string_view text) {
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  const std::string before = core::printModule(*module);
  Pass pass;
  EXPECT_FALSE(runPass(pass, *module)) << pass.name() << " reported a change";
  EXPECT_EQ(core::printModule(*module), before);
}

// The pass on a real module (a file): the result verifies, "no change" is only said when nothing changed, text
// order still defines every operand before its use, the printed result parses back to the same text, and a second
// run changes nothing. `result`, when given, receives the module after the pass for further checks.
template <typename Pass>
void expectVerifiedAndIdempotent(const std::string& path, std::unique_ptr<core::HloModule>* result = nullptr) {
  auto parsed = core::parseHloModuleFile(path);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  core::HloModule& module = **parsed;
  const std::string before = core::printModule(module);
  Pass pass;
  const bool changed = runPass(pass, module);
  const std::string after = core::printModule(module);
  if (!changed) {
    EXPECT_EQ(after, before) << pass.name() << " reported no change but changed the module";
  }
  for (const auto& computation : module.computations()) {
    std::vector<const core::HloInstruction*> defined;
    for (const auto& inst : computation->instructions()) {
      for (const core::HloInstruction* operand : inst->operands()) {
        EXPECT_NE(std::find(defined.begin(), defined.end(), operand), defined.end())
            << inst->name() << " uses " << operand->name() << " before it";
      }
      defined.push_back(inst.get());
    }
  }
  auto reparsed = core::parseHloModule(after, path + " (after " + std::string(pass.name()) + ")");
  ASSERT_TRUE(reparsed.ok()) << reparsed.message();
  EXPECT_EQ(core::printModule(**reparsed), after);
  EXPECT_FALSE(runPass(pass, module)) << "second run of " << pass.name() << " changed the module";
  EXPECT_EQ(core::printModule(module), after);
  if (result) *result = std::move(parsed).value();
}

// The instruction named `name` in the entry computation, or null.
inline core::HloInstruction* entryInstruction(const core::HloModule& module, std::string_view name) {
  return module.entry() ? module.entry()->findInstruction(name) : nullptr;
}

// How many instructions of `computation` have `opcode`.
inline int64_t countOpcode(const core::HloComputation& computation, core::HloOpcode opcode) {
  int64_t count = 0;
  for (const auto& inst : computation.instructions()) count += inst->opcode() == opcode ? 1 : 0;
  return count;
}

// How many instructions of every computation of `module` (fused ones included) have `opcode`.
inline int64_t countOpcode(const core::HloModule& module, core::HloOpcode opcode) {
  int64_t count = 0;
  for (const auto& computation : module.computations()) count += countOpcode(*computation, opcode);
  return count;
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
