// rng-bit-generator in the evaluator: XLA's numbers bit for bit (tests/data/rng/vectors.json: ThreeFry and
// Philox, default, two- and three-word states, 8- to 64-bit outputs, counters that carry), and bad generators
// refused with what is wrong.
#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/text/hlo_parser.h"
#include "tests/core/testing/rng_vectors.h"

namespace fusionscope::core {
namespace {

TEST(RngBitGeneratorEvalTest, MatchesXlaOnEveryVector) {
  const std::vector<testing::RngVector> vectors = testing::loadRngVectors();
  ASSERT_GE(vectors.size(), 100u);
  int threeWord = 0;
  for (const testing::RngVector& v : vectors) {
    StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(v.module());
    ASSERT_TRUE(module.ok()) << module.message();
    StatusOr<EvalResult> result = evaluateModule(**module, {v.stateValue()});
    ASSERT_TRUE(result.ok()) << v.label() << ": " << result.message();
    EXPECT_EQ(v.mismatch(result->result), "") << v.label();
    threeWord += v.state.size() == 3;
  }
  EXPECT_GT(threeWord, 0) << "the vectors cover Philox's three-word state";
}

std::string evalError(const std::string& rng) {
  const std::string text = "HloModule m\nENTRY e {\n  s = u64[2] parameter(0)\n  ROOT r = " + rng + "\n}\n";
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  if (!module.ok()) return "parse: " + module.message();
  StatusOr<EvalResult> result = evaluateModule(**module, randomArguments(**module, 1));
  return result.ok() ? "ok" : result.message();
}

TEST(RngBitGeneratorEvalTest, BadGeneratorsAreRefused) {
  EXPECT_NE(evalError("(u64[2], f32[4]) rng-bit-generator(s), algorithm=rng_philox").find("generates integers"),
            std::string::npos);
  EXPECT_NE(evalError("(u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_mersenne").find("unknown algorithm"),
            std::string::npos);
  EXPECT_NE(evalError("(u64[3], u32[4]) rng-bit-generator(s), algorithm=rng_philox").find("must produce (u64[2]"),
            std::string::npos);
  const std::string threeWordThreeFry =
      "HloModule m\nENTRY e {\n  s = u64[3] parameter(0)\n  ROOT r = (u64[3], u32[4]) rng-bit-generator(s), "
      "algorithm=rng_three_fry\n}\n";
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(threeWordThreeFry);
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<EvalResult> result = evaluateModule(**module, randomArguments(**module, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.message().find("the state must be u64[2] for rng_three_fry, not u64[3]"), std::string::npos)
      << result.message();
}

}  // namespace
}  // namespace fusionscope::core
