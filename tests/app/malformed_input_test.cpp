// The malformed-input suite (issue 8): every file below is broken in a way users meet — truncated, wrong types,
// huge numbers, deep nesting, cycles, invalid UTF-8, empty, not the format at all, one enormous line — and every
// fusionscope-cli command that reads that kind of file is run on it. Each run must end with exit code 2, a first
// stderr line that names the file (with LINE:COL where the format has lines), no crash, and no output written.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/cli_runner.h"
#include "tests/common/malformed_files.h"
#include "tests/common/source_paths.h"

namespace {

namespace fs = std::filesystem;
using namespace fusionscope::testing;  // NOLINT: the suite is about these files

struct Command {
  std::string name;
  // Arguments with FILE standing for the malformed path, OUT for a path under the output directory, GOOD for a
  // good file of the same family (the other side of `compare`).
  std::vector<std::string> args;
};

std::vector<Command> commandsFor(Kind kind) {
  switch (kind) {
    case Kind::kHlo: {
      std::vector<Command> commands = {
          {"info", {"info", "FILE"}},
          {"print", {"print", "FILE", "-o", "OUT/printed.hlo"}},
          {"dump", {"dump", "FILE", "-o", "OUT/dump", "--svg"}},
          {"explain", {"explain", "FILE"}},
          {"verify", {"verify", "FILE"}},
          {"compare_fusions_a", {"compare-fusions", "FILE", "GOOD", "--pipeline", "cpu", "-o", "OUT/compare.txt"}},
          {"compare_fusions_b", {"compare-fusions", "GOOD", "FILE", "--json", "-o", "OUT/compare.json"}},
      };
#ifdef FS_HAVE_CODEGEN
      commands.push_back({"run", {"run", "FILE", "--trace", "OUT/timeline.ctf.json", "--save-outputs", "OUT/outs"}});
      commands.push_back({"compile", {"compile", "FILE", "--target=nvptx", "--sm=90", "-o", "OUT/bundle"}});
#endif
      return commands;
    }
    case Kind::kTrace:
      return {{"stats", {"stats", "FILE", "-o", "OUT/stats.txt"}},
              {"compare_before", {"compare", "FILE", "GOOD", "-o", "OUT/compare.txt"}},
              {"compare_after", {"compare", "GOOD", "FILE", "--json", "-o", "OUT/compare.json"}}};
    case Kind::kStages:
      return {{"compare_stages", {"compare", "GOOD", "GOOD", "--stages", "FILE", "-o", "OUT/compare.txt"}}};
    case Kind::kNpy:
#ifdef FS_HAVE_CODEGEN
      return {{"run_input", {"run", "GOOD", "--input", "p=FILE", "--save-outputs", "OUT/outs"}}};
#else
      return {};
#endif
  }
  return {};
}

std::string firstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

struct Case {
  MalformedFile file;
  Command command;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.command.name << " on " << c.file.name;
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.command.name + "_" + info.param.file.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (const MalformedFile& file : malformedFiles()) {
    for (const Command& command : commandsFor(file.kind)) cases.push_back({file, command});
  }
  return cases;
}

class MalformedInputTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("fs_malformed_" + std::to_string(::getpid()) + "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir / "in");
    fs::create_directories(m_dir / "out");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }

  fs::path materialize(const MalformedFile& file) { return materializeMalformed(m_dir / "in", file); }

  fs::path goodFile(Kind kind) {
    switch (kind) {
      case Kind::kTrace:
      case Kind::kStages: {
        fs::path path = m_dir / "in" / "good_trace.json";
        std::ofstream(path, std::ios::binary) << kGoodTrace;
        return path;
      }
      case Kind::kNpy:
      case Kind::kHlo: {
        fs::path path = m_dir / "in" / "good.hlo";
        std::ofstream(path, std::ios::binary) << kGoodHlo;
        return path;
      }
    }
    return {};
  }

  fs::path m_dir;
};

