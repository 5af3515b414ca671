// Runs the real fusionscope-cli: exit codes (0 ok, 1 the work failed, 2 bad usage or input), the messages
// users see, and the files it writes, including that a failed write leaves nothing behind.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/base/file_util.h"
#include "tests/common/cli_runner.h"
#include "tests/common/source_paths.h"

namespace {

namespace fs = std::filesystem;

const std::string kMlpSample = std::string(FS_SOURCE_DIR) + "/samples/mlp/mlp.hlo";

constexpr const char* kSmallModule = R"hlo(HloModule small

ENTRY main {
  p = f32[2,3] parameter(0)
  n = f32[2,3] negate(p)
  ROOT t = f32[3,2] transpose(n), dimensions={1,0}
}
)hlo";

// Parses, but `add` of f32[2] and f32[3] is rejected by the verifier.
constexpr const char* kUnverifiableModule = R"hlo(HloModule broken

ENTRY main {
  p = f32[2] parameter(0)
  q = f32[3] parameter(1)
  ROOT r = f32[2] add(p, q)
}
)hlo";

using fusionscope::DirectoryLock;
using fusionscope::lockDirectory;
using fusionscope::StatusOr;
using fusionscope::testing::CliResult;
using fusionscope::testing::readAll;
using fusionscope::testing::shellQuoted;

void writeAll(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

// Every test gets a fresh scratch directory; the CLI's stdout/stderr go to files beside it.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() / (std::string("fs_cli_test_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir / "work");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }

  // The directory tests write into and inspect (the captured output lives outside it).
  fs::path work() const { return m_dir / "work"; }

  CliResult run(std::initializer_list<std::string> args) {
    return fusionscope::testing::runProgram(FS_CLI_PATH, args, m_dir);
  }

  fs::path writeInput(const std::string& name, const std::string& content) {
    fs::path path = m_dir / name;
    writeAll(path, content);
    return path;
  }

  // Names of everything directly under `dir`, sorted.
  static std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  static bool hasTemporaries(const fs::path& dir) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.path().filename().string().find(".tmp.") != std::string::npos) return true;
    }
    return false;
  }

  void requireSample() {
    if (!fs::exists(kMlpSample)) GTEST_SKIP() << "sample module not found: " << kMlpSample;
  }

  fs::path m_dir;
};

// ---- Usage -------------------------------------------------------------------------------------------

