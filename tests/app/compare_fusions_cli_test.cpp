// `fusionscope-cli compare-fusions` on the real MNIST step (tests/data/xla): our cpu preset run on XLA's
// before_optimizations against XLA:CPU's after_optimizations, as text and JSON, and its bad input.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/common/cli_runner.h"
#include "tests/common/source_paths.h"

namespace fusionscope {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;

fs::path xlaModules() {
  return fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "modules";
}
std::string before() {
  return (xlaModules() / "tf_mnist.before.txt").string();
}
std::string after() {
  return (xlaModules() / "tf_mnist.after.txt").string();
}

class CompareFusionsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "fs_compare_fusions_XXXXXX").string();
    m_dir = ::mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code error;
    if (!m_dir.empty()) fs::remove_all(m_dir, error);
  }
  CliResult run(const std::vector<std::string>& args) { return testing::runProgram(FS_CLI_PATH, args, m_dir); }

  fs::path m_dir;
};

TEST_F(CompareFusionsCliTest, JsonHasTheFiguresAndTheDifferencesWithOurReasons) {
  // Our gpu preset against XLA CPU's result: the gpu preset's reduction (kInput) and multi-output fusions group
  // differently from XLA CPU's loop fusions, so there are differences to show.
  CliResult result = run({"compare-fusions", before(), after(), "--pipeline", "gpu", "--json"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["pipeline"], "gpu");
  EXPECT_EQ(json["a"]["file"], before());
  EXPECT_GT(json["a"]["matched"].get<int>(), 0);
  EXPECT_LE(json["a"]["matched"].get<int>(), json["a"]["ops"].get<int>());
  // Unmatched ops are listed once each (copies of one op share a name).
  EXPECT_LE(json["a"]["unmatched"].size(),
            static_cast<size_t>(json["a"]["ops"].get<int>() - json["a"]["matched"].get<int>()));
  const int both = json["pairs"]["both"];
  const int onlyA = json["pairs"]["only_a"];
  const int onlyB = json["pairs"]["only_b"];
  ASSERT_GT(both + onlyA, 0);
  EXPECT_DOUBLE_EQ(json["precision"].get<double>(), static_cast<double>(both) / (both + onlyA));
  EXPECT_DOUBLE_EQ(json["recall"].get<double>(), static_cast<double>(both) / (both + onlyB));
  // Each difference shows both sides and our decisions about them.
  ASSERT_GT(onlyA + onlyB, 0);
  ASSERT_FALSE(json["differences"].empty());
  int differingPairs = 0;
  bool anyDecision = false;
  for (const nlohmann::json& difference : json["differences"]) {
    EXPECT_FALSE(difference["a_groups"].empty());
    EXPECT_FALSE(difference["b_groups"].empty());
    differingPairs += difference["pairs_only_a"].get<int>() + difference["pairs_only_b"].get<int>();
    // Each pair counted is listed, named by two distinct ops.
    EXPECT_EQ(difference["only_a"].size(), difference["pairs_only_a"].get<size_t>());
    EXPECT_EQ(difference["only_b"].size(), difference["pairs_only_b"].get<size_t>());
    for (const nlohmann::json& pair : difference["only_a"]) {
      ASSERT_EQ(pair.size(), 2u);
      EXPECT_NE(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
    for (const nlohmann::json& decision : difference["decisions"]) {
      anyDecision = true;
      EXPECT_FALSE(decision["reason"].get<std::string>().empty());
    }
  }
  EXPECT_EQ(differingPairs, onlyA + onlyB);
  EXPECT_TRUE(anyDecision) << result.out;
}

TEST_F(CompareFusionsCliTest, TextShowsFiguresAndGroupsSideBySide) {
  CliResult result = run({"compare-fusions", before(), after(), "--pipeline", "gpu"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.out.find("after the gpu pipeline"), std::string::npos) << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(precision [01]\.\d{3} )"))) << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(recall +[01]\.\d{3} )"))) << result.out;
  EXPECT_NE(result.out.find("#1: "), std::string::npos) << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(\n  A +\| B\n)"))) << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(\n  fused only in [AB]: \S+\+\S+)"))) << result.out;
  EXPECT_NE(result.out.find("our pipeline:"), std::string::npos) << result.out;
}

TEST_F(CompareFusionsCliTest, AModuleAgainstItselfAgrees) {
  CliResult result = run({"compare-fusions", after(), after()});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.out.find("precision 1.000"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("A and B group every matched op alike"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("our pipeline"), std::string::npos) << result.out;  // no pipeline ran: no reasons
}

TEST_F(CompareFusionsCliTest, BadInputIsExitTwoWithOneClearMessage) {
  CliResult missing = run({"compare-fusions", before(), (m_dir / "absent.txt").string()});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.err.find("absent.txt"), std::string::npos) << missing.err;

  const fs::path malformed = m_dir / "malformed.hlo";
  std::ofstream(malformed) << "HloModule m\n\nENTRY main {\n  x = f32[8]{0} parameter(0)\n  ROOT y = f32[8]{0} "
                              "negate(%nope)\n}\n";
  CliResult bad = run({"compare-fusions", malformed.string(), after()});
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_TRUE(std::regex_search(bad.err, std::regex("malformed\\.hlo:5:\\d+"))) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;

  CliResult badB = run({"compare-fusions", before(), malformed.string(), "--pipeline", "cpu"});
  EXPECT_EQ(badB.exitCode, 2);
  EXPECT_TRUE(std::regex_search(badB.err, std::regex("malformed\\.hlo:5:\\d+"))) << badB.err;
}

}  // namespace
}  // namespace fusionscope