TEST_P(MalformedInputTest, FailsWithOneClearMessageAndWritesNothing) {
  const Case& c = GetParam();
  fs::path input = materialize(c.file);
  fs::path good = goodFile(c.file.kind);
  std::vector<std::string> args;
  for (std::string arg : c.command.args) {
    auto replace = [&](const std::string& token, const std::string& with) {
      for (size_t at = arg.find(token); at != std::string::npos; at = arg.find(token, at + with.size())) {
        arg.replace(at, token.size(), with);
      }
    };
    replace("FILE", input.string());
    replace("GOOD", good.string());
    replace("OUT", (m_dir / "out").string());
    args.push_back(arg);
  }

  CliResult outcome = runProgram(FS_CLI_PATH, args, m_dir);
  ASSERT_TRUE(WIFEXITED(outcome.status)) << "killed by signal " << WTERMSIG(outcome.status) << "\n" << outcome.err;
  EXPECT_EQ(WEXITSTATUS(outcome.status), 2) << outcome.err;

  std::string line = firstLine(outcome.err);
  EXPECT_FALSE(line.empty()) << "no message on stderr";
  EXPECT_NE(line.find(c.file.name), std::string::npos) << "the message does not name the file: " << line;
  if (c.file.hasPosition) {
    EXPECT_TRUE(std::regex_search(line, std::regex(":[0-9]+:[0-9]+: "))) << "no LINE:COL in: " << line;
  }
  EXPECT_LT(line.size(), 400u) << "the first line should be one readable message";

  std::vector<std::string> written;
  for (const auto& entry : fs::recursive_directory_iterator(m_dir / "out")) {
    written.push_back(entry.path().lexically_relative(m_dir / "out").string());
  }
  EXPECT_TRUE(written.empty()) << "output left behind, first: " << written.front();
}

INSTANTIATE_TEST_SUITE_P(AllCommands, MalformedInputTest, ::testing::ValuesIn(allCases()), caseName);

TEST(MalformedInputSuite, HasAtLeastFiftyFiles) {
  EXPECT_GE(malformedFiles().size(), 50u);
}

// One line of 1 GiB: generated on the fly (never stored), read by one HLO command and one trace command. It must
// fail with the usual message and exit code, not exhaust memory or take minutes.
class HugeLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("fs_huge_line_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    const fs::space_info space = fs::space(m_dir);
    if (space.available < (3ull << 30)) GTEST_SKIP() << "less than 3 GiB free in " << m_dir;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  fs::path writeHugeLine(const std::string& name, const std::string& prefix) {
    fs::path path = m_dir / name;
    std::ofstream out(path, std::ios::binary);
    out << prefix;
    std::string chunk(1 << 20, 'a');
    for (int i = 0; i < 1024; ++i) out << chunk;
    return path;
  }
  fs::path m_dir;
};

TEST_F(HugeLineTest, HloOfOneGigabyteLineFailsCleanly) {
  fs::path path = writeHugeLine("huge_line.hlo", "HloModule ");
  CliResult outcome = runProgram(FS_CLI_PATH, {"info", path.string()}, m_dir);
  ASSERT_TRUE(WIFEXITED(outcome.status)) << outcome.err;
  EXPECT_EQ(WEXITSTATUS(outcome.status), 2);
  EXPECT_NE(firstLine(outcome.err).find("huge_line.hlo"), std::string::npos) << firstLine(outcome.err);
  EXPECT_LT(firstLine(outcome.err).size(), 400u);
}

TEST_F(HugeLineTest, TraceOfOneGigabyteLineFailsCleanly) {
  fs::path path = writeHugeLine("huge_line.json", "{\"traceEvents\":[\"");
  CliResult outcome = runProgram(FS_CLI_PATH, {"stats", path.string()}, m_dir);
  ASSERT_TRUE(WIFEXITED(outcome.status)) << outcome.err;
  EXPECT_EQ(WEXITSTATUS(outcome.status), 2);
  EXPECT_NE(firstLine(outcome.err).find("huge_line.json"), std::string::npos) << firstLine(outcome.err);
  EXPECT_LT(firstLine(outcome.err).size(), 400u);
}

}  // namespace

