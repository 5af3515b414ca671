// `fusionscope-cli run` and `compile` (the real binary): checked execution, traces, .npy in and out, the MNIST
// training loop, GPU bundles and the error for an opcode codegen cannot lower.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/io/idx.h"
#include "core/io/npy.h"
#include "tests/common/cli_runner.h"

namespace {

namespace fs = std::filesystem;

using fusionscope::testing::CliResult;
using fusionscope::testing::readAll;

class RunCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() / (std::string("fs_run_cli_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  CliResult run(std::initializer_list<std::string> args) {
    return fusionscope::testing::runProgram(FS_CLI_PATH, args, m_dir);
  }
  fs::path m_dir;
};

const std::string kMnist = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";

TEST_F(RunCliTest, RunsFusedAndUnfusedCheckedAndTraced) {
  const std::string trace = (m_dir / "timeline.ctf.json").string();
  CliResult fused = run({"run", kMnist, "--pipeline=gpu", "--fusion=on", "--iterations", "3", "--trace", trace});
  ASSERT_EQ(fused.exitCode, 0) << fused.out << fused.err;
  EXPECT_NE(fused.out.find("check against the evaluator: max error"), std::string::npos) << fused.out;
  EXPECT_NE(fused.out.find(": ok"), std::string::npos) << fused.out;
  nlohmann::json json = nlohmann::json::parse(readAll(trace));
  int kernelEvents = 0;
  int compileEvents = 0;
  for (const auto& event : json.at("traceEvents")) {
    if (event.value("ph", "") != "X") continue;
    if (event.value("cat", "") == "kernel") {
      ++kernelEvents;
      EXPECT_TRUE(event.at("args").contains("kind")) << event.dump();
      EXPECT_TRUE(event.at("args").contains("bytes read")) << event.dump();
      EXPECT_TRUE(event.at("args").contains("bytes written")) << event.dump();
      EXPECT_TRUE(event.at("args").contains("elements")) << event.dump();
    } else if (event.value("cat", "") == "compile") {
      ++compileEvents;
      EXPECT_NE(event.at("tid"), 1) << "compile spans have their own thread";
    }
  }
  const std::smatch counts = [&] {
    std::smatch m;
    std::regex_search(fused.out, m, std::regex(R"(: (\d+) kernels, )"));
    return m;
  }();
  ASSERT_FALSE(counts.empty()) << fused.out;
  const int fusedKernels = std::stoi(counts[1].str());
  EXPECT_EQ(kernelEvents, 3 * fusedKernels);
  EXPECT_GE(compileEvents, 1 + 3 * fusedKernels);  // passes + emit/optimize/jit per kernel

  CliResult unfused = run({"run", kMnist, "--pipeline=gpu", "--fusion=off"});
  ASSERT_EQ(unfused.exitCode, 0) << unfused.out << unfused.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(unfused.out, m, std::regex(R"(: (\d+) kernels, )"))) << unfused.out;
  EXPECT_GT(std::stoi(m[1].str()), fusedKernels) << "fusion off runs more kernels";
}

