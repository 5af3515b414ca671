// `fusionscope-cli run` and `compile` (the real binary): checked execution, traces, .npy in and out, the MNIST
// training loop, GPU bundles and the error for an opcode codegen cannot lower.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/io/npy.h"
#include "profiler/compare/trace_stats.h"
#include "profiler/trace/chrome_json_import.h"
#include "tests/common/cli_runner.h"
#include "tests/common/source_paths.h"

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
  std::vector<std::pair<double, double>> iterations;  // (ts, end) in µs
  std::map<std::string, std::vector<std::pair<double, double>>> compileByTrack;
  for (const auto& event : json.at("traceEvents")) {
    if (event.value("ph", "") != "X") continue;
    if (event.value("cat", "") == "iteration") {
      const double ts = event.at("ts").get<double>();
      iterations.emplace_back(ts, ts + event.at("dur").get<double>());
    }
    if (event.value("cat", "") == "kernel") {
      ++kernelEvents;
      EXPECT_TRUE(event.at("args").contains("kind")) << event.dump();
      EXPECT_TRUE(event.at("args").contains("bytes read")) << event.dump();
      EXPECT_TRUE(event.at("args").contains("bytes written")) << event.dump();
      EXPECT_TRUE(event.at("args").contains("elements")) << event.dump();
    } else if (event.value("cat", "") == "compile") {
      ++compileEvents;
      EXPECT_NE(event.at("tid"), 1) << "compile spans have their own thread";
      const double ts = event.at("ts").get<double>();
      compileByTrack[event.at("tid").dump()].emplace_back(ts, ts + event.at("dur").get<double>());
    }
  }
  for (auto& [tid, spans] : compileByTrack) {  // kernels compile side by side, each thread on a track of its own
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_GE(spans[i].first + 1e-3, spans[i - 1].second) << "track " << tid;
  }
  const std::smatch counts = [&] {
    std::smatch m;
    std::regex_search(fused.out, m, std::regex(R"(: (\d+) kernels, )"));
    return m;
  }();
  ASSERT_FALSE(counts.empty()) << fused.out;
  const int fusedKernels = std::stoi(counts[1].str());
  EXPECT_EQ(kernelEvents, 3 * fusedKernels);
  EXPECT_GE(compileEvents, 2 + 3 * fusedKernels);  // passes + emit/optimize/codegen per kernel + link
  // One span per iteration, in order, each holding that iteration's launches: what the comparison's per-iteration
  // spread is read from.
  ASSERT_EQ(iterations.size(), 3u);
  for (size_t i = 1; i < iterations.size(); ++i) EXPECT_GE(iterations[i].first, iterations[i - 1].second);
  auto imported = fusionscope::profiler::importChromeTrace(trace);
  ASSERT_TRUE(imported.ok()) << imported.message();
  const fusionscope::profiler::TraceStats traced = fusionscope::profiler::computeStats(*imported);
  ASSERT_EQ(traced.iterationDeviceNs.size(), 3u);
  int64_t inIterations = 0;
  for (int64_t ns : traced.iterationDeviceNs) {
    EXPECT_GT(ns, 0);
    inIterations += ns;
  }
  EXPECT_EQ(inIterations, traced.deviceTimeNs) << "every launch lies inside its iteration";

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

