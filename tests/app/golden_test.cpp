// Golden tests: the real CLI on each checked-in sample must reproduce the checked-in DOT and canonical text
// byte for byte. After an intended change, run scripts/regen-golden and review the diff.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/core/testing/corpus.h"

namespace {

namespace fs = std::filesystem;

// The first line where two texts differ, for a readable failure.
std::string firstDifference(const std::string& expected, const std::string& actual) {
  std::istringstream a(expected);
  std::istringstream b(actual);
  std::string la;
  std::string lb;
  for (int line = 1;; ++line) {
    bool moreA = static_cast<bool>(std::getline(a, la));
    bool moreB = static_cast<bool>(std::getline(b, lb));
    if (!moreA && !moreB) return "identical";
    if (la != lb || moreA != moreB) {
      return "line " + std::to_string(line) + "\n  expected: " + (moreA ? la : "<end>") +
             "\n  actual:   " + (moreB ? lb : "<end>");
    }
  }
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, DumpAndPrintMatchCheckedInFiles) {
  const std::string name = GetParam();
  fs::path sample = fs::path(FS_SOURCE_DIR) / "samples" / name / (name + ".hlo");
  fs::path golden = fs::path(FS_SOURCE_DIR) / "tests" / "golden" / name;
  fs::path out = fusionscope::testing::scratchDirectory("fs_golden_" + name);
  std::string dump =
      std::string(FS_CLI_PATH) + " dump '" + sample.string() + "' -o '" + (out / "dump").string() + "' > /dev/null";
  ASSERT_EQ(std::system(dump.c_str()), 0) << dump;
  std::string print =
      std::string(FS_CLI_PATH) + " print '" + sample.string() + "' -o '" + (out / "print.hlo").string() + "'";
  ASSERT_EQ(std::system(print.c_str()), 0) << print;

  std::string expectedDot = fusionscope::testing::readBytes(golden / "hlo_graph_0.dot");
  std::string actualDot = fusionscope::testing::readBytes(out / "dump" / "hlo_graph_0.dot");
  ASSERT_FALSE(expectedDot.empty()) << "missing golden file; run scripts/regen-golden";
  EXPECT_EQ(expectedDot, actualDot) << firstDifference(expectedDot, actualDot);
  std::string expectedText = fusionscope::testing::readBytes(golden / "print.hlo");
  std::string actualText = fusionscope::testing::readBytes(out / "print.hlo");
  EXPECT_EQ(expectedText, actualText) << firstDifference(expectedText, actualText);
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Samples, GoldenTest, ::testing::Values("mnist_softmax", "layer_norm", "mlp", "attention"));

}  // namespace
