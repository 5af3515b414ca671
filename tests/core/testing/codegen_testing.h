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
#include "core/eval/result_check.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/runtime/cpu_executable.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::testing {

// What a compiled program is checked against: seeded random arguments, the evaluator's result for them and the
// result check's bounds (core/eval/result_check.h). Built once from the module as written and used for it and for
// its fused versions alike, as `run` checks a pipeline's output against the module it was given.
struct Reference {
  std::vector<core::Value> arguments;
  core::Value expected;
  core::ResultBounds bounds;
};

inline StatusOr<Reference> referenceFor(const core::HloModule& module, uint64_t seed = 7) {
  Reference reference;
  reference.arguments = core::randomArguments(module, seed);
  StatusOr<core::EvalResult> expected = core::evaluateModule(module, reference.arguments);
  if (!expected.ok()) return Status::error("evaluator: " + expected.message());
  reference.expected = std::move(expected->result);
  StatusOr<core::ResultBounds> bounds = core::resultBounds(module, reference.arguments, reference.expected);
  if (!bounds.ok()) return Status::error("bounds: " + bounds.message());
  reference.bounds = std::move(*bounds);
  return reference;
}

// Compiles `module` (the one the reference was made from, or a fused version of it) and runs it twice on the
// reference's arguments; "" when both results pass the result check. `vectorBytes`:
// CpuCompileOptions::vectorRegisterBytes (0: the host's).
inline std::string compareWithReference(const core::HloModule& module, const Reference& reference, int threads = 2,
                                        int vectorBytes = 0) {
  core::CpuCompileOptions options;
  options.threads = threads;
  options.minParallelRange = 16;  // exercise the split ranges even on small shapes
  options.vectorRegisterBytes = vectorBytes;
  StatusOr<std::unique_ptr<core::CpuExecutable>> executable = core::CpuExecutable::compile(module, options);
  if (!executable.ok()) return "compile: " + executable.message();
  if (vectorBytes != 0 && (*executable)->vectorRegisterBytes() != vectorBytes) return "not blocked as asked";
  StatusOr<core::Value> actual = (*executable)->run(reference.arguments);
  if (!actual.ok()) return "run: " + actual.message();
  std::string difference =
      core::resultCheckFailure(core::checkResult(reference.bounds, reference.expected, *actual));
  if (!difference.empty()) return difference + "\n" + core::planToString((*executable)->plan());
  // A second run on the same executable (buffers reused, aliased parameters rewritten) gives the same result.
  StatusOr<core::Value> again = (*executable)->run(reference.arguments);
  if (!again.ok()) return "second run: " + again.message();
  difference = core::resultCheckFailure(core::checkResult(reference.bounds, reference.expected, *again));
  return difference.empty() ? "" : "second run: " + difference;
}

// Runs `module` with seeded random arguments on the CPU and in the evaluator; returns "" when they agree.
inline std::string compareWithEvaluator(const core::HloModule& module, uint64_t seed = 7, int threads = 2,
                                        int vectorBytes = 0) {
  StatusOr<Reference> reference = referenceFor(module, seed);
  if (!reference.ok()) return reference.message();
  return compareWithReference(module, *reference, threads, vectorBytes);
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

// How expectAllAgree checks the fused versions: against the module as written (as `run` does), or each against its
// own evaluation (for a reducer that is not associative, whose order XLA leaves open and a pipeline may change).
enum class FusedReference { kModuleAsWritten, kItsOwn };

// The module as written (one kernel per instruction), and fused by both presets.
inline void expectAllAgree(std::string_view text, uint64_t seed = 7,
                           FusedReference fusedReference = FusedReference::kModuleAsWritten) {
  std::unique_ptr<core::HloModule> module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  StatusOr<Reference> reference = referenceFor(*module, seed);
  ASSERT_TRUE(reference.ok()) << reference.message();
  EXPECT_EQ(compareWithReference(*module, *reference), "") << "unfused:\n" << text;
  for (const char* preset : {"gpu", "cpu"}) {
    std::unique_ptr<core::HloModule> fused = runPipelineOn(*module, preset);
    EXPECT_EQ(fusedReference == FusedReference::kItsOwn ? compareWithEvaluator(*fused, seed)
                                                       : compareWithReference(*fused, *reference),
              "")
        << preset << ":\n" << core::printModule(*fused);
  }
}

}  // namespace fusionscope::testing
