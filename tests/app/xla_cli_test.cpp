// The XLA-interop commands of the real fusionscope-cli on a real JAX dump (tests/data/xla, jaxlib 0.10.2):
// `stages`, `dump XLA_DIR`, XLA's dump flags, source locations in `info`, and their bad input.
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
using testing::readAll;

fs::path xlaData() {
  return fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla";
}

class XlaCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory(xlaData() / "mnist_step" / "fused")) GTEST_SKIP() << "tests/data/xla is absent";
    std::string pattern = (fs::temp_directory_path() / "fs_xla_cli_XXXXXX").string();
    m_dir = ::mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code error;
    if (!m_dir.empty()) fs::remove_all(m_dir, error);
  }
  CliResult run(const std::vector<std::string>& args) { return testing::runProgram(FS_CLI_PATH, args, m_dir); }

  fs::path m_dir;
};

int64_t countFusionInstructions(const fs::path& file) {
  std::string text = readAll(file);
  std::regex fusionLine(R"(= [^\n]* fusion\([^\n]*kind=k)");
  return std::distance(std::sregex_iterator(text.begin(), text.end(), fusionLine), std::sregex_iterator());
}

TEST_F(XlaCliTest, StagesJsonListsXlasPipelineInOrder) {
  CliResult result = run({"stages", (xlaData() / "mnist_step" / "fused").string(), "--json"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["module"], "jit_step");
  const nlohmann::json& stages = json["stages"];
  ASSERT_GT(stages.size(), 10u);
  EXPECT_EQ(stages.front()["pass"], "before_optimizations");
  EXPECT_EQ(stages.back()["pass"], "cpu_after_optimizations");
  int64_t step = -1;
  for (size_t i = 1; i + 1 < stages.size(); ++i) {
    EXPECT_GT(stages[i]["step"].get<int64_t>(), step) << stages[i]["file"];
    step = stages[i]["step"].get<int64_t>();
    EXPECT_FALSE(stages[i]["pipeline"].get<std::string>().empty());
    EXPECT_NE(stages[i]["file"].get<std::string>().find(".after_" + stages[i]["pass"].get<std::string>()),
              std::string::npos);
  }
  fs::path last = xlaData() / "mnist_step" / "fused" / stages.back()["file"].get<std::string>();
  int64_t fusions = countFusionInstructions(last);
  EXPECT_GT(fusions, 0);
  EXPECT_EQ(stages.back()["fusions"].get<int64_t>(), fusions);
  // XLA's fusion pass is there, and what it fused is named.
  bool sawFusionPass = false;
  for (const nlohmann::json& stage : stages) {
    if (stage["pass"] != "fusion") continue;
    sawFusionPass = true;
    EXPECT_TRUE(stage["changed"].get<bool>());
    EXPECT_FALSE(stage["fused"].empty());
  }
  EXPECT_TRUE(sawFusionPass);
}

TEST_F(XlaCliTest, StagesTextNamesPassesAndInferredFusions) {
  CliResult result = run({"stages", (xlaData() / "mnist_step" / "fused").string()});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.out.find("jit_step"), std::string::npos);
  EXPECT_NE(result.out.find("XLA: before optimizations"), std::string::npos);
  EXPECT_NE(result.out.find("after fusion, before fusion-wrapper"), std::string::npos) << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(XLA fused [^\n]+ into \S+_fusion\S* in pass fusion)")))
      << result.out;
}

TEST_F(XlaCliTest, DumpWritesXlasStagesAsHloGraphsAndStagesJson) {
  fs::path out = m_dir / "out";
  CliResult result = run({"dump", (xlaData() / "mnist_step" / "fused").string(), "-o", out.string(),
                          "--xla_dump_hlo_as_text", "--xla_dump_hlo_as_dot", "--xla_dump_hlo_as_proto",
                          "--xla_dump_include_timestamp=true"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.err.find("note: --xla_dump_hlo_as_proto is not implemented by fusionscope-cli and is ignored"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("--xla_dump_include_timestamp"), std::string::npos);
  nlohmann::json index = nlohmann::json::parse(readAll(out / "stages.json"));
  EXPECT_EQ(index["pipeline"], "xla");
  const nlohmann::json& stages = index["stages"];
  ASSERT_GT(stages.size(), 10u);
  EXPECT_TRUE(fs::exists(out / "hlo_graph_0.dot"));
  EXPECT_TRUE(fs::exists(out / ("hlo_graph_" + std::to_string(stages.size() - 1) + ".dot")));
  EXPECT_NE(readAll(out / "module_0.txt").find("HloModule jit_step"), std::string::npos);
  // One console line per stage, with XLA's pass names.
  EXPECT_NE(result.out.find("[XLA: before optimizations]: "), std::string::npos) << result.out;
}

TEST_F(XlaCliTest, InfoShowsWhereInstructionsCameFrom) {
  fs::path before = xlaData() / "mnist_step" / "fused";
  fs::path file;
  for (const fs::directory_entry& entry : fs::directory_iterator(before)) {
    if (entry.path().string().find("before_optimizations.txt") != std::string::npos) file = entry.path();
  }
  ASSERT_FALSE(file.empty());
  CliResult result = run({"info", file.string(), "--json"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_TRUE(json.contains("sources"));
  bool program = false;
  for (const nlohmann::json& source : json["sources"]) {
    if (source["file"].get<std::string>().find("jax_programs.py") != std::string::npos && source["line"] > 0 &&
        source["function"].get<std::string>().find("mnist_step") != std::string::npos)
      program = true;
  }
  EXPECT_TRUE(program) << json["sources"].dump();
}

TEST_F(XlaCliTest, BadDirectoriesAreRefused) {
  fs::path empty = m_dir / "empty";
  fs::create_directories(empty);
  std::ofstream(empty / "notes.txt") << "nothing here";
  CliResult none = run({"stages", empty.string()});
  EXPECT_EQ(none.exitCode, 2);
  EXPECT_NE(none.err.find("no HLO dump of XLA's here"), std::string::npos) << none.err;
  CliResult noneDump = run({"dump", empty.string(), "-o", (m_dir / "o1").string()});
  EXPECT_EQ(noneDump.exitCode, 2);
  EXPECT_FALSE(fs::exists(m_dir / "o1" / "stages.json"));

  CliResult missing = run({"stages", (xlaData() / "mnist_step" / "fused").string(), "--module", "jit_nope"});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.err.find("no module 'jit_nope'"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("jit_step"), std::string::npos) << missing.err;

  // A per-pass file cut in half names its file, line and column; nothing is written.
  fs::path cut = m_dir / "cut";
  fs::create_directories(cut);
  for (const fs::directory_entry& entry : fs::directory_iterator(xlaData() / "mnist_step" / "fused")) {
    std::string name = entry.path().filename().string();
    std::string text = readAll(entry.path());
    if (name.find(".after_fusion.") != std::string::npos) text = text.substr(0, text.size() / 2);
    std::ofstream(cut / name) << text;
  }
  CliResult truncated = run({"dump", cut.string(), "-o", (m_dir / "o2").string()});
  EXPECT_EQ(truncated.exitCode, 2);
  EXPECT_TRUE(std::regex_search(truncated.err, std::regex(R"(after_fusion\.[^:]*\.txt:\d+:\d+: error)")))
      << truncated.err;
  EXPECT_FALSE(fs::exists(m_dir / "o2" / "stages.json"));
}

}  // namespace
}  // namespace fusionscope