TEST_F(RunCliTest, ReadsNpyInputsAndSavesOutputs) {
  const fs::path module = m_dir / "neg.hlo";
  std::ofstream(module) << "HloModule neg\nENTRY e {\n  x = f32[3] parameter(0)\n  ROOT n = f32[3] negate(x)\n}\n";
  fusionscope::core::NpyArray input;
  input.type = fusionscope::core::PrimitiveType::kF32;
  input.dims = {3};
  const float values[3] = {1.5f, -2.0f, 0.25f};
  input.bytes.assign(reinterpret_cast<const char*>(values), sizeof(values));
  ASSERT_TRUE(fusionscope::core::writeNpy((m_dir / "x.npy").string(), input).ok());
  CliResult result = run({"run", module.string(), "--input", "x=" + (m_dir / "x.npy").string(), "--save-outputs",
                          (m_dir / "outputs").string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  auto output = fusionscope::core::readNpy((m_dir / "outputs" / "output_0_n.npy").string());
  ASSERT_TRUE(output.ok()) << output.message();
  ASSERT_EQ(output->bytes.size(), sizeof(values));
  const float* got = reinterpret_cast<const float*>(output->bytes.data());
  EXPECT_EQ(got[0], -1.5f);
  EXPECT_EQ(got[1], 2.0f);
  EXPECT_EQ(got[2], -0.25f);

  CliResult wrong = run({"run", module.string(), "--input", "y=" + (m_dir / "x.npy").string()});
  EXPECT_EQ(wrong.exitCode, 2);
  EXPECT_NE(wrong.err.find("no parameter 'y'"), std::string::npos) << wrong.err;
}

TEST_F(RunCliTest, MnistTrainingLoopReachesNinetyPercent) {
  CliResult result = run({"run", kMnist, "--pipeline=gpu", "--loop", "--steps", "1000"});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(result.out, m, std::regex(R"(loss ([0-9.]+) -> ([0-9.]+), final test accuracy ([0-9.]+)%)")))
      << result.out;
  EXPECT_LT(std::stod(m[2].str()), std::stod(m[1].str())) << "loss decreases";
  EXPECT_GE(std::stod(m[3].str()), 90.0) << result.out;
}

TEST_F(RunCliTest, UnsupportedOpcodeIsNamedAndExitsOne) {
  const fs::path module = m_dir / "bad.hlo";
  std::ofstream(module) << "HloModule bad\nENTRY e {\n  x = f32[4,4] parameter(0)\n  ROOT c = f32[4,4] cholesky(x), "
                           "lower=true\n}\n";
  CliResult result = run({"run", module.string(), "--pipeline=none"});
  EXPECT_EQ(result.exitCode, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("cannot lower cholesky"), std::string::npos) << result.err;
}

TEST_F(RunCliTest, CompileWritesABundle) {
  const fs::path bundle = m_dir / "bundle";
  CliResult result = run({"compile", kMnist, "--target=nvptx", "--sm=90", "-o", bundle.string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  nlohmann::json json = nlohmann::json::parse(readAll(bundle / "bundle.json"));
  EXPECT_EQ(json.at("schema"), "fusionscope.bundle/1");
  EXPECT_EQ(json.at("target").at("sm"), 90);
  EXPECT_TRUE(fs::exists(bundle / "kernels.ptx"));
  bool aliased = false;
  for (const auto& output : json.at("outputs")) aliased |= output.contains("aliases_parameter");
  EXPECT_TRUE(aliased) << "W' and b' alias W and b";
}

// A small separable IDX set in the MNIST layout (28x28 u8 images, u8 labels): class c lights rows 2c..2c+2 of
// the image, with a per-image pseudo-random speckle so no two images are equal.
void writeTinyMnist(const fs::path& dir, const std::string& prefix, int count, uint32_t seed) {
  fusionscope::core::IdxArray images;
  images.typeCode = fusionscope::core::kIdxUInt8;
  images.dims = {count, 28, 28};
  images.data.assign(static_cast<size_t>(count) * 28 * 28, 0);
  fusionscope::core::IdxArray labels;
  labels.typeCode = fusionscope::core::kIdxUInt8;
  labels.dims = {count};
  uint32_t state = seed;
  for (int n = 0; n < count; ++n) {
    const int label = (n * 7 + static_cast<int>(seed)) % 10;
    labels.data.push_back(static_cast<uint8_t>(label));
    uint8_t* image = images.data.data() + static_cast<size_t>(n) * 28 * 28;
    for (int row = 2 * label + 4; row < 2 * label + 6; ++row) {
      for (int col = 4; col < 24; ++col) image[row * 28 + col] = 220;
    }
    for (int k = 0; k < 30; ++k) {
      state = state * 1664525u + 1013904223u;
      image[(state >> 8) % (28 * 28)] = static_cast<uint8_t>(state >> 24);
    }
  }
  ASSERT_TRUE(fusionscope::core::writeIdx((dir / (prefix + "-images-idx3-ubyte")).string(), images, false).ok());
  ASSERT_TRUE(fusionscope::core::writeIdx((dir / (prefix + "-labels-idx1-ubyte.gz")).string(), labels, true).ok());
}

TEST_F(RunCliTest, MnistDirTrainsOnUserIdxFiles) {
  const fs::path data = m_dir / "mnist";
  fs::create_directories(data);
  writeTinyMnist(data, "train", 300, 1);
  writeTinyMnist(data, "t10k", 120, 5);
  CliResult result = run({"run", kMnist, "--loop", "--steps", "60", "--mnist-dir", data.string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(result.out, m, std::regex(R"(loss ([0-9.]+) -> ([0-9.]+), final test accuracy ([0-9.]+)%)")))
      << result.out;
  EXPECT_LT(std::stod(m[2].str()), 0.5 * std::stod(m[1].str())) << result.out;
  EXPECT_GE(std::stod(m[3].str()), 90.0) << result.out;

  const fs::path empty = m_dir / "empty";
  fs::create_directories(empty);
  CliResult missing = run({"run", kMnist, "--loop", "--mnist-dir", empty.string()});
  EXPECT_EQ(missing.exitCode, 2) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("train-images-idx3-ubyte"), std::string::npos) << missing.err;
}

TEST_F(RunCliTest, UnwritableOutputsFailCleanlyWithoutPartialFiles) {
  const fs::path trace = m_dir / "no" / "such" / "dir" / "t.json";
  CliResult noTraceDir = run({"run", kMnist, "--trace", trace.string()});
  EXPECT_EQ(noTraceDir.exitCode, 2) << noTraceDir.out << noTraceDir.err;
  EXPECT_NE(noTraceDir.err.find("--trace"), std::string::npos) << noTraceDir.err;
  EXPECT_FALSE(fs::exists(trace));

  // A file where the bundle directory should be: nothing is written, the error names the path.
  const fs::path blocker = m_dir / "blocker";
  std::ofstream(blocker) << "x";
  CliResult bundle = run({"compile", kMnist, "--sm=90", "-o", (blocker / "bundle").string()});
  EXPECT_NE(bundle.exitCode, 0) << bundle.out << bundle.err;
  EXPECT_NE(bundle.err.find((blocker / "bundle").string()), std::string::npos) << bundle.err;
  EXPECT_EQ(readAll(blocker), "x");

  CliResult save = run({"run", kMnist, "--save-outputs", (blocker / "out").string()});
  EXPECT_EQ(save.exitCode, 1) << save.out << save.err;
  EXPECT_NE(save.err.find((blocker / "out").string()), std::string::npos) << save.err;

  CliResult badSm = run({"compile", kMnist, "--sm=21", "-o", (m_dir / "b").string()});
  EXPECT_EQ(badSm.exitCode, 2) << badSm.out << badSm.err;
  EXPECT_FALSE(fs::exists(m_dir / "b"));

  const fs::path broken = m_dir / "broken.hlo";
  std::ofstream(broken) << "HloModule broken\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, z)\n}\n";
  CliResult parse = run({"run", broken.string()});
  EXPECT_EQ(parse.exitCode, 2) << parse.out << parse.err;
  EXPECT_NE(parse.err.find("broken.hlo:4:"), std::string::npos) << parse.err;
}

}  // namespace

namespace {

// True once process `pid` catches SIGINT (bit 1 of SigCgt in /proc/PID/status): `run` installs its handler when
// execution starts, after parsing and compiling.
bool catchesSigint(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) & (1ull << (SIGINT - 1))) != 0;
  }
  return false;
}