// --loop is a general training loop: outputs aliasing parameters carry over, --feed datasets are fed batch by
// batch (rows wrapping around), --input sets a starting value, and output 0 is reported as the loss.
TEST_F(RunCliTest, LoopCarriesAliasedOutputsAndFeedsBatches) {
  const fs::path module = m_dir / "accumulate.hlo";
  std::ofstream(module) << R"(HloModule accumulate, input_output_alias={ {1}: (0, {}, may-alias) }
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %step (w: f32[3], x: f32[2,3]) -> (f32[], f32[3]) {
  %w = f32[3] parameter(0)
  %x = f32[2,3] parameter(1)
  %zero = f32[] constant(0)
  %loss = f32[] reduce(%w, %zero), dimensions={0}, to_apply=%add
  %rows = f32[3] reduce(%x, %zero), dimensions={0}, to_apply=%add
  %next = f32[3] add(%w, %rows)
  ROOT %out = (f32[], f32[3]) tuple(%loss, %next)
}
)";
  auto writeF32 = [&](const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    fusionscope::core::NpyArray array{fusionscope::core::PrimitiveType::kF32, std::move(dims), {}};
    array.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    EXPECT_TRUE(fusionscope::core::writeNpy((m_dir / name).string(), array).ok());
    return (m_dir / name).string();
  };
  // Four rows of 1s, 2s, 3s, 4s: batches of two sum to 3, 7, 3 per element; w starts at 0.5.
  const std::string data = writeF32("x.npy", {4, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  const std::string start = writeF32("w.npy", {3}, {0.5f, 0.5f, 0.5f});
  CliResult result = run({"run", module.string(), "--loop", "--steps", "3", "--feed", "x=" + data, "--input",
                          "w=" + start, "--save-outputs", (m_dir / "outputs").string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("ran 3 steps"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("loss 1.5000 -> 31.5000"), std::string::npos) << result.out;  // sum(w) before steps 1, 3
  auto w = fusionscope::core::readNpy((m_dir / "outputs" / "output_1_next.npy").string());
  ASSERT_TRUE(w.ok()) << w.message();
  const float* got = reinterpret_cast<const float*>(w->bytes.data());
  EXPECT_EQ((std::vector<float>(got, got + 3)), (std::vector<float>{13.5f, 13.5f, 13.5f}));

  CliResult wrongRows = run({"run", module.string(), "--loop", "--feed", "x=" + start});
  EXPECT_EQ(wrongRows.exitCode, 2) << wrongRows.out << wrongRows.err;
  EXPECT_NE(wrongRows.err.find("the dataset must be f32[N,3]"), std::string::npos) << wrongRows.err;
  CliResult noLoop = run({"run", module.string(), "--feed", "x=" + data});
  EXPECT_EQ(noLoop.exitCode, 2) << noLoop.out << noLoop.err;
  EXPECT_NE(noLoop.err.find("--feed needs --loop"), std::string::npos) << noLoop.err;

  const fs::path plain = m_dir / "plain.hlo";
  std::ofstream(plain) << "HloModule plain\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n";
  CliResult noAlias = run({"run", plain.string(), "--loop"});
  EXPECT_EQ(noAlias.exitCode, 2) << noAlias.out << noAlias.err;
  EXPECT_NE(noAlias.err.find("no output aliases a parameter"), std::string::npos) << noAlias.err;
}

TEST_F(RunCliTest, UnsupportedOpcodeIsNamedAndExitsOne) {
  const fs::path module = m_dir / "bad.hlo";
  std::ofstream(module) << "HloModule bad\nENTRY e {\n  x = f32[4,4] parameter(0)\n  ROOT c = f32[4,4] cholesky(x), "
                           "lower=true\n}\n";
  CliResult result = run({"run", module.string(), "--pipeline=none"});
  EXPECT_EQ(result.exitCode, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("cannot lower cholesky"), std::string::npos) << result.err;
}

// A module with complex numbers (an FFT of a real signal, its magnitude) runs and is checked; the complex ops codegen
// does not lower (maximum and remainder, which complex numbers do not define) are named with their opcode and type,
// before any planning (the message used to name only the first one planning reached, by its type: "c: element type c64
// is not supported"); exit 1, as any module that cannot run.
TEST_F(RunCliTest, ComplexModulesRunAndWhatCannotIsNamedByOpcode) {
  const fs::path module = m_dir / "fft.hlo";
  std::ofstream(module) << "HloModule fft\nENTRY e {\n  x = f32[8,64] parameter(0)\n  c = c64[8,64] convert(x)\n"
                           "  f = c64[8,64] fft(c), fft_type=FFT, fft_length={64}\n  ROOT a = f32[8,64] abs(f)\n}\n";
  const fs::path cannot = m_dir / "cannot.hlo";
  std::ofstream(cannot) << "HloModule cannot\nENTRY e {\n  x = c64[8,8] parameter(0)\n"
                           "  d = c64[8,8] maximum(x, x)\n  t = c64[8,8] remainder(d, x)\n"
                           "  ROOT a = f32[8,8] abs(t)\n}\n";
  for (const char* pipeline : {"--pipeline=none", "--pipeline=cpu"}) {
    CliResult ran = run({"run", module.string(), pipeline});
    EXPECT_EQ(ran.exitCode, 0) << ran.out << ran.err;
    EXPECT_NE(ran.out.find("check against the evaluator"), std::string::npos) << ran.out;
    EXPECT_NE(ran.out.find(": ok"), std::string::npos) << ran.out;
    CliResult refused = run({"run", cannot.string(), pipeline});
    EXPECT_EQ(refused.exitCode, 1) << refused.out << refused.err;
    for (const char* named : {"c64 (2 instructions", "maximum d", "remainder t"}) {
      EXPECT_NE(refused.err.find(named), std::string::npos) << pipeline << ": " << refused.err;
    }
  }
}

// A while loop whose condition never turns false: the JIT had no bound and ran forever. --max-trips stops it with
// the loop named (the default is 1e8 trips in all per iteration), exit 2: the input is at fault.
TEST_F(RunCliTest, ALoopThatNeverEndsStopsAtTheTripLimit) {
  const fs::path module = m_dir / "forever.hlo";
  std::ofstream(module) << R"hlo(HloModule forever
cond {
  c = (s32[], f32[4]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  b = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f32[4] get-tuple-element(b), index=1
  y = f32[4] negate(x)
  ROOT r = (s32[], f32[4]) tuple(j, y)
}
ENTRY e {
  z = s32[] constant(0)
  p = f32[4] parameter(0)
  init = (s32[], f32[4]) tuple(z, p)
  ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
}
)hlo";
  CliResult result = run({"run", module.string(), "--pipeline=none", "--no-check", "--max-trips", "1000"});
  EXPECT_EQ(result.exitCode, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("w: the while loops made 1000 trips in all (1000 of this loop's) and its condition is "
                            "still true"),
            std::string::npos)
      << result.err;
}

// Loops nested so that each stays under the limit but together they would run for hours (2e9 outer trips of 1e5
// inner ones): the limit counts every loop's trips, so the run stops; and the result check's evaluator stops at its
// work budget with the figure.
TEST_F(RunCliTest, NestedLoopsStopAtTheTripLimitInAll) {
  const fs::path module = m_dir / "nested.hlo";
  std::ofstream(module) << R"hlo(HloModule nested
ibody {
  p = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT a = s32[] add(p, one)
}
icond {
  p = s32[] parameter(0)
  n = s32[] constant(100000)
  ROOT lt = pred[] compare(p, n), direction=LT
}
obody {
  p = s32[] parameter(0)
  z = s32[] constant(0)
  inner = s32[] while(z), body=ibody, condition=icond
  ROOT a = s32[] add(p, inner)
}
ocond {
  p = s32[] parameter(0)
  n = s32[] constant(2000000000)
  ROOT lt = pred[] compare(p, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  ROOT outer = s32[] while(z), body=obody, condition=ocond
}
)hlo";
  CliResult result = run({"run", module.string(), "--pipeline=none", "--no-check", "--max-trips", "300000"});
  EXPECT_EQ(result.exitCode, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("inner: the while loops made 300000 trips in all"), std::string::npos) << result.err;

  CliResult verify = run({"verify", module.string(), "--pipeline=none", "--max-work", "1e7"});
  EXPECT_EQ(verify.exitCode, 2) << verify.out << verify.err;
  EXPECT_NE(verify.err.find("over its budget of 1.0e+07"), std::string::npos) << verify.err;
}

// Few trips, heavy bodies: 1000 x 1000 trips of a million-element add (10^12 operations) stayed under the trip
// limit and ran for hours. The compiled loop stops at --max-work operations; verify refuses before evaluating, the
// estimate in its message.
TEST_F(RunCliTest, HeavyLoopsStopAtTheWorkBudget) {
  const fs::path module = m_dir / "heavy.hlo";
  std::ofstream(module) << R"hlo(HloModule heavy
inner_body {
  s = (s64[], s32[1048576]) parameter(0)
  i = s64[] get-tuple-element(s), index=0
  x = s32[1048576] get-tuple-element(s), index=1
  y = s32[1048576] add(x, x)
  one = s64[] constant(1)
  j = s64[] add(i, one)
  ROOT r = (s64[], s32[1048576]) tuple(j, y)
}
cond {
  s = (s64[], s32[1048576]) parameter(0)
  i = s64[] get-tuple-element(s), index=0
  n = s64[] constant(1000)
  ROOT c = pred[] compare(i, n), direction=LT
}
outer_body {
  s = (s64[], s32[1048576]) parameter(0)
  i = s64[] get-tuple-element(s), index=0
  x = s32[1048576] get-tuple-element(s), index=1
  zero = s64[] constant(0)
  z = (s64[], s32[1048576]) tuple(zero, x)
  inner = (s64[], s32[1048576]) while(z), condition=cond, body=inner_body
  y = s32[1048576] get-tuple-element(inner), index=1
  one = s64[] constant(1)
  j = s64[] add(i, one)
  ROOT r = (s64[], s32[1048576]) tuple(j, y)
}
ENTRY main {
  p = s32[1048576] parameter(0)
  zero = s64[] constant(0)
  s = (s64[], s32[1048576]) tuple(zero, p)
  outer = (s64[], s32[1048576]) while(s), condition=cond, body=outer_body
  ROOT r = s32[1048576] get-tuple-element(outer), index=1
}
)hlo";
  CliResult result = run({"run", module.string(), "--pipeline=none", "--no-check", "--max-work", "1e8"});
  EXPECT_EQ(result.exitCode, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("inner: stopped after"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("over the budget of 1.0e+08 (raise it with --max-work)"), std::string::npos) << result.err;

  CliResult verify = run({"verify", module.string(), "--pipeline=none"});
  EXPECT_EQ(verify.exitCode, 2) << verify.out << verify.err;
  EXPECT_NE(verify.err.find("over the budget of 1.0e+10; raise it with --max-work"), std::string::npos) << verify.err;
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

// An ahead-of-time object that calls LAPACK: compile copies this build's runtime library beside it for the host's
// architecture and prints the link line; for another architecture it says what to build instead.
TEST_F(RunCliTest, AheadOfTimeLapackObjectsComeWithTheirRuntimeLibrary) {
  const std::string gp = std::string(FS_SOURCE_DIR) + "/tests/data/xla/modules/gp_regression.before.txt";
  const fs::path host = m_dir / "gp_host";
  CliResult result = run({"compile", gp, "--target", "x86-64", "--cpp-class", "gp::Step", "-o", host.string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  EXPECT_TRUE(fs::exists(host / "Step.o") && fs::exists(host / "Step.h"));
  EXPECT_GT(fs::file_size(host / "libfusionscope_linalg.a"), 0u);
  EXPECT_NE(result.out.find("the object calls: fusionscope_linalg_run"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("libfusionscope_linalg.a -llapacke -llapack -lblas -lm"), std::string::npos) << result.out;
  const fs::path arm = m_dir / "gp_arm";
  result = run({"compile", gp, "--target", "aarch64", "--cpp-class", "gp::Step", "-o", arm.string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  EXPECT_FALSE(fs::exists(arm / "libfusionscope_linalg.a"));
  EXPECT_NE(result.out.find("build core/linalg/linalg_runtime.cpp for aarch64"), std::string::npos) << result.out;
}

// A compile that fails while writing over an earlier bundle (here: constants.bin is a folder, which it may not
// replace) leaves the earlier bundle.json and kernels.ptx as they were: new PTX used to land beside the old
// bundle.json, a bundle that contradicts itself.
TEST_F(RunCliTest, AFailingCompileLeavesTheEarlierBundleAsItWas) {
  const fs::path bundle = m_dir / "bundle";
  ASSERT_EQ(run({"compile", kMnist, "-o", bundle.string()}).exitCode, 0);
  fs::remove(bundle / "constants.bin");
  fs::create_directory(bundle / "constants.bin");
  const std::string json = readAll(bundle / "bundle.json");
  const std::string ptx = readAll(bundle / "kernels.ptx");
  // Another module whose bundle has constants (an array constant stays a buffer of its own).
  const fs::path other = m_dir / "with_constants.hlo";
  std::ofstream(other) << "HloModule with_constants\nENTRY e {\n  x = f32[4] parameter(0)\n"
                          "  c = f32[4] constant({1, 2, 3, 4})\n  ROOT s = f32[4] add(x, c)\n}\n";
  CliResult result = run({"compile", other.string(), "-o", bundle.string()});
  EXPECT_EQ(result.exitCode, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("constants.bin: error: cannot write: Is a directory"), std::string::npos) << result.err;
  EXPECT_EQ(readAll(bundle / "bundle.json"), json);
  EXPECT_EQ(readAll(bundle / "kernels.ptx"), ptx);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(bundle)) ++entries;
  EXPECT_EQ(entries, 3) << "no temporary or lock left behind";
}

// Ahead-of-time compilation (docs/AOT.md): NAME.h and NAME.o, the fusion report, and one message with nothing
// written for each kind of bad request.
TEST_F(RunCliTest, CompileAheadOfTimeWritesHeaderAndObject) {
  const fs::path out = m_dir / "aot";
  CliResult result = run({"compile", kMnist, "--target", "x86-64", "--cpp-class", "mnist::Step", "-o", out.string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("x86_64-unknown-linux-gnu (CPU x86-64): 13 kernels"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("fusion on: 13 kernels"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("fusion off: "), std::string::npos) << result.out;
  EXPECT_NE(readAll(out / "Step.h").find("class Step {"), std::string::npos);
  EXPECT_EQ(readAll(out / "Step.o").substr(0, 4), "\x7f" "ELF");

  auto refused = [&](std::initializer_list<std::string> args, int code, const std::string& message) {
    const fs::path dir = m_dir / "refused";
    std::vector<std::string> command = {"compile", kMnist, "-o", dir.string()};
    command.insert(command.end(), args);
    CliResult r = fusionscope::testing::runProgram(FS_CLI_PATH, command, m_dir);
    EXPECT_EQ(r.exitCode, code) << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir)) << "nothing written";
  };
  refused({"--target", "x86-64"}, 2, "needs --cpp-class");
  refused({"--target", "riscv", "--cpp-class", "M"}, 2, "riscv");
  refused({"--target", "x86-64", "--cpp-class", "M", "--cpu", "pentium-9000"}, 2, "--cpu pentium-9000");
  refused({"--target", "aarch64", "--cpp-class", "M", "--features", "+avx2"}, 2, "'avx2' is not a feature");
  refused({"--target", "x86-64", "--cpp-class", "class"}, 2, "--cpp-class 'class'");
  refused({"--target", "x86-64", "--cpp-class", "M", "--sm", "80"}, 2, "--sm is for --target nvptx");
  refused({"--cpp-class", "M"}, 2, "are for the CPU targets");

  // An op codegen cannot lower: named, exit 1, no files.
  const fs::path cannot = m_dir / "cannot.hlo";
  std::ofstream(cannot) << "HloModule f\nENTRY e {\n  x = c64[8] parameter(0)\n"
                           "  ROOT y = c64[8] maximum(x, x)\n}\n";
  CliResult unsupported =
      run({"compile", cannot.string(), "--target", "aarch64", "--cpp-class", "F", "-o", (m_dir / "f").string()});
  EXPECT_EQ(unsupported.exitCode, 1) << unsupported.out << unsupported.err;
  EXPECT_NE(unsupported.err.find("maximum y"), std::string::npos) << unsupported.err;
  EXPECT_FALSE(fs::exists(m_dir / "f"));

  // A compile that cannot write the object (a folder in its place) leaves the earlier header as it was.
  const std::string header = readAll(out / "Step.h");
  fs::remove(out / "Step.o");
  fs::create_directory(out / "Step.o");
  CliResult blocked = run({"compile", std::string(FS_SOURCE_DIR) + "/samples/mlp/mlp.hlo", "--target", "x86-64",
                           "--cpp-class", "Step", "-o", out.string()});
  EXPECT_EQ(blocked.exitCode, 1) << blocked.out << blocked.err;
  EXPECT_NE(blocked.err.find("Step.o"), std::string::npos) << blocked.err;
  EXPECT_EQ(readAll(out / "Step.h"), header);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(out)) ++entries;
  EXPECT_EQ(entries, 2) << "no temporary or lock left behind";
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

  // The outputs were saved, then the trace could not be written: the directory this run made goes too.
  CliResult traceFails = run({"run", kMnist, "--save-outputs", (m_dir / "outs").string(), "--trace", "/dev/full"});
  EXPECT_EQ(traceFails.exitCode, 1) << traceFails.out << traceFails.err;
  EXPECT_FALSE(fs::exists(m_dir / "outs"));

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
  EXPECT_NE(readAll(out).find("ran "), std::string::npos) << readAll(out);
  fs::remove_all(dir);
}

// A while loop that never ends stops at Ctrl-C (the runtime checks the flag every trip) instead of waiting for the
// 30 s grace period: the trace is still written, and the exit code says SIGINT.
TEST(RunCliInterruptTest, SigintStopsAnEndlessWhileLoop) {
  fs::path dir = fs::temp_directory_path() / ("fs_run_cli_endless_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string module = (dir / "forever.hlo").string();
  std::ofstream(module) << "HloModule forever\ncond {\n  p = f32[4] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n"
                           "body {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\nENTRY e {\n"
                           "  x = f32[4] parameter(0)\n  ROOT w = f32[4] while(x), condition=cond, body=body\n}\n";
  const std::string trace = (dir / "timeline.ctf.json").string();
  const std::string err = (dir / "err.txt").string();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* o = std::freopen("/dev/null", "w", stdout);
    FILE* e = std::freopen(err.c_str(), "w", stderr);
    (void)o;
    (void)e;
    ::execl(FS_CLI_PATH, FS_CLI_PATH, "run", module.c_str(), "--pipeline=none", "--trace", trace.c_str(),
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  bool ready = false;
  for (int i = 0; i < 1200 && !ready; ++i) {
    ready = catchesSigint(pid);
    if (!ready) ::usleep(100000);
  }
  ASSERT_TRUE(ready) << "run never installed its SIGINT handler";
  ::usleep(1000000);  // compiled and looping by now on a loaded machine (the loop is the only thing to run)
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  const std::string errText = readAll(err);
  // Stopped by the loop's own check, not by the grace period's alarm (which says so): a state, not a duration.
  EXPECT_EQ(errText.find("did not finish within"), std::string::npos) << errText;
  EXPECT_TRUE(std::regex_search(errText, std::regex("w: interrupted after [0-9]+ iterations"))) << errText;
  // The trace is written (with the loop's launches, unless the signal came before the first trip).
  nlohmann::json json = nlohmann::json::parse(readAll(trace));
  EXPECT_TRUE(json.at("traceEvents").is_array());
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

// `run --json`: stdout is one JSON object and nothing else; the human-readable lines go to stderr.
nlohmann::json parseRunJson(const CliResult& result) {
  nlohmann::json json = nlohmann::json::parse(result.out);  // throws (fails the test) on anything but one object
  EXPECT_TRUE(json.is_object()) << result.out;
  return json;
}

TEST_F(RunCliTest, JsonReportsTimingsKernelsAndTheCheck) {
  CliResult fused = run({"run", kMnist, "--fusion=on", "--iterations", "3", "--json"});
  ASSERT_EQ(fused.exitCode, 0) << fused.out << fused.err;
  const nlohmann::json on = parseRunJson(fused);
  EXPECT_EQ(on.at("module"), "mnist_softmax_train_step") << on.dump(2);
  EXPECT_EQ(on.at("pipeline"), "cpu");
  EXPECT_EQ(on.at("fusion"), "on");
  EXPECT_EQ(on.at("iterations"), 3);
  EXPECT_GT(on.at("wall_ns_per_iteration").get<double>(), 0);
  EXPECT_GT(on.at("kernel_ns_per_iteration").get<double>(), 0);
  // Kernel time is part of the end-to-end time of an iteration.
  EXPECT_LE(on.at("kernel_ns_per_iteration").get<double>(), on.at("wall_ns_per_iteration").get<double>() * 1.01);
  EXPECT_EQ(on.at("check"), "ok");
  EXPECT_FALSE(on.contains("check_reason"));
  EXPECT_GE(on.at("max_error").get<double>(), 0);
  const int fusedKernels = on.at("kernels").get<int>();
  ASSERT_GT(fusedKernels, 0);
  ASSERT_EQ(on.at("kernel_list").size(), static_cast<size_t>(fusedKernels));
  for (const auto& kernel : on.at("kernel_list")) {
    EXPECT_FALSE(kernel.at("name").get<std::string>().empty()) << kernel.dump();
    EXPECT_FALSE(kernel.at("kind").get<std::string>().empty()) << kernel.dump();
    EXPECT_FALSE(kernel.at("instruction").get<std::string>().empty()) << kernel.dump();
    EXPECT_GT(kernel.at("median_ns").get<double>(), 0) << kernel.dump();
  }
  EXPECT_NE(fused.err.find("check against the evaluator"), std::string::npos) << "human text moves to stderr";

  CliResult unfused = run({"run", kMnist, "--fusion=off", "--iterations", "2", "--json"});
  ASSERT_EQ(unfused.exitCode, 0) << unfused.out << unfused.err;
  const nlohmann::json off = parseRunJson(unfused);
  EXPECT_EQ(off.at("fusion"), "off");
  EXPECT_EQ(off.at("iterations"), 2);
  EXPECT_EQ(off.at("check"), "ok");
  EXPECT_GT(off.at("kernels").get<int>(), fusedKernels) << "fusion off runs more kernels";
}

// Real JAX loops (fori_loop and a data-dependent while_loop; a scan writing its outputs with
// dynamic-update-slice), as jax dumped them before and after XLA's CPU pipeline: compiled, run and checked.
TEST_F(RunCliTest, JaxLoopsRunAndCheck) {
  const std::string dir = std::string(FS_SOURCE_DIR) + "/tests/data/xla/modules/";
  for (const char* name : {"loops.before.txt", "loops.after.txt", "scan_rnn.before.txt", "scan_rnn.after.txt"}) {
    for (const char* fusion : {"--fusion=on", "--fusion=off"}) {
      CliResult result = run({"run", dir + name, "--pipeline=cpu", fusion, "--iterations", "2", "--json"});
      ASSERT_EQ(result.exitCode, 0) << name << " " << fusion << "\n" << result.out << result.err;
      const nlohmann::json json = parseRunJson(result);
      EXPECT_EQ(json.at("check"), "ok") << name << " " << fusion << "\n" << json.dump(2);
      // Kernels inside the loop bodies are timed too: their medians are sums over a run's loop iterations.
      double loopKernels = 0;
      for (const auto& kernel : json.at("kernel_list")) loopKernels += kernel.at("median_ns").get<double>();
      EXPECT_GT(loopKernels, 0) << json.dump(2);
    }
  }
  // The trace has one event per launch of a loop body's kernel: scan_rnn's body runs 16 times per iteration.
  const std::string trace = (m_dir / "scan.ctf.json").string();
  CliResult traced = run({"run", dir + "scan_rnn.after.txt", "--pipeline=none", "--trace", trace});
  ASSERT_EQ(traced.exitCode, 0) << traced.out << traced.err;
  nlohmann::json json = nlohmann::json::parse(readAll(trace));
  int tanhLaunches = 0;
  for (const auto& event : json.at("traceEvents")) {
    tanhLaunches += event.value("cat", "") == "kernel" && event.value("name", "") == "add_tanh_fusion";
  }
  EXPECT_EQ(tanhLaunches, 16);
}

TEST_F(RunCliTest, JsonCheckSkippedWithNoCheck) {
  CliResult result = run({"run", kMnist, "--no-check", "--json"});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  const nlohmann::json json = parseRunJson(result);
  EXPECT_EQ(json.at("check"), "skipped") << json.dump(2);
  EXPECT_EQ(json.at("check_reason"), "--no-check");
  EXPECT_TRUE(json.at("max_error").is_null());
  EXPECT_EQ(json.at("iterations"), 1);
}

TEST_F(RunCliTest, JsonErrorsStayOnStderr) {
  CliResult loop = run({"run", kMnist, "--loop", "--json"});
  EXPECT_EQ(loop.exitCode, 2);
  EXPECT_TRUE(loop.out.empty()) << loop.out;
  EXPECT_NE(loop.err.find("--json does not cover --loop"), std::string::npos) << loop.err;

  const fs::path module = m_dir / "bad.hlo";
  std::ofstream(module) << "HloModule bad\nENTRY e {\n  x = f32[4,4] parameter(0)\n  ROOT c = f32[4,4] cholesky(x), "
                           "lower=true\n}\n";
  CliResult failed = run({"run", module.string(), "--pipeline=none", "--json"});
  EXPECT_EQ(failed.exitCode, 1) << failed.out << failed.err;
  EXPECT_TRUE(failed.out.empty()) << failed.out;
  EXPECT_NE(failed.err.find("cannot lower cholesky"), std::string::npos) << failed.err;
}

}  // namespace

// Every program of the interop corpus (tests/data/xla/modules: the JAX and TensorFlow programs of interop/, as
// XLA dumped them before and after its CPU pipeline: loops, convolutions and pooling, dropout through
// rng-bit-generator, KV-cache decoding with sampling, argmax fusions, int8 dots, bf16, fp8, LAPACK calls, FFTs and
// complex arithmetic, complex scatter, sort and cumulative sums, ...) runs fused and unfused and matches the evaluator
// with (nearly) every element under a finite bound, one test per module. llm_train (3.7k instructions, about 100 s here) is left to the
// viewer and pipeline tests.
std::vector<std::string> interopModules() {
  const fs::path dir = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "modules";
  std::vector<std::string> modules;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".txt" && name.rfind("llm_train", 0) != 0) modules.push_back(name);
  }
  std::sort(modules.begin(), modules.end());
  return modules;
}

class InteropModuleRunTest : public RunCliTest, public ::testing::WithParamInterface<std::string> {};

TEST(InteropModules, AreAllThere) {
  EXPECT_GE(interopModules().size(), 50u)
      << "twenty-five programs (mnist_step has a folder of its own), before and after XLA's passes";
}

TEST_P(InteropModuleRunTest, RunsFusedAndUnfusedAndChecksOk) {
  const fs::path module = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "modules" / GetParam();
  for (const char* fusion : {"--fusion=on", "--fusion=off"}) {
    CliResult result = run({"run", module.string(), fusion, "--iterations", "2", "--json"});
    ASSERT_EQ(result.exitCode, 0) << GetParam() << " " << fusion << "\n" << result.out << result.err;
    const nlohmann::json json = parseRunJson(result);
    EXPECT_EQ(json.at("check"), "ok") << GetParam() << " " << fusion << "\n" << json.dump(2);
    // The check covers the elements: at most 1 % of an output is left without a finite bound. (Random inputs are not
    // always valid ones: bf16_block_adamw's random second moments are negative about half the time, and one element
    // whose update sits next to that edge turns NaN in a noisy run. An FP8 program once had all its elements
    // unbounded.)
    for (const auto& output : json.at("outputs")) {
      EXPECT_LE(output.at("unbounded").get<int64_t>() * 100, output.at("elements").get<int64_t>())
          << GetParam() << " " << fusion << " " << output.dump();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, InteropModuleRunTest, ::testing::ValuesIn(interopModules()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.size() - 4);  // no ".txt"
                           for (char& c : name) {
                             if (c == '.') c = '_';
                           }
                           return name;
                         });
