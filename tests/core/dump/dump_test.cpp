// Every sample and corpus module dumps to DOT that Graphviz lays out in-process, and to a real PNG.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "core/dot/dot_writer.h"
#include "core/dump/dump_directory.h"
#include "core/graphviz/graphviz_renderer.h"
#include "core/text/hlo_parser.h"
#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

uint32_t bigEndian32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

class DumpTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DumpTest, DotLaysOutAndPngIsReal) {
  auto module = parseHloModuleFile(GetParam());
  ASSERT_TRUE(module.ok()) << module.message();
  fs::path dir = testing::scratchDirectory("fs_dump_test_" + fs::path(GetParam()).stem().string()) / "dump";
  DumpOptions options;
  options.png = true;
  auto stage = dumpStage(**module, 0, "pipeline start", dir.string(), options);
  ASSERT_TRUE(stage.ok()) << stage.message();
  EXPECT_EQ(stage->consoleLine,
            "computation " + (*module)->entry()->name() + " [pipeline start]: " + (dir / "hlo_graph_0.dot").string());

  std::string png = testing::readBytes(stage->pngPath);
  ASSERT_GE(png.size(), 33u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  uint32_t width = bigEndian32(png, 16);
  uint32_t height = bigEndian32(png, 20);
  EXPECT_GE(width, 50u);
  EXPECT_GE(height, 50u);
  EXPECT_LE(std::max(width, height), 16001u) << "bitmaps are capped at 16k pixels a side";
  EXPECT_LE(static_cast<double>(width) * height, 40.5e6) << "and at 40 Mpx";

  // The DOT on disk is what was rendered; laying it out again gives a node per declared node.
  std::string dot = testing::readBytes(stage->dotPath);
  EXPECT_EQ(dot, writeDot(**module));
  if ((*module)->instructionCount() <= 1000) {  // the big ones were just laid out by the PNG render
    auto layout = graphviz::layoutDot(dot, stage->dotPath);
    ASSERT_TRUE(layout.ok()) << layout.message();
    std::regex nodeDecl(R"(^\s+[ns]\d+ \[)");
    size_t declared = 0;
    std::istringstream lines(dot);
    for (std::string line; std::getline(lines, line);) declared += std::regex_search(line, nodeDecl) ? 1 : 0;
    EXPECT_EQ(layout->nodes.size(), declared);
    for (const auto& node : layout->nodes) {
      EXPECT_GE(node.center.x, layout->lowerLeft.x);
      EXPECT_LE(node.center.x, layout->upperRight.x);
    }
  }
  fs::remove_all(dir.parent_path());
}

INSTANTIATE_TEST_SUITE_P(SamplesAndCorpus, DumpTest, ::testing::ValuesIn(testing::allModulePaths()),
                         [](const auto& info) { return testing::moduleTestName(info.param); });

TEST(Dump, UnwritableDirectoryFailsWithoutFiles) {
  auto module = parseHloModule("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n", "m.hlo");
  ASSERT_TRUE(module.ok()) << module.message();
  // A directory below a regular file cannot exist, whoever runs the test (root ignores permission bits).
  fs::path file = testing::scratchDirectory("fs_dump_test_unwritable") / "regular_file";
  std::ofstream(file) << "x";
  auto stage = dumpStage(**module, 0, "pipeline start", (file / "sub").string(), DumpOptions{});
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.message().find("cannot create directory"), std::string::npos) << stage.message();
  EXPECT_NE(stage.message().find((file / "sub").string()), std::string::npos) << stage.message();
  fs::remove_all(file.parent_path());
}

}  // namespace
}  // namespace fusionscope::core
