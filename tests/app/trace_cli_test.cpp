// Runs the real fusionscope-cli trace subcommands (stats, compare): output, --json, exit codes and one-line
// messages for bad files.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus" / "traces";

struct Result {
  int exitCode = -1;
  std::string out;
  std::string err;
};

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string quoted(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class TraceCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            (std::string("fs_trace_cli_test_") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
             std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }

  Result run(std::initializer_list<std::string> args) {
    std::string command = quoted(FS_CLI_PATH);
    for (const std::string& arg : args) command += " " + quoted(arg);
    fs::path out = m_dir / "stdout.txt";
    fs::path err = m_dir / "stderr.txt";
    command += " >" + quoted(out.string()) + " 2>" + quoted(err.string()) + " </dev/null";
    int status = std::system(command.c_str());
    Result result;
    result.exitCode = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = readAll(out);
    result.err = readAll(err);
    return result;
  }

  std::string write(const std::string& name, const std::string& content) {
    fs::path path = m_dir / name;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }

  fs::path m_dir;
};

constexpr const char* kBefore = R"([
  {"ph":"X","cat":"kernel","name":"add.1","pid":0,"tid":7,"ts":0,"dur":10,"args":{"bytes_read":800,"bytes_written":400}},
  {"ph":"X","cat":"kernel","name":"multiply.2","pid":0,"tid":7,"ts":12,"dur":8},
  {"ph":"X","cat":"kernel","name":"exponential.3","pid":0,"tid":7,"ts":20,"dur":5}])";
constexpr const char* kAfter = R"([
  {"ph":"X","cat":"kernel","name":"fusion.1","pid":0,"tid":7,"ts":0,"dur":9},
  {"ph":"X","cat":"kernel","name":"exponential.3","pid":0,"tid":7,"ts":9,"dur":5}])";
constexpr const char* kStages =
    R"({"stages":[{"index":1,"fusion_list":[{"name":"fusion.1","members":["add.1","multiply.2"]}]}]})";

TEST_F(TraceCliTest, StatsPrintsKernelTable) {
  Result r = run({"stats", write("before.json", kBefore)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("kernels: 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel time: 23.000 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("multiply.2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bytes moved: 1.20 kB"), std::string::npos) << r.out;
}

TEST_F(TraceCliTest, StatsJson) {
  Result r = run({"stats", write("before.json", kBefore), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["kernel_count"], 3);
  EXPECT_EQ(json["kernel_time_ns"], 23000);
  EXPECT_EQ(json["names"][0]["name"], "add.1");
  EXPECT_EQ(json["gaps"]["total_ns"], 2000);
}

TEST_F(TraceCliTest, CompareWithStagesMapsFusion) {
  Result r = run({"compare", write("before.json", kBefore), write("after.json", kAfter), "--stages",
                  write("stages.json", kStages), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["before"]["kernel_count"], 3);
  EXPECT_EQ(json["after"]["kernel_count"], 2);
  ASSERT_EQ(json["mappings"].size(), 2u);
  EXPECT_EQ(json["mappings"][0]["after"], "fusion.1");
  EXPECT_EQ(json["mappings"][0]["before"], nlohmann::json({"add.1", "multiply.2"}));
  EXPECT_NEAR(json["mappings"][0]["speedup"].get<double>(), 2.0, 1e-9);

  Result text = run({"compare", (m_dir / "before.json").string(), (m_dir / "after.json").string(), "--stages",
                     (m_dir / "stages.json").string()});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("kernels launched"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("speedup 2.00x [stages.json]"), std::string::npos) << text.out;
}

TEST_F(TraceCliTest, BadFilesGiveOneLineAndExitTwo) {
  std::string good = write("good.json", kBefore);
  for (const auto& args :
       {std::initializer_list<std::string>{"stats", (m_dir / "missing.json").string()},
        std::initializer_list<std::string>{"stats", write("junk.json", "hello")},
        std::initializer_list<std::string>{"compare", good, (m_dir / "junk.json").string()},
        std::initializer_list<std::string>{"compare", good, good, "--stages", write("bad_stages.json", "{\"x\":1}")}}) {
    Result r = run(args);
    EXPECT_EQ(r.exitCode, 2) << r.out;
    EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
  }
  Result junk = run({"stats", (m_dir / "junk.json").string()});
  EXPECT_NE(junk.err.find("junk.json"), std::string::npos) << junk.err;
  EXPECT_NE(junk.err.find("byte offset"), std::string::npos) << junk.err;
}

TEST_F(TraceCliTest, StatsOnEveryCorpusTrace) {
  if (!fs::exists(kCorpusDir)) GTEST_SKIP() << "trace corpus not found at " << kCorpusDir;
  for (const auto& entry : fs::directory_iterator(kCorpusDir)) {
    Result r = run({"stats", entry.path().string(), "--json"});
    ASSERT_EQ(r.exitCode, 0) << entry.path() << ": " << r.err;
    EXPECT_TRUE(nlohmann::json::accept(r.out)) << entry.path();
  }
}

// This machine has no GPU driver: `trace` must say so and exit 3 without running anything or leaving a file.
TEST_F(TraceCliTest, TraceWithoutDriverSaysSoAndExitsThree) {
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY)) {
    ::dlclose(driver);
    GTEST_SKIP() << "a CUDA driver is installed here";
  }
  std::string output = (m_dir / "timeline.ctf.json").string();
  std::string marker = (m_dir / "ran").string();
  Result r = run({"trace", "-o", output, "--", "/bin/sh", "-c", "touch " + marker});
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA driver found") != std::string::npos ||
              r.err.find("no CUPTI collector") != std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(output));
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(TraceCliTest, TraceWithoutCommandIsUsageError) {
  Result r = run({"trace", "-o", (m_dir / "t.json").string()});
  EXPECT_EQ(r.exitCode, 2) << r.err;
}

}  // namespace
