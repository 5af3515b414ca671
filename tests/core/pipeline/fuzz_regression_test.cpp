// Inputs the libFuzzer targets found (tests/data/fuzz/hlo_parser, minimized): each goes through what the
// hlo_parser fuzzer checks — parse, print and parse again, and for a module the verifier accepts, the gpu pipeline
// with pass checking on — so a fixed finding stays fixed without the fuzzing build.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_verifier.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/common/source_paths.h"

namespace fusionscope::core {
namespace {

std::vector<std::string> findings() {
  std::vector<std::string> files;
  const std::filesystem::path dir = std::string(FS_SOURCE_DIR) + "/tests/data/fuzz/hlo_parser";
  if (std::filesystem::is_directory(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class HloFuzzRegressionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HloFuzzRegressionTest, ParsesRoundTripsAndSurvivesThePipeline) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModuleFile(GetParam());
  if (!module.ok()) return;  // a clean parse error is a correct outcome
  std::string printed = printModule(**module);
  ASSERT_TRUE(parseHloModule(printed, "<printed>").ok()) << printed;
  if (!verifyModule(**module).ok()) return;
  PipelineSpec spec;
  StatusOr<std::unique_ptr<PassPipeline>> pipeline = buildPipeline(spec);
  ASSERT_TRUE(pipeline.ok());
  PassContext context(fusionConfigFor(backendFor(spec)));
  RunOptions options;
  options.checkPasses = true;
  StatusOr<PipelineRun> run = runPipeline(**pipeline, **module, context, options);
  EXPECT_TRUE(run.ok()) << run.message();
}

TEST(HloFuzzRegressions, FindingsAreKept) {
  EXPECT_FALSE(findings().empty()) << "tests/data/fuzz/hlo_parser is empty";
}

INSTANTIATE_TEST_SUITE_P(Findings, HloFuzzRegressionTest, ::testing::ValuesIn(findings()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace fusionscope::core
