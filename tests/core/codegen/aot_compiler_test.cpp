// Ahead-of-time compilation as a user meets it: the module compiled to NAME.h + NAME.o, linked into a plain program
// (aot_driver.cpp) with `c++ main.cpp NAME.o -lm` — for aarch64 with Debian's cross g++, run under qemu-user — and
// its results checked against the evaluator by the result check, as `run` checks the JIT.
#include "core/codegen/aot_compiler.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/codegen/element_types.h"
#include "tests/common/cli_runner.h"
#include "tests/common/source_paths.h"
#include "tests/core/testing/codegen_testing.h"

namespace fusionscope::testing {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<core::HloModule> parseFileOrFail(const fs::path& path) {
  StatusOr<std::unique_ptr<core::HloModule>> parsed = core::parseHloModuleFile(path.string());
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  return parsed.ok() ? std::move(*parsed) : nullptr;
}

bool onPath(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

struct Toolchain {
  std::string compiler;
  std::vector<std::string> runner;  // prefix of the command that runs the program
};

// The compiler and runner for `target`, or a reason it is missing (the test then skips, saying so).
StatusOr<Toolchain> toolchainFor(const std::string& target) {
  if (target == "aarch64") {
    if (!onPath("aarch64-linux-gnu-g++")) return Status::error("aarch64-linux-gnu-g++ missing (scripts/setup-deps)");
    if (!onPath("qemu-aarch64")) return Status::error("qemu-aarch64 missing (scripts/setup-deps: qemu-user)");
    return Toolchain{"aarch64-linux-gnu-g++", {"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"}};
  }
  if (!onPath("c++")) return Status::error("no c++ on PATH");
  return Toolchain{"c++", {}};
}

void writeBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string fileText(const fs::path& path) {
  return readAll(path);
}

// Compiles `module` (already through its pipeline) for `target`, links it with the driver, runs it on `arguments`
// and returns its result (a tuple when the module's root is one).
StatusOr<core::Value> runAheadOfTime(const core::HloModule& module, const std::vector<core::Value>& arguments,
                                     const std::string& target, const fs::path& scratch,
                                     core::AotArtifact* compiled = nullptr) {
  StatusOr<Toolchain> toolchain = toolchainFor(target);
  if (!toolchain.ok()) return toolchain.status();
  core::AotOptions options;
  options.target = target;
  options.className = "aot_test::Model";
  StatusOr<core::AotArtifact> artifact = core::compileAot(module, options);
  if (!artifact.ok()) return Status::error("compileAot: " + artifact.message());
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  FS_RETURN_IF_ERROR(core::writeAotArtifact(*artifact, scratch.string()));
  const fs::path driver = fs::path(FS_SOURCE_DIR) / "tests" / "core" / "codegen" / "aot_driver.cpp";
  const fs::path program = scratch / "program";
  std::vector<std::string> link = {"-std=c++17",
                                   "-O1",
                                   "-I",
                                   scratch.string(),
                                   "-DFS_AOT_HEADER=\"Model.h\"",
                                   "-DFS_AOT_CLASS=aot_test::Model",
                                   driver.string(),
                                   (scratch / "Model.o").string()};
  // The link flags `compile` prints (the runtime library beside the object, then LAPACK's or FFTW's), with this
  // build's runtime library for libfusionscope_linalg.a.
  if (artifact->callsRuntimeLibrary() && target != "x86-64") {
    return Status::error("no LAPACK and FFT runtime library built for " + target);
  }
  std::istringstream flags(core::aotLinkFlags(*artifact));
  for (std::string flag; flags >> flag;) {
    link.push_back(flag == "libfusionscope_linalg.a" ? std::string(FS_LINALG_RUNTIME_LIBRARY) : flag);
  }
  if (artifact->callsRuntimeLibrary() && FS_AOT_SANITIZE) link.push_back("-fsanitize=address,undefined");
  link.insert(link.end(), {"-o", program.string()});
  CliResult built = runProgram(toolchain->compiler, link, scratch);
  if (built.exitCode != 0) return Status::error("linking failed: " + built.err);
  for (const core::PlanParameter& parameter : artifact->plan.parameters) {
    StatusOr<std::vector<uint8_t>> bytes = core::valueToBytes(arguments[static_cast<size_t>(parameter.index)]);
    if (!bytes.ok()) return bytes.status();
    writeBytes(scratch / ("arg" + std::to_string(&parameter - artifact->plan.parameters.data()) + ".bin"), *bytes);
  }
  std::vector<std::string> command = toolchain->runner;
  command.push_back(program.string());
  command.push_back(scratch.string());
  CliResult ran = runProgram(command[0], std::vector<std::string>(command.begin() + 1, command.end()), scratch);
  if (ran.exitCode != 0)
    return Status::error("the program exited with " + std::to_string(ran.exitCode) + ": " + ran.err);
  std::vector<core::Value> results;
  for (size_t i = 0; i < artifact->plan.outputs.size(); ++i) {
    const std::string bytes = fileText(scratch / ("result" + std::to_string(i) + ".bin"));
    StatusOr<core::Value> value =
        core::bytesToValue(artifact->plan.outputs[i].shape, reinterpret_cast<const uint8_t*>(bytes.data()),
                           static_cast<int64_t>(bytes.size()));
    if (!value.ok()) return value.status();
    results.push_back(std::move(*value));
  }
  if (compiled != nullptr) *compiled = std::move(*artifact);
  if (!artifact->plan.tupleOutput) return std::move(results[0]);
  return core::Value::tuple(std::move(results));
}

struct AotCase {
  std::string path;  // under the source tree
  std::string target;
};

std::string caseName(const ::testing::TestParamInfo<AotCase>& info) {
  std::string name = fs::path(info.param.path).stem().string() + "_" + info.param.target;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class AotProgramTest : public ::testing::TestWithParam<AotCase> {};

// Every program of the interop corpus and the samples, fused by the cpu preset, matches the evaluator's result for
// the module as written.
TEST_P(AotProgramTest, LinkedProgramMatchesTheEvaluator) {
  const AotCase& c = GetParam();
  StatusOr<Toolchain> toolchain = toolchainFor(c.target);
  if (!toolchain.ok()) GTEST_SKIP() << toolchain.message();
  std::unique_ptr<core::HloModule> module = parseFileOrFail(fs::path(FS_SOURCE_DIR) / c.path);
  ASSERT_NE(module, nullptr);
  StatusOr<Reference> reference = referenceFor(*module);
  ASSERT_TRUE(reference.ok()) << reference.message();
  std::unique_ptr<core::HloModule> fused = runPipelineOn(*module, "cpu");
  const fs::path scratch = fs::temp_directory_path() / ("fs_aot_" + caseName({c, 0}) + std::to_string(::getpid()));
  StatusOr<core::Value> actual = runAheadOfTime(*fused, reference->arguments, c.target, scratch);
  ASSERT_TRUE(actual.ok()) << actual.message();
  EXPECT_EQ(core::resultCheckFailure(core::checkResult(reference->bounds, reference->expected, *actual)), "");
  fs::remove_all(scratch);
}

std::vector<AotCase> corpusCases() {
  const std::vector<std::string> programs = {
      "samples/mlp/mlp.hlo",
      "samples/attention/attention.hlo",
      "samples/layer_norm/layer_norm.hlo",
      "samples/mnist_softmax/mnist_softmax.hlo",
      "tests/data/xla/modules/attention.before.txt",
      "tests/data/xla/modules/conv_pool.before.txt",
      "tests/data/xla/modules/dropout_mlp.before.txt",
      "tests/data/xla/modules/layernorm_gelu.before.txt",
      "tests/data/xla/modules/loops.before.txt",
      "tests/data/xla/modules/mlp_train.before.txt",
      "tests/data/xla/modules/scan_rnn.before.txt",
      "tests/data/xla/modules/tf_mnist.before.txt",
  };
  std::vector<AotCase> cases;
  for (const char* target : {"x86-64", "aarch64"}) {
    for (const std::string& program : programs) cases.push_back({program, target});
  }
  // The two large programs: a JAX MobileNet v2 training step (304 kernels) and a transformer's training step (796
  // kernels, 83 MB of buffers; about two minutes under qemu).
  cases.push_back({"tests/data/corpus/jax_mobilenet_v2_small_train.hlo", "x86-64"});
  cases.push_back({"tests/data/corpus/jax_mobilenet_v2_small_train.hlo", "aarch64"});
  cases.push_back({"tests/data/xla/modules/llm_train.before.txt", "x86-64"});
  cases.push_back({"tests/data/xla/modules/llm_train.before.txt", "aarch64"});
  // Programs calling LAPACK (JAX's lapack_* custom calls) or FFTW (fft), linked with libfusionscope_linalg.a and
  // the system's LAPACK or FFTW: x86-64 only (Debian's aarch64 LAPACK and FFTW are not installed beside the cross
  // compiler).
  for (const char* program :
       {"tests/data/xla/modules/gp_regression.before.txt", "tests/data/xla/modules/linear_algebra.before.txt",
        "tests/data/xla/modules/low_rank_svd.before.txt", "tests/data/xla/modules/spectral.before.txt",
        "tests/data/xla/modules/spectral.after.txt", "tests/data/xla/modules/dynamics_modes.before.txt"}) {
    cases.push_back({program, "x86-64"});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Corpus, AotProgramTest, ::testing::ValuesIn(corpusCases()), caseName);

// Conditionals (an integer index, out-of-range ones included, and a pred) and a counted while loop, as the
// object's own control flow, for every selector value.
TEST(AotCompilerTest, ConditionalsAndLoopsMatchTheEvaluator) {
  StatusOr<Toolchain> toolchain = toolchainFor("x86-64");
  if (!toolchain.ok()) GTEST_SKIP() << toolchain.message();
  std::unique_ptr<core::HloModule> module = parseOrFail(R"(
HloModule control_flow

twice {
  p = f32[8] parameter(0)
  ROOT r = f32[8] add(p, p)
}

negated {
  p = f32[8] parameter(0)
  ROOT r = f32[8] negate(p)
}

squared {
  p = f32[8] parameter(0)
  ROOT r = f32[8] multiply(p, p)
}

condition {
  s = (s32[], f32[8]) parameter(0)
  n = s32[] get-tuple-element(s), index=0
  limit = s32[] constant(5)
  ROOT lt = pred[] compare(n, limit), direction=LT
}

body {
  s = (s32[], f32[8]) parameter(0)
  n = s32[] get-tuple-element(s), index=0
  v = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  next = s32[] add(n, one)
  half = f32[] constant(0.5)
  halves = f32[8] broadcast(half), dimensions={}
  w = f32[8] add(v, halves)
  ROOT t = (s32[], f32[8]) tuple(next, w)
}

ENTRY main {
  i = s32[] parameter(0)
  x = f32[8] parameter(1)
  flag = pred[] parameter(2)
  c = f32[8] conditional(i, x, x, x), branch_computations={twice, negated, squared}
  d = f32[8] conditional(flag, c, c), true_computation=twice, false_computation=negated
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, d)
  loop = (s32[], f32[8]) while(init), condition=condition, body=body
  e = f32[8] get-tuple-element(loop), index=1
  ROOT t = (f32[8], f32[8], f32[8]) tuple(c, d, e)
}
)");
  ASSERT_NE(module, nullptr);
  const std::vector<core::Value> random = core::randomArguments(*module, 3);
  const fs::path scratch = fs::temp_directory_path() / ("fs_aot_control" + std::to_string(::getpid()));
  for (int64_t index : {-1, 0, 1, 2, 7}) {
    for (bool flag : {true, false}) {
      const std::vector<core::Value> arguments = {core::Value::scalar(core::PrimitiveType::kS32, index), random[1],
                                                  core::Value::scalar(core::PrimitiveType::kPred, flag ? 1 : 0)};
      StatusOr<core::EvalResult> expected = core::evaluateModule(*module, arguments);
      ASSERT_TRUE(expected.ok()) << expected.message();
      StatusOr<core::Value> actual = runAheadOfTime(*module, arguments, "x86-64", scratch);
      ASSERT_TRUE(actual.ok()) << actual.message();
      StatusOr<core::ResultBounds> bounds = core::resultBounds(*module, arguments, expected->result);
      ASSERT_TRUE(bounds.ok()) << bounds.message();
      EXPECT_EQ(core::resultCheckFailure(core::checkResult(*bounds, expected->result, *actual)), "")
          << "index " << index << ", flag " << flag;
    }
  }
  fs::remove_all(scratch);
}

std::unique_ptr<core::HloModule> mlp() {
  return parseFileOrFail(fs::path(FS_SOURCE_DIR) / "samples" / "mlp" / "mlp.hlo");
}

// f32 exp, log, expm1, log1p, tanh, erf and logistic are arithmetic in the generated code on every CPU target, the
// baseline x86-64 (SSE2) included: the object calls no math function for them (expf, logf, ..., nor roundevenf,
// which llvm.roundeven becomes before SSE4.1).
TEST(AotCompilerTest, F32TranscendentalsCallNoMathLibrary) {
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModule(R"(HloModule m
ENTRY main {
  p = f32[1024]{0} parameter(0)
  a = f32[1024]{0} exponential(p)
  b = f32[1024]{0} log(a)
  c = f32[1024]{0} exponential-minus-one(b)
  d = f32[1024]{0} log-plus-one(c)
  e = f32[1024]{0} tanh(d)
  f = f32[1024]{0} erf(e)
  ROOT g = f32[1024]{0} logistic(f)
}
)");
  ASSERT_TRUE(module.ok()) << module.message();
  for (const char* target : {"x86-64", "aarch64"}) {
    core::AotOptions options;
    options.target = target;
    options.className = "Math";
    StatusOr<core::AotArtifact> artifact = core::compileAot(**module, options);
    ASSERT_TRUE(artifact.ok()) << artifact.message();
    for (const std::string& symbol : artifact->undefinedSymbols) {
      EXPECT_TRUE(symbol == "memcpy" || symbol == "memset" || symbol == "memmove") << target << " calls " << symbol;
    }
  }
}

// The object is self-contained: it exports only the entry function (kernels and constants are private, so two
// modules link into one program) and needs only what `-lm` and the compiler's runtime give.
TEST(AotCompilerTest, ObjectExportsOneFunctionAndNeedsOnlyTheCLibrary) {
  std::unique_ptr<core::HloModule> module =
      parseFileOrFail(fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "modules" / "layernorm_gelu.before.txt");
  ASSERT_NE(module, nullptr);
  std::unique_ptr<core::HloModule> fused = runPipelineOn(*module, "cpu");
  for (const char* target : {"x86-64", "aarch64"}) {
    core::AotOptions options;
    options.target = target;
    options.className = "a::b::Gelu";
    StatusOr<core::AotArtifact> artifact = core::compileAot(*fused, options);
    ASSERT_TRUE(artifact.ok()) << artifact.message();
    EXPECT_EQ(artifact->entrySymbol, "fusionscope_aot_a_b_Gelu_run");
    EXPECT_EQ(artifact->object.substr(0, 4),
              "\x7f"
              "ELF");
    // e_machine at byte 18: 62 x86-64, 183 AArch64.
    EXPECT_EQ(static_cast<unsigned char>(artifact->object[18]), std::string(target) == "x86-64" ? 62 : 183);
    const std::set<std::string> allowed = {"expf",    "logf", "tanhf", "erff",   "powf",   "memcpy", "memset",
                                           "memmove", "exp",  "log",   "expm1f", "log1pf", "sqrtf"};
    for (const std::string& symbol : artifact->undefinedSymbols) {
      EXPECT_TRUE(allowed.count(symbol) != 0 || symbol.rfind("__", 0) == 0) << target << " needs " << symbol;
    }
    if (onPath("nm")) {
      const fs::path scratch = fs::temp_directory_path() / ("fs_aot_nm" + std::to_string(::getpid()));
      fs::create_directories(scratch);
      ASSERT_TRUE(core::writeAotArtifact(*artifact, scratch.string()).ok());
      CliResult symbols = runProgram("nm", {"-g", "--defined-only", (scratch / "Gelu.o").string()}, scratch);
      EXPECT_EQ(symbols.exitCode, 0) << symbols.err;
      EXPECT_EQ(symbols.out.substr(symbols.out.find(' ') + 1), "T fusionscope_aot_a_b_Gelu_run\n") << symbols.out;
      fs::remove_all(scratch);
    }
    EXPECT_NE(artifact->header.find("namespace a {"), std::string::npos);
    EXPECT_NE(artifact->header.find("class Gelu {"), std::string::npos);
  }
}

TEST(AotCompilerTest, RefusesBadTargetsCpusFeaturesAndClassNames) {
  std::unique_ptr<core::HloModule> module = mlp();
  ASSERT_NE(module, nullptr);
  auto refusal = [&](core::AotOptions options) {
    StatusOr<core::AotArtifact> artifact = core::compileAot(*module, options);
    EXPECT_FALSE(artifact.ok());
    EXPECT_EQ(artifact.status().kind(), ErrorKind::kBadInput);
    return artifact.ok() ? std::string() : artifact.message();
  };
  EXPECT_NE(refusal({"riscv", "", "", "M", {}}).find("unknown target 'riscv'"), std::string::npos);
  EXPECT_NE(refusal({"x86-64", "pentium-9000", "", "M", {}}).find("--cpu pentium-9000"), std::string::npos);
  EXPECT_NE(refusal({"aarch64", "", "+avx2", "M", {}}).find("'avx2' is not a feature"), std::string::npos);
  EXPECT_NE(refusal({"x86-64", "", "avx2", "M", {}}).find("must start with + or -"), std::string::npos);
  for (const char* name : {"", "1up", "a::", "::M", "a-b", "class", "std::M", "my__M"}) {
    EXPECT_NE(refusal({"x86-64", "", "", name, {}}).find("--cpp-class"), std::string::npos) << name;
  }
}

// The header's result accessors keep the names of the module as written: the cpu preset rewrites `loss = divide(sum,
// 4)` as a product with 1/4, and result_loss_data() must still be there (samples/mnist_softmax calls it).
TEST(AotCompilerTest, ResultAccessorsKeepTheNamesAsWritten) {
  std::unique_ptr<core::HloModule> module = parseOrFail(R"(HloModule mean
ENTRY e {
  x = f32[4] parameter(0)
  zero = f32[] constant(0)
  sum = f32[] reduce(x, zero), dimensions={0}, to_apply=add
  four = f32[] constant(4)
  loss = f32[] divide(sum, four)
  ROOT t = (f32[], f32[4]) tuple(loss, x)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)");
  ASSERT_NE(module, nullptr);
  std::unique_ptr<core::HloModule> fused = runPipelineOn(*module, "cpu");
  EXPECT_NE(fused->entry()->root()->operand(0)->name(), "loss")
      << "the pipeline renamed it (else this test shows nothing)";
  core::AotOptions options;
  options.target = "x86-64";
  options.className = "Mean";
  options.resultNames = core::resultNamesAsWritten(*module);
  EXPECT_EQ(options.resultNames, (std::vector<std::string>{"loss", "x"}));
  StatusOr<core::AotArtifact> artifact = core::compileAot(*fused, options);
  ASSERT_TRUE(artifact.ok()) << artifact.message();
  EXPECT_NE(artifact->header.find("result_loss_data()"), std::string::npos) << artifact->header;
}

// Temporaries in caller memory, a second Run() on the same instance, and the typed accessors named after the
// parameters: a program written against the header as docs/AOT.md shows it.
TEST(AotCompilerTest, HeaderApiAsDocumented) {
  StatusOr<Toolchain> toolchain = toolchainFor("x86-64");
  if (!toolchain.ok()) GTEST_SKIP() << toolchain.message();
  std::unique_ptr<core::HloModule> module = mlp();
  ASSERT_NE(module, nullptr);
  core::AotOptions options;
  options.target = "host";
  options.className = "demo::Mlp";
  StatusOr<core::AotArtifact> artifact = core::compileAot(*runPipelineOn(*module, "cpu"), options);
  ASSERT_TRUE(artifact.ok()) << artifact.message();
  const fs::path scratch = fs::temp_directory_path() / ("fs_aot_api" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  ASSERT_TRUE(core::writeAotArtifact(*artifact, scratch.string()).ok());
  std::ofstream(scratch / "main.cpp") << R"(#include "Mlp.h"
#include <cstdio>
#include <cstdlib>
int main() {
  static_assert(demo::Mlp::kNumArgs == 5 && demo::Mlp::kNumResults == 1, "counts");
  static_assert(demo::Mlp::kArg0Shape[0] == 64 && demo::Mlp::kArg0Shape[1] == 256, "x shape");
  static_assert(demo::Mlp::kResult0Shape.size() == 2 && demo::Mlp::kResultSizes[0] == 64 * 10 * 4, "output");
  demo::Mlp mlp;
  if (!mlp.ok() || mlp.result_data(0) != nullptr) return 10;
  void* temp = std::aligned_alloc(64, (demo::Mlp::kTempSize + 63) / 64 * 64);
  mlp.set_temp_buffer(temp);
  for (int i = 0; i < 64 * 256; ++i) mlp.arg_x_data()[i] = 1.0f;
  for (int i = 0; i < 256 * 512; ++i) mlp.arg_W1_data()[i] = 0.01f;
  for (int i = 0; i < 512; ++i) mlp.arg_b1_data()[i] = -1.0f;
  for (int i = 0; i < 512 * 10; ++i) mlp.arg_W2_data()[i] = 0.5f;
  for (int i = 0; i < 10; ++i) mlp.arg_b2_data()[i] = static_cast<float>(i);
  for (int run = 0; run < 2; ++run) {
    if (!mlp.Run()) return 11;
    // relu(256 * 0.01 - 1) = 1.56 per hidden unit; 512 * 1.56 * 0.5 + j
    for (int j = 0; j < 10; ++j) {
      const float expected = 512 * 1.56f * 0.5f + static_cast<float>(j);
      const float got = mlp.result_output_data()[63 * 10 + j];
      if (got < expected - 0.1f || got > expected + 0.1f) { std::printf("%d: %f\n", j, got); return 12; }
    }
  }
  mlp.set_temp_buffer(static_cast<char*>(temp) + 1);  // misaligned: refused
  if (mlp.Run()) return 13;
  std::printf("%s %s\n", demo::Mlp::arg_name(1), demo::Mlp::result_name(0));
  std::free(temp);
  return 0;
}
)";
  CliResult built =
      runProgram("c++",
                 {"-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", scratch.string(), (scratch / "main.cpp").string(),
                  (scratch / "Mlp.o").string(), "-lm", "-o", (scratch / "main").string()},
                 scratch);
  ASSERT_EQ(built.exitCode, 0) << built.err;
  CliResult ran = runProgram((scratch / "main").string(), {}, scratch);
  EXPECT_EQ(ran.exitCode, 0) << ran.out << ran.err;
  EXPECT_EQ(ran.out, "W1 output\n");
  fs::remove_all(scratch);
}

}  // namespace
}  // namespace fusionscope::testing