TEST_F(CliTest, VersionPrintsTheProjectVersion) {
  CliResult r = run({"--version"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "fusionscope-cli " FS_VERSION "\n");
}

TEST_F(CliTest, HelpListsTheSubcommands) {
  CliResult r = run({"--help"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
  for (const char* sub : {"dump", "print", "info"}) EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
}

TEST_F(CliTest, SubcommandHelpListsItsOptions) {
  CliResult r = run({"dump", "--help"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  for (const char* option : {"--output", "--png", "--svg", "--no-verify"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option << " missing from:\n" << r.out;
  }
}

TEST_F(CliTest, NoSubcommandIsAUsageError) {
  CliResult r = run({});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("A subcommand is required"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, UnknownFlagIsAUsageError) {
  fs::path input = writeInput("small.hlo", kSmallModule);
  CliResult r = run({"info", "--frobnicate", input.string()});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, MissingInputFileIsNamed) {
  std::string missing = (work() / "no_such_module.hlo").string();
  CliResult r = run({"info", missing});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// ---- Bad input ---------------------------------------------------------------------------------------

TEST_F(CliTest, MalformedHloReportsFileLineAndColumn) {
  fs::path input = writeInput("bad.hlo", "HloModule bad\n\nENTRY main {\n  ROOT r = f32[2] negate(q)\n}\n");
  CliResult r = run({"print", input.string()});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err, input.string() + ":4:26: error: unknown operand 'q' in computation 'main'\n" +
                       "  ROOT r = f32[2] negate(q)\n" + "                         ^\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, VerifierFailureIsBadInputUnlessSkipped) {
  fs::path input = writeInput("broken.hlo", kUnverifiableModule);
  CliResult checked = run({"print", input.string()});
  EXPECT_EQ(checked.exitCode, 2);
  EXPECT_NE(checked.err.find("computation main, %r: operand 1 has shape f32[3] but the result is f32[2]"),
            std::string::npos)
      << checked.err;
  EXPECT_NE(checked.err.find("--no-verify"), std::string::npos) << checked.err;
  EXPECT_EQ(checked.out, "");

  CliResult unchecked = run({"print", "--no-verify", input.string()});
  EXPECT_EQ(unchecked.exitCode, 0) << unchecked.err;
  EXPECT_NE(unchecked.out.find("add("), std::string::npos) << unchecked.out;
}

// ---- print -------------------------------------------------------------------------------------------

TEST_F(CliTest, NoVerifyDrawsABrokenModuleButRunsNoPassesOnIt) {
  // A parameter numbering gap: passes would read the missing parameter. dump draws stage 0 only; explain and
  // verify, which need the passes, refuse.
  fs::path input = writeInput("gap.hlo",
                              "HloModule gap\nf {\n  a = f32[2] parameter(1)\n  ROOT n = f32[2] negate(a)\n}\n"
                              "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = f32[2] call(p), to_apply=f\n}\n");
  CliResult dumped = run({"dump", input.string(), "-o", (work() / "dump").string(), "--no-verify"});
  EXPECT_EQ(dumped.exitCode, 0) << dumped.err;
  EXPECT_NE(dumped.err.find("gap.hlo:3:3: error: computation f, %a: parameter number 1 leaves a gap"),
            std::string::npos)
      << dumped.err;
  EXPECT_NE(dumped.err.find("no passes run"), std::string::npos) << dumped.err;
  EXPECT_TRUE(fs::exists(work() / "dump" / "hlo_graph_0.dot"));
  EXPECT_FALSE(fs::exists(work() / "dump" / "hlo_graph_1.dot"));
  for (const char* command : {"explain", "verify"}) {
    CliResult refused = run({command, input.string(), "--no-verify"});
    EXPECT_EQ(refused.exitCode, 2) << command << ": " << refused.err;
    EXPECT_NE(refused.err.find("passes need a module that verifies"), std::string::npos) << refused.err;
  }
}

TEST_F(CliTest, PrintIsAFixedPoint) {
  // Printing the printed text gives the same text again, for a hand-written module and every sample.
  std::vector<fs::path> inputs = {writeInput("small.hlo", kSmallModule)};
  if (fs::is_directory(std::string(FS_SOURCE_DIR) + "/samples")) {
    for (const auto& entry : fs::recursive_directory_iterator(std::string(FS_SOURCE_DIR) + "/samples")) {
      if (entry.path().extension() == ".hlo") inputs.push_back(entry.path());
    }
  }
  for (const fs::path& input : inputs) {
    SCOPED_TRACE(input.string());
    CliResult first = run({"print", input.string()});
    ASSERT_EQ(first.exitCode, 0) << first.err;
    ASSERT_FALSE(first.out.empty());
    fs::path printed = writeInput("printed.hlo", first.out);
    CliResult second = run({"print", printed.string()});
    ASSERT_EQ(second.exitCode, 0) << second.err;
    EXPECT_EQ(second.out, first.out);
  }
}

TEST_F(CliTest, PrintToFileWritesWhatStdoutWouldShow) {
  fs::path input = writeInput("small.hlo", kSmallModule);
  CliResult toStdout = run({"print", input.string()});
  ASSERT_EQ(toStdout.exitCode, 0) << toStdout.err;
  fs::path output = work() / "out.hlo";
  CliResult toFile = run({"print", input.string(), "-o", output.string()});
  EXPECT_EQ(toFile.exitCode, 0) << toFile.err;
  EXPECT_EQ(toFile.out, "");
  EXPECT_EQ(readAll(output), toStdout.out);
  EXPECT_EQ(listing(work()), std::vector<std::string>{"out.hlo"});
}

TEST_F(CliTest, PrintIntoMissingDirectoryFailsAndWritesNothing) {
  fs::path input = writeInput("small.hlo", kSmallModule);
  fs::path output = work() / "missing" / "out.hlo";
  CliResult r = run({"print", input.string(), "-o", output.string()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find(output.string() + ": error: cannot write"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(listing(work()).empty());
}

TEST_F(CliTest, PrintOverADirectoryFailsAndLeavesNoTemporary) {
  // Renaming the finished temporary over a directory fails, after the temporary was written.
  fs::path input = writeInput("small.hlo", kSmallModule);
  fs::create_directory(work() / "out.hlo");
  CliResult r = run({"print", input.string(), "-o", (work() / "out.hlo").string()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("out.hlo: error: cannot write"), std::string::npos) << r.err;
  EXPECT_EQ(listing(work()), std::vector<std::string>{"out.hlo"});
  EXPECT_TRUE(fs::is_empty(work() / "out.hlo"));
}

TEST_F(CliTest, StdoutWriteErrorIsReportedAndFails) {
  // A full disk behind stdout: the command says so on stderr and exits 1, whatever wrote the text.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  fs::path input = writeInput("small.hlo", kSmallModule);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"print", input.string()},
                                               {"info", input.string()},
                                               {"explain", input.string()},
                                               {"dump", input.string(), "-o", (work() / "dump").string(), "--stages"},
                                               {"--list-passes"}}) {
    std::string command = shellQuoted(FS_CLI_PATH);
    for (const std::string& arg : args) command += " " + shellQuoted(arg);
    const fs::path err = work() / "stderr.txt";
    command += " >/dev/full 2>" + shellQuoted(err.string());
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << args[0];
    EXPECT_EQ(WEXITSTATUS(status), 1) << args[0];
    EXPECT_NE(readAll(err).find("cannot write to standard output: No space left on device"), std::string::npos)
        << args[0] << ": " << readAll(err);
  }
}

// ---- info --------------------------------------------------------------------------------------------

TEST_F(CliTest, InfoCountsOpcodes) {
  requireSample();
  CliResult r = run({"info", kMlpSample});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("module mlp_forward\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  instructions: 14 in 1 computation(s)\n"), std::string::npos) << r.out;
  // Counts are right-aligned after the opcode; compare the two words of each line.
  std::map<std::string, std::string> counts;
  std::istringstream lines(r.out.substr(r.out.find("instructions by opcode:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    std::istringstream words(line);
    std::string opcode;
    std::string count;
    words >> opcode >> count;
    counts[opcode] = count;
  }
  EXPECT_EQ(counts, (std::map<std::string, std::string>{
                        {"parameter", "5"},
                        {"broadcast", "3"},
                        {"add", "2"},
                        {"dot", "2"},
                        {"constant", "1"},
                        {"maximum", "1"},
                    }));
}

TEST_F(CliTest, InfoJsonIsValidAndCounts) {
  requireSample();
  CliResult r = run({"info", "--json", kMlpSample});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << r.out;
  EXPECT_EQ(j["module"], "mlp_forward");
  EXPECT_EQ(j["entry"], "mlp_forward");
  EXPECT_EQ(j["instruction_count"], 14);
  EXPECT_EQ(j["opcodes"]["dot"], 2);
  EXPECT_EQ(j["opcodes"]["parameter"], 5);
  ASSERT_EQ(j["parameters"].size(), 5u);
  EXPECT_EQ(j["parameters"][0]["name"], "x");
  EXPECT_EQ(j["parameters"][0]["bytes"], 64 * 256 * 4);
  EXPECT_EQ(j["output"]["shape"], "f32[64,10]{1,0}");
}

// Names come from input as bytes: a path and metadata that are not UTF-8 took `info --json` and
// `dump` down with an uncaught JSON exception (SIGABRT). Each bad byte is written as U+FFFD; the output is JSON.
TEST_F(CliTest, BytesThatAreNotUtf8BecomeReplacementCharactersInJson) {
  const std::string module =
      "HloModule bad_name\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
      "  ROOT n = f32[4] negate(p), metadata={op_name=\"jit(f)/neg\" source_file=\"/src/\xfe\xff.py\" "
      "source_line=7}\n}\n";
  fs::path input = work() / "in\xff.hlo";
  writeAll(input, module);
  CliResult info = run({"info", "--json", input.string()});
  ASSERT_EQ(info.exitCode, 0) << info.err;
  nlohmann::json j = nlohmann::json::parse(info.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << info.out;
  EXPECT_EQ(j["module"], "bad_name");

  fs::path out = work() / "out\xfe";
  CliResult dumped = run({"dump", input.string(), "-o", out.string(), "--pipeline=none"});
  ASSERT_EQ(dumped.exitCode, 0) << dumped.err;
  nlohmann::json stages = nlohmann::json::parse(readAll(out / "stages.json"), nullptr, false);
  ASSERT_FALSE(stages.is_discarded());
  EXPECT_NE(stages["source"].get<std::string>().find("in\xef\xbf\xbd.hlo"), std::string::npos) << stages["source"];
}

// ---- dump --------------------------------------------------------------------------------------------

TEST_F(CliTest, DumpWritesDotPngAndSvg) {
  requireSample();
  fs::path dir = work() / "dump";
  CliResult r = run({"dump", kMlpSample, "-o", dir.string(), "--png", "--svg", "--pipeline=none"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "computation mlp_forward [pipeline start]: " + dir.string() + "/hlo_graph_0.dot\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"hlo_graph_0.dot", "hlo_graph_0.png", "hlo_graph_0.svg",
                                                    "module_0.txt", "stages.json"}));
  EXPECT_EQ(readAll(dir / "hlo_graph_0.dot").rfind("digraph", 0), 0u);
  EXPECT_EQ(readAll(dir / "hlo_graph_0.png").substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_NE(readAll(dir / "hlo_graph_0.svg").find("<svg"), std::string::npos);
}

TEST_F(CliTest, DumpWithoutImagesWritesOnlyDot) {
  fs::path input = writeInput("small.hlo", kSmallModule);
  fs::path dir = work() / "dump";
  CliResult r = run({"dump", input.string(), "-o", dir.string(), "--pipeline", "none"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "computation main [pipeline start]: " + dir.string() + "/hlo_graph_0.dot\n");
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"hlo_graph_0.dot", "module_0.txt", "stages.json"}));
}

// --group-scopes: a 3.8k-instruction JAX step drawn as the viewer's first view, its layers and update as single
// nodes with counted edges, at every stage (the fusion pass's included); without the flag, every instruction.
TEST_F(CliTest, DumpGroupedByScopeDrawsAFewDozenNodes) {
  const std::string llm = std::string(FS_SOURCE_DIR) + "/tests/data/xla/modules/llm_train.before.txt";
  fs::path dir = work() / "grouped";
  CliResult r = run({"dump", llm, "-o", dir.string(), "--pipeline", "cpu", "--group-scopes",
                     "--dump-pass-re", "^fusion$"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto nodeStatements = [](const std::string& dot) {
    size_t count = 0;
    for (size_t at = dot.find("[label=<"); at != std::string::npos; at = dot.find("[label=<", at + 1)) ++count;
    return count;
  };
  // Stage 0 and the fusion pass's stage (the only other one --dump-pass-re writes; its number depends on how many
  // passes before it changed the module).
  std::vector<std::string> files;
  for (const std::string& name : listing(dir)) {
    if (name.starts_with("hlo_graph_") && name.ends_with(".dot")) files.push_back(name);
  }
  ASSERT_EQ(files.size(), 2u) << fmt::format("{}", fmt::join(listing(dir), " "));
  for (const std::string& file : files) {
    const std::string dot = readAll(dir / file);
    EXPECT_NE(dot.find("fs_group=\"jit(step)/jvp(block_0)\""), std::string::npos) << file;
    EXPECT_NE(dot.find("fs_count="), std::string::npos) << file;
    EXPECT_LE(nodeStatements(dot), 100u) << file;
  }
  fs::path flat = work() / "flat";
  ASSERT_EQ(run({"dump", llm, "-o", flat.string(), "--pipeline", "none"}).exitCode, 0);
  const std::string whole = readAll(flat / "hlo_graph_0.dot");
  EXPECT_EQ(whole.find("fs_group="), std::string::npos);
  EXPECT_GT(nodeStatements(whole), 1000u);
}

TEST_F(CliTest, DumpUnderARegularFileFailsAndCreatesNothing) {
  // Permission bits do not stop root, so an impossible directory is made by putting a file in the way.
  fs::path input = writeInput("small.hlo", kSmallModule);
  writeAll(work() / "file", "x");
  fs::path dir = work() / "file" / "dump";
  CliResult r = run({"dump", input.string(), "-o", dir.string(), "--png"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find(dir.string() + ": error: cannot create directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(listing(work()), std::vector<std::string>{"file"});
  EXPECT_EQ(readAll(work() / "file"), "x");
}

TEST_F(CliTest, DumpIntoProcFailsAndCreatesNothing) {
  const fs::path dir = "/proc/fusionscope_nope";
  if (!fs::is_directory("/proc")) GTEST_SKIP() << "no /proc on this system";
  fs::path input = writeInput("small.hlo", kSmallModule);
  CliResult r = run({"dump", input.string(), "-o", dir.string()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find(dir.string() + ": error:"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(CliTest, FailedDumpLeavesNoTemporaries) {
  // A directory where hlo_graph_0.png should go is no file an earlier dump wrote: the dump is refused before any
  // file is written, and nothing new is left. (A rename that fails half-way rolls back: file_util_test.)
  fs::path input = writeInput("small.hlo", kSmallModule);
  fs::path dir = work() / "dump";
  fs::create_directories(dir / "hlo_graph_0.png");
  CliResult r = run({"dump", input.string(), "-o", dir.string(), "--png", "--svg"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("would replace hlo_graph_0.png"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(hasTemporaries(dir)) << ::testing::PrintToString(listing(dir));
  EXPECT_FALSE(fs::exists(dir / "hlo_graph_0.svg"));
}

// SIGKILL while `dump --png` renders (Graphviz, seconds for the 1,000-instruction MobileNet step): the new directory
// is made only when the files are ready to go in, so a killed dump leaves nothing, where it left empty directories.
// A dump that finished before the signal came must have written everything.
TEST_F(CliTest, ADumpKilledWhileRenderingLeavesNothing) {
  const std::string module = std::string(FS_SOURCE_DIR) + "/tests/data/corpus/jax_mobilenet_v2_small_train.hlo";
  const fs::path dir = work() / "dump";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (std::freopen("/dev/null", "w", stdout) == nullptr || std::freopen("/dev/null", "w", stderr) == nullptr) {
      std::_Exit(126);
    }
    ::execl(FS_CLI_PATH, FS_CLI_PATH, "dump", module.c_str(), "-o", dir.c_str(), "--png", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::usleep(1500000);  // parsed and through the pipeline; rendering
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status)) {
    EXPECT_FALSE(fs::exists(dir)) << ::testing::PrintToString(listing(dir));
  } else {
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_TRUE(fs::exists(dir / "stages.json"));
    EXPECT_FALSE(hasTemporaries(dir)) << ::testing::PrintToString(listing(dir));
  }
  for (const auto& entry : fs::directory_iterator(work())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

// The files of a dump are published as one group: when one rename fails, the ones already renamed are
// taken back, so no DOT, module text or stages.json of the failed run is left.
TEST_F(CliTest, FailedDumpPublishesNoFile) {
  fs::path input = writeInput("small.hlo", kSmallModule);
  fs::path dir = work() / "dump";
  fs::create_directories(dir / "hlo_graph_0.png");
  CliResult r = run({"dump", input.string(), "-o", dir.string(), "--png", "--svg"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(listing(dir), std::vector<std::string>{"hlo_graph_0.png"});
}

TEST_F(CliTest, DumpOfMalformedModuleWritesNothing) {
  fs::path input = writeInput("broken.hlo", kUnverifiableModule);
  fs::path dir = work() / "dump";
  CliResult r = run({"dump", input.string(), "-o", dir.string()});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_FALSE(fs::exists(dir));

  CliResult drawn = run({"dump", "--no-verify", "--pipeline=none", input.string(), "-o", dir.string()});
  EXPECT_EQ(drawn.exitCode, 0) << drawn.err;
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"hlo_graph_0.dot", "module_0.txt", "stages.json"}));
}

// A dump never deletes or replaces a file it did not write (it deleted a user's module_7.txt and hlo_graph_42.png
// when pointed at their folder): files of the user's own are left alone, and a name it would overwrite is refused.
TEST_F(CliTest, DumpIntoAUsersFolderTouchesNoFileOfTheirs) {
  fs::path dir = work() / "users_folder";
  fs::create_directories(dir);
  writeAll(dir / "module_7.txt", "my notes\n");
  writeAll(dir / "hlo_graph_42.png", "my picture");
  CliResult r = run({"dump", kMlpSample, "-o", dir.string()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readAll(dir / "module_7.txt"), "my notes\n");
  EXPECT_EQ(readAll(dir / "hlo_graph_42.png"), "my picture");
  // A second dump into the same folder replaces its own files and still leaves the user's.
  CliResult again = run({"dump", kMlpSample, "-o", dir.string(), "--pipeline=none"});
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_FALSE(fs::exists(dir / "hlo_graph_1.dot"));  // the earlier, longer dump's stage file is gone
  EXPECT_EQ(readAll(dir / "module_7.txt"), "my notes\n");

  fs::path other = work() / "other_folder";
  fs::create_directories(other);
  writeAll(other / "module_0.txt", "not a dump\n");
  CliResult refused = run({"dump", kMlpSample, "-o", other.string()});
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_NE(refused.err.find("would replace module_0.txt, which no earlier dump into this directory wrote"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(readAll(other / "module_0.txt"), "not a dump\n");
  EXPECT_EQ(listing(other), std::vector<std::string>{"module_0.txt"});
}

// Two writers into one directory both finished with exit 0 and a stages.json naming the other's files: while one
// holds the directory, the other is refused (exit 1) and writes nothing; the lock file goes when the holder is done.
// `-o` through a symbolic link writes the link's target and keeps the link; `-o /dev/null` stays a device.
TEST_F(CliTest, OneWriterPerDirectoryAndOutputsFollowLinks) {
  fs::path dir = work() / "locked";
  CliResult first = run({"dump", kMlpSample, "-o", dir.string(), "--pipeline=none"});
  ASSERT_EQ(first.exitCode, 0) << first.err;
  EXPECT_FALSE(fs::exists(dir / ".fusionscope-lock"));
  {
    StatusOr<DirectoryLock> held = lockDirectory(dir.string());
    ASSERT_TRUE(held.ok()) << held.message();
    const std::vector<std::string> before = listing(dir);
    CliResult second = run({"dump", kMlpSample, "-o", dir.string()});
    EXPECT_EQ(second.exitCode, 1) << second.err;
    EXPECT_NE(second.err.find("another fusionscope-cli (pid " + std::to_string(::getpid()) + ") is writing"),
              std::string::npos)
        << second.err;
    EXPECT_EQ(listing(dir), before);
  }
  EXPECT_FALSE(fs::exists(dir / ".fusionscope-lock"));
  CliResult third = run({"dump", kMlpSample, "-o", dir.string()});
  EXPECT_EQ(third.exitCode, 0) << third.err;

  writeAll(work() / "target.hlo", "old");
  fs::create_symlink("target.hlo", work() / "link.hlo");
  CliResult printed = run({"print", kMlpSample, "-o", (work() / "link.hlo").string()});
  ASSERT_EQ(printed.exitCode, 0) << printed.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(work() / "link.hlo")));
  EXPECT_NE(readAll(work() / "target.hlo").find("HloModule"), std::string::npos);
  CliResult discarded = run({"print", kMlpSample, "-o", "/dev/null"});
  EXPECT_EQ(discarded.exitCode, 0) << discarded.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// 8 KB of computations that each call the next twice: every pipeline command used 8 GB for a minute before "out of
// memory". Inlining is refused before anything is copied, with the figure, as bad input; nothing is written.
TEST_F(CliTest, ACallTreeThatWouldInlineTo2To60InstructionsIsRefusedUpFront) {
  std::string text = "HloModule amp\n\nc0 {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n";
  for (int i = 1; i <= 60; ++i) {
    text += "c" + std::to_string(i) + " {\n  p = f32[4] parameter(0)\n  a = f32[4] call(p), to_apply=c" +
            std::to_string(i - 1) + "\n  b = f32[4] call(a), to_apply=c" + std::to_string(i - 1) +
            "\n  ROOT r = f32[4] add(a, b)\n}\n";
  }
  text += "ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c60\n}\n";
  const fs::path module = work() / "amp.hlo";
  writeAll(module, text);
  auto refused = [](const CliResult& r, const char* command) {
    EXPECT_EQ(r.exitCode, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("would hold 1.05e+06 instructions once its calls are inlined"), std::string::npos)
        << command << ": " << r.err;
  };
  refused(run({"verify", module.string()}), "verify");
  refused(run({"explain", module.string()}), "explain");
  refused(run({"dump", module.string(), "-o", (work() / "dump").string()}), "dump");
  refused(run({"run", module.string()}), "run");
  refused(run({"compile", module.string(), "-o", (work() / "bundle").string()}), "compile");
  EXPECT_FALSE(fs::exists(work() / "dump"));
  EXPECT_FALSE(fs::exists(work() / "bundle"));
}

// ---- pipeline: dump stages, explain, verify -------------------------------------------------------------

const std::string kMnistSample = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";

// The stage dump of the MNIST training step through the gpu preset: which passes change it, in which order,
// and the files each stage gets.
TEST_F(CliTest, DumpMnistThroughGpuPipelineWritesEveryStage) {
  if (!fs::exists(kMnistSample)) GTEST_SKIP() << "sample module not found: " << kMnistSample;
  fs::path dir = work() / "stages";
  CliResult r = run({"dump", kMnistSample, "-o", dir.string(), "--pipeline=gpu"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string d = dir.string();
  EXPECT_EQ(r.out, "computation mnist_softmax_train_step [GPU: pipeline start, before inline]: " + d +
                       "/hlo_graph_0.dot\n"
                       "computation mnist_softmax_train_step [GPU: after simplify, before reshape-mover]: " +
                       d +
                       "/hlo_graph_1.dot\n"
                       "computation mnist_softmax_train_step [GPU: after softmax-fusion, before fusion]: " +
                       d +
                       "/hlo_graph_2.dot\n"
                       "computation mnist_softmax_train_step [GPU: after fusion, before fusion-merger]: " +
                       d +
                       "/hlo_graph_3.dot\n"
                       "computation mnist_softmax_train_step [GPU: after multi-output-fusion, before cse]: " +
                       d + "/hlo_graph_4.dot\n");
  EXPECT_EQ(listing(dir),
            (std::vector<std::string>{"hlo_graph_0.dot", "hlo_graph_1.dot", "hlo_graph_2.dot", "hlo_graph_3.dot",
                                      "hlo_graph_4.dot", "module_0.txt", "module_1.txt", "module_2.txt", "module_3.txt",
                                      "module_4.txt", "stages.json"}));
  auto json = nlohmann::json::parse(readAll(dir / "stages.json"));
  EXPECT_EQ(json["schema"], "fusionscope.stages/1");
  EXPECT_EQ(json["pipeline"], "gpu");
  EXPECT_EQ(json["backend"], "gpu");
  ASSERT_EQ(json["stages"].size(), 5u);
  // The loss's sum of a negated sum: one sum, negated (XLA's simplifier does the same).
  EXPECT_EQ(json["stages"][1]["pass"], "simplify");
  EXPECT_EQ(json["stages"][2]["pass"], "softmax-fusion");  // the softmax's max diamond
  EXPECT_EQ(json["stages"][2]["fusions"].get<int>(), 1);
  EXPECT_EQ(json["stages"][3]["pass"], "fusion");
  EXPECT_EQ(json["stages"][3]["files"]["dot"], "hlo_graph_3.dot");
  EXPECT_GT(json["stages"][3]["fusions"].get<int>(), 1);
  EXPECT_FALSE(json["stages"][3]["decisions"].empty());
  EXPECT_FALSE(json["stages"][3]["changes"]["fused"].empty());
  EXPECT_EQ(json["stages"][4]["pass"], "multi-output-fusion");
  // Every module_N.txt parses back and is the stage's module: print of it is a fixed point.
  CliResult printed = run({"print", (dir / "module_4.txt").string()});
  ASSERT_EQ(printed.exitCode, 0) << printed.err;
  EXPECT_EQ(printed.out, readAll(dir / "module_4.txt"));
  // The fused stage draws fusion clusters.
  EXPECT_NE(readAll(dir / "hlo_graph_4.dot").find("subgraph cluster_"), std::string::npos);
}

TEST_F(CliTest, DumpStagesTablePrintsCountsPerStage) {
  if (!fs::exists(kMnistSample)) GTEST_SKIP() << "sample module not found: " << kMnistSample;
  CliResult r = run({"dump", kMnistSample, "-o", (work() / "d").string(), "--pipeline=cpu", "--stages"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("[CPU: pipeline start, before bf16-normalization]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage  pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(pipeline start)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("passes ran"), std::string::npos) << r.out;
  // The cpu preset has no multi-output fusion.
  EXPECT_EQ(r.out.find("multi-output-fusion"), std::string::npos) << r.out;
}

TEST_F(CliTest, DumpPassRegexSelectsStagesAndStageZeroIsAlwaysWritten) {
  if (!fs::exists(kMnistSample)) GTEST_SKIP() << "sample module not found: " << kMnistSample;
  fs::path dir = work() / "d";
  CliResult r = run({"dump", kMnistSample, "-o", dir.string(), "--dump-pass-re=^multi"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"hlo_graph_0.dot", "hlo_graph_4.dot", "module_0.txt",
                                                    "module_4.txt", "stages.json"}));
  auto json = nlohmann::json::parse(readAll(dir / "stages.json"));
  EXPECT_FALSE(json["stages"][1]["dumped"]);
  EXPECT_FALSE(json["stages"][2]["dumped"]);
  EXPECT_FALSE(json["stages"][3]["dumped"]);
  EXPECT_TRUE(json["stages"][4]["dumped"]);
}

TEST_F(CliTest, XlaFlagNamesAreAccepted) {
  if (!fs::exists(kMnistSample)) GTEST_SKIP() << "sample module not found: " << kMnistSample;
  fs::path dir = work() / "xla";
  CliResult r = run({"dump", kMnistSample, "--xla_dump_to=" + dir.string(), "--xla_dump_hlo_pass_re=.*",
                     "--xla_disable_hlo_passes=multi-output-fusion", "--xla_dump_hlo_as_dot", "--xla_dump_hlo_as_png"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "hlo_graph_3.png"));
  EXPECT_FALSE(fs::exists(dir / "hlo_graph_4.dot"));  // multi-output fusion was the fifth stage
  EXPECT_EQ(r.out.find("multi-output-fusion"), std::string::npos) << r.out;
}

TEST_F(CliTest, ExplicitPassListRunsInThatOrder) {
  if (!fs::exists(kMnistSample)) GTEST_SKIP() << "sample module not found: " << kMnistSample;
  fs::path dir = work() / "d";
  CliResult r = run({"dump", kMnistSample, "-o", dir.string(), "--passes=fusion,dce"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("[pipeline start, before fusion]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[after fusion, before dce]"), std::string::npos) << r.out;
  auto json = nlohmann::json::parse(readAll(dir / "stages.json"));
  EXPECT_EQ(json["pipeline"], "custom");
  ASSERT_EQ(json["passes"].size(), 2u);
  EXPECT_EQ(json["passes"][0]["pass"], "fusion");
  EXPECT_EQ(json["passes"][1]["pass"], "dce");
  // The fusion rules differ by backend: without --pipeline the list says which it ran with; with it, no note.
  EXPECT_NE(r.err.find("note: --passes fusion,dce run with the gpu backend's fusion rules"), std::string::npos)
      << r.err;
  fs::path cpuDir = work() / "cpu";
  CliResult cpu = run({"dump", kMnistSample, "-o", cpuDir.string(), "--pipeline", "cpu", "--passes=fusion,dce"});
  ASSERT_EQ(cpu.exitCode, 0) << cpu.err;
  EXPECT_EQ(cpu.err.find("note: --passes"), std::string::npos) << cpu.err;
}

TEST_F(CliTest, UnknownPassIsBadInputAndWritesNothing) {
  fs::path input = writeInput("small.hlo", kSmallModule);
  fs::path dir = work() / "d";
  CliResult r = run({"dump", input.string(), "-o", dir.string(), "--disable-passes=fusoin"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("unknown pass 'fusoin' (known passes: inline, simplify"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(CliTest, InvalidPassRegexIsBadInput) {
  fs::path input = writeInput("small.hlo", kSmallModule);
  CliResult r = run({"dump", input.string(), "-o", (work() / "d").string(), "--dump-pass-re=(fusion"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("--dump-pass-re: invalid regular expression '(fusion'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(work() / "d"));
}

TEST_F(CliTest, ListPassesNamesEveryPassAndPreset) {
  CliResult r = run({"--list-passes"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char* pass : {"inline", "simplify", "cse", "dce", "tuple-simplify", "fusion", "fusion-merger",
                           "multi-output-fusion", "batch-norm-expander", "rng-bit-generator-expander",
                           "gather-scatter-batching", "gather-expander", "scatter-expander"}) {
    EXPECT_NE(("\n" + r.out).find(std::string("\n") + pass + " "), std::string::npos) << pass << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("pipeline gpu: inline -> batch-norm-expander -> rng-bit-generator-expander -> "
                       "gather-scatter-batching -> gather-expander -> scatter-expander -> simplify"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("pipeline cpu: "), std::string::npos) << r.out;
}

TEST_F(CliTest, ExplainGivesTheReasonForEveryDecision) {
  if (!fs::exists(kMnistSample)) GTEST_SKIP() << "sample module not found: " << kMnistSample;
  CliResult r = run({"explain", kMnistSample, "--instruction=log_softmax_sum"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("about log_softmax_sum"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- not fusing log_softmax_sum into"), std::string::npos) << r.out;

  CliResult json = run({"explain", kMnistSample, "--json", "--fused"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  auto parsed = nlohmann::json::parse(json.out);
  ASSERT_FALSE(parsed["decisions"].empty());
  for (const auto& d : parsed["decisions"]) {
    EXPECT_TRUE(d["fused"].get<bool>());
    EXPECT_FALSE(d["reason"].get<std::string>().empty());
  }
}

TEST_F(CliTest, VerifyConfirmsEveryStageComputesTheSame) {
  if (!fs::exists(kMnistSample)) GTEST_SKIP() << "sample module not found: " << kMnistSample;
  CliResult r = run({"verify", kMnistSample, "--pipeline=gpu", "--trials=2"});
  ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("stage 3 [GPU: after fusion, before fusion-merger]: same results as stage 0"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("all 5 stage(s) agree with stage 0 on 2 random input set(s) (seed 1)"), std::string::npos)
      << r.out;
}

TEST_F(CliTest, VerifyNamesTheOpcodeItCannotEvaluate) {
  fs::path input = writeInput("custom.hlo", R"hlo(HloModule custom
ENTRY main {
  p = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(p), custom_call_target="MyKernel"
}
)hlo");
  CliResult r = run({"verify", input.string()});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("cannot evaluate: unsupported opcode(s) custom-call MyKernel (1)"), std::string::npos) << r.err;
}

}  // namespace
