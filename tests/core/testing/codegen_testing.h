#pragma once

// The CPU backend against the reference evaluator, as the codegen and runtime tests check it: a module compiled
// with two threads (ranges split even on small shapes) and run twice on seeded random arguments, as written and
// through both fusion presets.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/runtime/cpu_executable.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::testing {

// Runs `module` with seeded random arguments on the CPU and in the evaluator; returns "" when they agree.
// `vectorBytes`: CpuCompileOptions::vectorRegisterBytes (0: the host's).
inline std::string compareWithEvaluator(const core::HloModule& module, uint64_t seed = 7, int threads = 2,
                                        int vectorBytes = 0) {
  std::vector<core::Value> arguments = core::randomArguments(module, seed);
  StatusOr<core::EvalResult> expected = core::evaluateModule(module, arguments);
  if (!expected.ok()) return "evaluator: " + expected.message();
  core::CpuCompileOptions options;
  options.threads = threads;
  options.minParallelRange = 16;  // exercise the split ranges even on small shapes
  options.vectorRegisterBytes = vectorBytes;
  StatusOr<std::unique_ptr<core::CpuExecutable>> executable = core::CpuExecutable::compile(module, options);
  if (!executable.ok()) return "compile: " + executable.message();
  if (vectorBytes != 0 && (*executable)->vectorRegisterBytes() != vectorBytes) return "not blocked as asked";
  StatusOr<core::Value> actual = (*executable)->run(arguments);
  if (!actual.ok()) return "run: " + actual.message();
  // compareWithReference: elementwise toleranceFor, normwise for f32-accumulated dots (see its comment).
  std::string difference = core::compareWithReference(module, arguments, expected->result, *actual);
  if (!difference.empty()) return difference + "\n" + core::planToString((*executable)->plan());
  // A second run on the same executable (buffers reused, aliased parameters rewritten) gives the same result.
  StatusOr<core::Value> again = (*executable)->run(arguments);
  if (!again.ok()) return "second run: " + again.message();
  difference = core::compareWithReference(module, arguments, expected->result, *again);
  return difference.empty() ? "" : "second run: " + difference;
}

inline std::unique_ptr<core::HloModule> runPipelineOn(const core::HloModule& module, const std::string& preset) {
  std::unique_ptr<core::HloModule> copy = core::cloneModule(module);
  core::PipelineSpec spec;
  spec.preset = preset;
  StatusOr<std::unique_ptr<core::PassPipeline>> pipeline = core::buildPipeline(spec);
  EXPECT_TRUE(pipeline.ok()) << pipeline.message();
  core::PassContext context(core::fusionConfigFor(core::backendFor(spec)));
  StatusOr<core::PipelineRun> run = core::runPipeline(**pipeline, *copy, context);
  EXPECT_TRUE(run.ok()) << run.message();
  return copy;
}

// The module as written (one kernel per instruction), and fused by both presets.
inline void expectAllAgree(std::string_view text, uint64_t seed = 7) {
  std::unique_ptr<core::HloModule> module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(compareWithEvaluator(*module, seed), "") << "unfused:\n" << text;
  for (const char* preset : {"gpu", "cpu"}) {
    std::unique_ptr<core::HloModule> fused = runPipelineOn(*module, preset);
    EXPECT_EQ(compareWithEvaluator(*fused, seed), "") << preset << ":\n" << core::printModule(*fused);
  }
}

}  // namespace fusionscope::testing
