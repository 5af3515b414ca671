// Golden tests: the real CLI on each checked-in sample must reproduce the checked-in DOT and canonical text
// byte for byte. After an intended change, run scripts/regen-golden and review the diff.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/core/testing/corpus.h"
#include "tests/common/source_paths.h"

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

// What the pipelines make of each sample and of a few corpus modules (tests/golden/inputs): every decision and its
// reason (`explain`), the last stage's module and the stages index, for the gpu and the cpu preset. Commands run in
// the input's folder on its file name, as scripts/regen-golden runs them.
struct PipelineGolden {
  std::string name;
  fs::path input;
};

void PrintTo(const PipelineGolden& golden, std::ostream* out) {
  *out << golden.name;
}

std::vector<PipelineGolden> pipelineGoldens() {
  std::vector<PipelineGolden> goldens;
  for (const char* sample : {"mnist_softmax", "layer_norm", "mlp", "attention"}) {
    goldens.push_back({sample, fs::path(FS_SOURCE_DIR) / "samples" / sample / (std::string(sample) + ".hlo")});
  }
  for (const fs::path& input : fusionscope::testing::filesWithExtension(
           fs::path(FS_SOURCE_DIR) / "tests" / "golden" / "inputs", ".hlo")) {
    goldens.push_back({input.stem().string(), input});
  }
  return goldens;
}

// stages.json less its run times, which differ from run to run.
nlohmann::json normalizedStages(const std::string& text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return json;
  json.erase("total_ms");
  for (nlohmann::json& stage : json["stages"]) stage.erase("pass_ms");
  for (nlohmann::json& pass : json["passes"]) pass.erase("ms");
  return json;
}

class PipelineGoldenTest : public ::testing::TestWithParam<PipelineGolden> {};

TEST_P(PipelineGoldenTest, ExplainFinalStageAndStagesJsonMatch) {
  const PipelineGolden& golden = GetParam();
  fs::path expected = fs::path(FS_SOURCE_DIR) / "tests" / "golden" / golden.name;
  fs::path out = fusionscope::testing::scratchDirectory("fs_golden_pipeline_" + golden.name);
  std::string cd = "cd '" + golden.input.parent_path().string() + "' && ";
  std::string file = golden.input.filename().string();
  for (const std::string pipeline : {"gpu", "cpu"}) {
    SCOPED_TRACE(pipeline);
    fs::path explain = out / ("explain_" + pipeline + ".txt");
    std::string explainCommand = cd + std::string(FS_CLI_PATH) + " explain --pipeline=" + pipeline + " '" + file +
                                 "' > '" + explain.string() + "'";
    ASSERT_EQ(std::system(explainCommand.c_str()), 0) << explainCommand;
    std::string expectedExplain = fusionscope::testing::readBytes(expected / ("explain_" + pipeline + ".txt"));
    ASSERT_FALSE(expectedExplain.empty()) << "missing golden file; run scripts/regen-golden";
    std::string actualExplain = fusionscope::testing::readBytes(explain);
    EXPECT_EQ(expectedExplain, actualExplain) << firstDifference(expectedExplain, actualExplain);

    fs::path dump = out / ("dump_" + pipeline);
    std::string dumpCommand = cd + std::string(FS_CLI_PATH) + " dump --pipeline=" + pipeline + " '" + file + "' -o '" +
                              dump.string() + "' > /dev/null";
    ASSERT_EQ(std::system(dumpCommand.c_str()), 0) << dumpCommand;
    std::string stagesText = fusionscope::testing::readBytes(dump / "stages.json");
    nlohmann::json stages = normalizedStages(stagesText);
    ASSERT_FALSE(stages.is_discarded());
    nlohmann::json expectedStages =
        normalizedStages(fusionscope::testing::readBytes(expected / ("stages_" + pipeline + ".json")));
    EXPECT_EQ(expectedStages, stages) << "stages.json differs; run scripts/regen-golden and review the diff";
    int64_t last = stages["stages"].back()["index"].get<int64_t>();
    std::string finalText = fusionscope::testing::readBytes(dump / ("module_" + std::to_string(last) + ".txt"));
    std::string expectedFinal = fusionscope::testing::readBytes(expected / ("final_" + pipeline + ".hlo"));
    EXPECT_EQ(expectedFinal, finalText) << firstDifference(expectedFinal, finalText);
  }
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, PipelineGoldenTest, ::testing::ValuesIn(pipelineGoldens()),
                         [](const ::testing::TestParamInfo<PipelineGolden>& info) { return info.param.name; });

}  // namespace