namespace {

// Resource limits: a module whose values cannot fit in memory is refused by `verify` before the evaluator
// allocates, with the size it would need and the largest value.
TEST(ResourceLimitsTest, VerifyRefusesAModuleLargerThanMemory) {
  fs::path dir = fs::temp_directory_path() / ("fs_resource_limits_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path path = dir / "huge.hlo";
  std::ofstream(path) << hloWithBody(
      "  p = f32[100000,100000,100000] parameter(0)\n  ROOT n = f32[100000,100000,100000] "
      "negate(p)");
  CliResult outcome = runProgram(FS_CLI_PATH, {"verify", path.string()}, dir);
  ASSERT_TRUE(WIFEXITED(outcome.status)) << outcome.err;
  EXPECT_EQ(WEXITSTATUS(outcome.status), 2);
  EXPECT_NE(
      outcome.err.find("huge.hlo: cannot evaluate: its values need 16.0 PB (largest: p f32[100000,100000,100000], "
                       "8.0 PB), more than the"),
      std::string::npos)
      << outcome.err;
  fs::remove_all(dir);
}

}  // namespace

namespace {

// Runs the CLI under an address-space limit (`ulimit -v`, KiB), as a user on a small machine or in a container
// would: it must refuse with a message, never abort.
CliResult runLimited(const std::vector<std::string>& args, const fs::path& scratch, long limitKiB) {
  std::string command = "ulimit -v " + std::to_string(limitKiB) + " && exec " + shellQuoted(FS_CLI_PATH);
  for (const std::string& arg : args) command += " " + shellQuoted(arg);
  const fs::path script = scratch / "limited.sh";
  std::ofstream(script) << command << "\n";
  return runProgram("/bin/bash", {script.string()}, scratch);
}

class MemoryLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef FS_SANITIZED
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: a ulimit -v run cannot start";
#endif
    m_dir = fs::temp_directory_path() / ("fs_memory_limit_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  fs::path write(const std::string& name, const std::string& text) {
    fs::path path = m_dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  fs::path m_dir;
};

TEST_F(MemoryLimitTest, EvaluatorCountsTheBytesItReallyStores) {
  // 1.5 billion s8 elements are 1.5 GB as data but 12 GB as the evaluator's int64s.
  fs::path path = write("bytes.hlo", hloWithBody("  p = s8[] parameter(0)\n  b = s8[1500000000] broadcast(p), "
                                                 "dimensions={}\n  ROOT n = s8[1500000000] negate(b)"));
  for (long limit : {2000000L, 8000000L}) {
    CliResult outcome = runLimited({"verify", path.string()}, m_dir, limit);
    ASSERT_TRUE(WIFEXITED(outcome.status)) << "killed by signal " << WTERMSIG(outcome.status) << "\n" << outcome.err;
    EXPECT_EQ(WEXITSTATUS(outcome.status), 2) << outcome.err;
    EXPECT_NE(outcome.err.find("bytes.hlo: cannot evaluate: its values need 24.0 GB"), std::string::npos)
        << outcome.err;
  }
}

TEST_F(MemoryLimitTest, ModuleTooLargeToParseIsRefusedBeforeReading) {
  // 40 MB of valid HLO under a 500 MB address space: parsed it would need several times that.
  fs::path path = m_dir / "large.hlo";
  {
    std::ofstream out(path);
    out << "HloModule large\nENTRY e {\n  p0 = f32[4] parameter(0)\n";
    for (int i = 1; i < 1000000; ++i) out << "  p" << i << " = f32[4] negate(p" << i - 1 << ")\n";
    out << "  ROOT r = f32[4] negate(p999999)\n}\n";
  }
  CliResult outcome = runLimited({"info", path.string()}, m_dir, 500000L);
  ASSERT_TRUE(WIFEXITED(outcome.status)) << "killed by signal " << WTERMSIG(outcome.status) << "\n" << outcome.err;
  EXPECT_EQ(WEXITSTATUS(outcome.status), 2) << outcome.err;
  EXPECT_NE(outcome.err.find("large.hlo: error: a "), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.err.find("of memory once parsed, more than the 512.0 MB"), std::string::npos) << outcome.err;
}

TEST_F(MemoryLimitTest, GzipBombIsRefusedWithoutExhaustingMemory) {
  // 512 MiB of spaces inside a JSON string compress to about 0.5 MB; under a 1 GB address space the inflater must stop
  // at its share and say so.
  std::string text = "{\"traceEvents\":[],\"pad\":\"" + std::string(size_t{1} << 29, ' ') + "\"}";
  fs::path path = write("bomb.json.gz", gzipped(text));
  text.clear();
  text.shrink_to_fit();
  CliResult outcome = runLimited({"stats", path.string()}, m_dir, 1000000L);
  ASSERT_TRUE(WIFEXITED(outcome.status)) << "killed by signal " << WTERMSIG(outcome.status) << "\n" << outcome.err;
  EXPECT_EQ(WEXITSTATUS(outcome.status), 2) << outcome.err;
  EXPECT_NE(outcome.err.find("bomb.json.gz: error: decompresses to more than"), std::string::npos) << outcome.err;
}

TEST_F(MemoryLimitTest, RunRefusesBuffersLargerThanMemory) {
#ifndef FS_HAVE_CODEGEN
  GTEST_SKIP() << "built without codegen";
#endif
  fs::path path =
      write("dot.hlo", hloWithBody("  p = f32[30000,30000] parameter(0)\n  ROOT d = f32[30000,30000] dot(p, p), "
                                   "lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  CliResult outcome = runLimited({"run", path.string(), "--no-check"}, m_dir, 2000000L);
  ASSERT_TRUE(WIFEXITED(outcome.status)) << "killed by signal " << WTERMSIG(outcome.status) << "\n" << outcome.err;
  EXPECT_NE(WEXITSTATUS(outcome.status), 0) << outcome.err;
  EXPECT_NE(outcome.err.find("cannot run: its buffers need 7.2 GB"), std::string::npos) << outcome.err;
}

}  // namespace