TEST(RunCliInterruptTest, SigintStopsTheLoopAndStillWritesTheTrace) {
  fs::path dir = fs::temp_directory_path() / ("fs_run_cli_interrupt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace = (dir / "timeline.ctf.json").string();
  const std::string out = (dir / "out.txt").string();
  const std::string err = (dir / "err.txt").string();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* o = std::freopen(out.c_str(), "w", stdout);
    FILE* e = std::freopen(err.c_str(), "w", stderr);
    (void)o;
    (void)e;
    ::execl(FS_CLI_PATH, FS_CLI_PATH, "run", kMnist.c_str(), "--loop", "--steps", "100000000", "--trace", trace.c_str(),
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  bool ready = false;
  for (int i = 0; i < 1200 && !ready; ++i) {  // up to 2 minutes on a loaded machine
    ready = catchesSigint(pid);
    if (!ready) ::usleep(100000);
  }
  ASSERT_TRUE(ready) << "run never installed its SIGINT handler";
  ::usleep(300000);  // let it train a few steps
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  std::string errText = readAll(err);
  EXPECT_TRUE(std::regex_search(errText, std::regex("interrupted by SIGINT after [0-9]+ of 100000000 steps")))
      << errText;
  nlohmann::json json = nlohmann::json::parse(readAll(trace));
  int kernels = 0;
  for (const auto& event : json.at("traceEvents")) kernels += event.value("cat", "") == "kernel";
  EXPECT_GT(kernels, 0);
  EXPECT_NE(readAll(out).find("trained "), std::string::npos) << readAll(out);
  fs::remove_all(dir);
}

TEST(RunCliInterruptTest, SigintWhileCompilingStillRunsOnceAndWritesTheTrace) {
  // The handler is in place before parsing: a Ctrl-C as soon as the program has started (before or during LLVM's
  // compile) waits for one iteration, then the trace is written and the exit code says SIGINT.
  fs::path dir = fs::temp_directory_path() / ("fs_run_cli_early_interrupt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace = (dir / "timeline.ctf.json").string();
  const std::string err = (dir / "err.txt").string();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* o = std::freopen("/dev/null", "w", stdout);
    FILE* e = std::freopen(err.c_str(), "w", stderr);
    (void)o;
    (void)e;
    ::execl(FS_CLI_PATH, FS_CLI_PATH, "run", kMnist.c_str(), "--iterations", "100000", "--trace", trace.c_str(),
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  bool ready = false;
  for (int i = 0; i < 1200 && !ready; ++i) {
    ready = catchesSigint(pid);
    if (!ready) ::usleep(1000);
  }
  ASSERT_TRUE(ready) << "run never installed its SIGINT handler";
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << readAll(err);
  EXPECT_TRUE(std::regex_search(readAll(err), std::regex("interrupted by SIGINT after 1 of 100000 iterations")))
      << readAll(err);
  EXPECT_TRUE(fs::exists(trace));
  fs::remove_all(dir);
}

}  // namespace
