// Every sample and corpus module parses, verifies, and survives parse -> print -> parse unchanged.
#include <gtest/gtest.h>

#include "core/ir/hlo_equal.h"
#include "core/ir/hlo_verifier.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, ParsesVerifiesAndRoundTrips) {
  const std::string path = GetParam();
  auto first = parseHloModuleFile(path);
  ASSERT_TRUE(first.ok()) << first.message();
  Status verified = verifyModule(**first);
  EXPECT_TRUE(verified.ok()) << verified.message();

  std::string printed = printModule(**first);
  auto second = parseHloModule(printed, path + " (printed)");
  ASSERT_TRUE(second.ok()) << second.message() << "\n--- printed text ---\n" << printed;
  std::string difference;
  EXPECT_TRUE(modulesEqual(**first, **second, &difference)) << difference;
  // Printing is a fixed point after one round.
  EXPECT_EQ(printModule(**second), printed);
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, RoundTripTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });

TEST(CorpusPresence, CorpusOrSkip) {
  if (!testing::sharedCorpusPresent()) {
    GTEST_SKIP() << "shared corpus not found at " << testing::corpusDir() << ": corpus round-trip cases not run";
  }
  EXPECT_GE(testing::corpusHloFiles().size(), 20u);
}

TEST(Samples, AllFourSamplesExist) {
  std::vector<std::string> stems;
  for (const auto& p : testing::sampleHloFiles()) stems.push_back(p.stem().string());
  for (const char* expected : {"mnist_softmax", "layer_norm", "mlp", "attention"}) {
    EXPECT_NE(std::find(stems.begin(), stems.end(), expected), stems.end()) << expected;
  }
}

}  // namespace
}  // namespace fusionscope::core
