// The evaluator on real modules: every sample evaluates to finite, deterministic results, and every corpus
// module either evaluates or is rejected by checkEvaluable with the unsupported opcodes named.

#include <bit>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/text/hlo_parser.h"
#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

// Modules estimated above the evaluator's budget (testing::kEvaluationBudget) are skipped with a message.
constexpr int64_t kMaxWork = fusionscope::testing::kEvaluationBudget;

bool bitIdentical(const Value& a, const Value& b) {
  if (!a.shape().compatible(b.shape())) return false;
  if (a.isTuple()) {
    for (int i = 0; i < a.tupleSize(); ++i) {
      if (!bitIdentical(a.tupleElement(i), b.tupleElement(i))) return false;
    }
    return true;
  }
  if (a.holdsFloats()) {
    std::span<const double> x = a.floatData();
    std::span<const double> y = b.floatData();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::bit_cast<uint64_t>(x[i]) != std::bit_cast<uint64_t>(y[i])) return false;
    }
    return true;
  }
  return std::equal(a.intData().begin(), a.intData().end(), b.intData().begin(), b.intData().end());
}

// Counts non-finite floating-point elements.
int64_t nonFinite(const Value& v) {
  if (v.isTuple()) {
    int64_t n = 0;
    for (const Value& e : v.tupleElements()) n += nonFinite(e);
    return n;
  }
  int64_t n = 0;
  for (double x : v.floatData()) n += std::isfinite(x) ? 0 : 1;
  return n;
}

TEST(SampleEvalTest, SamplesEvaluateToFiniteDeterministicResults) {
  std::vector<std::filesystem::path> samples = fusionscope::testing::sampleHloFiles();
  ASSERT_FALSE(samples.empty()) << "no samples under " << fusionscope::testing::samplesDir();
  for (const auto& path : samples) {
    SCOPED_TRACE(path.string());
    StatusOr<std::unique_ptr<HloModule>> module = parseHloModuleFile(path.string());
    ASSERT_TRUE(module.ok()) << module.message();
    ASSERT_TRUE(checkEvaluable(**module).ok()) << checkEvaluable(**module).message();
    EvalOptions options;
    options.recordValues = true;
    StatusOr<EvalResult> first = evaluateModule(**module, randomArguments(**module, 42), options);
    ASSERT_TRUE(first.ok()) << first.message();
    StatusOr<EvalResult> second = evaluateModule(**module, randomArguments(**module, 42), options);
    ASSERT_TRUE(second.ok()) << second.message();
    EXPECT_TRUE(bitIdentical(first->result, second->result));
    EXPECT_EQ(nonFinite(first->result), 0) << first->result.toString();
    // Every entry instruction has a recorded value.
    for (const auto& inst : (*module)->entry()->instructions()) {
      EXPECT_EQ(first->values.count(inst->name()), 1u) << inst->name();
    }
    StatusOr<EvalResult> other = evaluateModule(**module, randomArguments(**module, 43));
    ASSERT_TRUE(other.ok()) << other.message();
    EXPECT_FALSE(bitIdentical(first->result, other->result)) << "different arguments should change the result";
  }
}

class CorpusEvalTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusEvalTest, EvaluatesOrNamesWhatIsUnsupported) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModuleFile(GetParam());
  ASSERT_TRUE(module.ok()) << module.message();
  Status evaluable = checkEvaluable(**module);
  if (!evaluable.ok()) {
    EXPECT_EQ(evaluable.message().rfind("cannot evaluate: unsupported opcode(s) ", 0), 0u) << evaluable.message();
    StatusOr<EvalResult> result = evaluateModule(**module, randomArguments(**module, 1));
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.message(), evaluable.message());
    return;
  }
  int64_t work = estimateEvaluationWork(**module);
  if (work > kMaxWork) GTEST_SKIP() << fusionscope::testing::tooExpensiveToInterpret(work, kMaxWork);
  std::vector<Value> args = randomArguments(**module, 1);
  StatusOr<EvalResult> result = evaluateModule(**module, args);
  ASSERT_TRUE(result.ok()) << result.message();
  StatusOr<EvalResult> again = evaluateModule(**module, args);
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_TRUE(bitIdentical(result->result, again->result));
}

std::vector<std::string> corpusPaths() {
  std::vector<std::string> paths;
  for (const auto& p : fusionscope::testing::corpusHloFiles()) paths.push_back(p.string());
  return paths;
}

TEST(CorpusEvalPresenceTest, CorpusIsPresent) {
  if (corpusPaths().empty()) {
    GTEST_SKIP() << "corpus not found at " << fusionscope::testing::corpusDir() << "/hlo";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusEvalTest, ::testing::ValuesIn(corpusPaths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return fusionscope::testing::moduleTestName(info.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CorpusEvalTest);

}  // namespace
}  // namespace fusionscope::core
