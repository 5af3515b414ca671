// The NVPTX bundle: every sample's kernels (fused and unfused) assemble with ptxas for sm_80 and sm_90, and
// bundle.json agrees with itself (args name existing buffers, sizes match shapes, constants fit constants.bin).
#include "core/codegen/ptx_bundle.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/codegen/element_types.h"
#include "core/ir/hlo_clone.h"
#include "core/linalg/linalg_call.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"
#include "tests/core/testing/corpus.h"
#include "tests/core/testing/shared_modules.h"
#include "tests/common/source_paths.h"

namespace fusionscope::core {
namespace {

constexpr const char* kPtxas = "/usr/local/cuda/bin/ptxas";

std::unique_ptr<HloModule> fuse(const HloModule& module, const std::string& preset) {
  std::unique_ptr<HloModule> copy = cloneModule(module);
  if (preset == "none") return copy;
  PipelineSpec spec;
  spec.preset = preset;
  StatusOr<std::unique_ptr<PassPipeline>> pipeline = buildPipeline(spec);
  EXPECT_TRUE(pipeline.ok()) << pipeline.message();
  PassContext context(fusionConfigFor(backendFor(spec)));
  StatusOr<PipelineRun> run = runPipeline(**pipeline, *copy, context);
  EXPECT_TRUE(run.ok()) << run.message();
  return copy;
}

int64_t dtypeBytes(const std::string& dtype) {
  return elementByteSize(parsePrimitiveType(dtype));
}

void expectConsistent(const nlohmann::json& json, const std::vector<uint8_t>& constants) {
  ASSERT_EQ(json.at("schema"), "fusionscope.bundle/1");
  std::map<int64_t, int64_t> bytes;
  for (const auto& buffer : json.at("buffers")) {
    bytes[buffer.at("id").get<int64_t>()] = buffer.at("bytes").get<int64_t>();
    if (buffer.contains("constant_offset")) {
      EXPECT_LE(buffer.at("constant_offset").get<int64_t>() + buffer.at("bytes").get<int64_t>(),
                static_cast<int64_t>(constants.size()));
    }
  }
  auto checkValue = [&](const nlohmann::json& value) {
    int64_t elements = 1;
    for (int64_t d : value.at("dims")) elements *= d;
    const int64_t buffer = value.at("buffer").get<int64_t>();
    ASSERT_TRUE(bytes.count(buffer)) << value.dump();
    EXPECT_LE(elements * dtypeBytes(value.at("dtype").get<std::string>()), bytes[buffer]) << value.dump();
    EXPECT_GT(dtypeBytes(value.at("dtype").get<std::string>()), 0) << value.dump();
  };
  for (const auto& parameter : json.at("parameters")) checkValue(parameter);
  for (const auto& output : json.at("outputs")) checkValue(output);
  ASSERT_FALSE(json.at("kernels").empty());
  for (const auto& kernel : json.at("kernels")) {
    for (int64_t arg : kernel.at("args")) EXPECT_TRUE(bytes.count(arg)) << kernel.dump();
    const int64_t threads = kernel.at("grid")[0].get<int64_t>() * kernel.at("block")[0].get<int64_t>();
    if (kernel.at("kind") == "kCustom") {
      // A normalization: one warp per row, each lane striding the row (NormalizationIsOneWarpPerRow).
      EXPECT_EQ(threads % 32, 0) << kernel.dump();
    } else {
      EXPECT_GE(threads, kernel.at("elements").get<int64_t>() / static_cast<int64_t>(kernel.at("args").size()))
          << kernel.dump();
    }
  }
}

// Assembles `ptx` with ptxas for `sm`; returns ptxas's output on failure, "" on success.
std::string assemble(const std::string& ptx, int sm, const std::string& tag) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("fs_ptx_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / (tag + ".ptx");
  std::ofstream(file) << ptx;
  const std::filesystem::path log = dir / (tag + ".log");
  const std::string command = fmt::format("{} -arch=sm_{} -o {} {} > {} 2>&1", kPtxas, sm,
                                          (dir / (tag + ".cubin")).string(), file.string(), log.string());
  const int rc = std::system(command.c_str());
  std::ifstream in(log);
  std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  return rc == 0 ? "" : "ptxas failed: " + output;
}

class SampleBundleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SampleBundleTest, PtxAssemblesAndJsonIsConsistent) {
  StatusOr<std::unique_ptr<HloModule>> parsed = parseHloModuleFile(GetParam());
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  const bool havePtxas = std::filesystem::exists(kPtxas);
  for (const char* preset : {"none", "gpu"}) {
    std::unique_ptr<HloModule> module = fuse(**parsed, preset);
    for (int sm : {80, 90}) {
      PtxOptions options;
      options.sm = sm;
      StatusOr<PtxBundle> bundle = compilePtxBundle(*module, std::string(preset) != "none", options);
      ASSERT_TRUE(bundle.ok()) << preset << ": " << bundle.message();
      EXPECT_NE(bundle->ptx.find(".target sm_" + std::to_string(sm)), std::string::npos);
      for (const PlanKernel& kernel : bundle->plan.kernels) {
        EXPECT_NE(bundle->ptx.find(".entry " + kernel.name), std::string::npos) << kernel.name;
      }
      expectConsistent(nlohmann::json::parse(bundle->json), bundle->constants);
      if (havePtxas) {
        EXPECT_EQ(assemble(bundle->ptx, sm, fmt::format("{}_{}", preset, sm)), "") << preset << " sm_" << sm;
      }
    }
  }
  if (!havePtxas) GTEST_SKIP() << "ptxas not found at " << kPtxas << ": PTX was generated but not assembled";
}

INSTANTIATE_TEST_SUITE_P(Samples, SampleBundleTest, ::testing::ValuesIn([] {
                           std::vector<std::string> paths;
                           for (const auto& p : testing::sampleHloFiles()) paths.push_back(p.string());
                           return paths;
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return testing::moduleTestName(info.param);
                         });

TEST(PtxBundleTest, MathFunctionsLinkLibdeviceAndAssemble) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"(HloModule math
ENTRY e {
  x = f32[100] parameter(0)
  y = f16[100] parameter(1)
  a = f32[100] tanh(x)
  b = f32[100] log-plus-one(a)
  c = f32[100] exponential-minus-one(b)
  d = f32[100] power(c, x)
  e1 = f32[100] remainder(d, x)
  f = f32[100] round-nearest-afz(e1)
  g = f32[100] atan2(f, x)
  yf = f32[100] convert(y)
  h = f32[100] add(g, yf)
  i = s32[100] convert(h)
  j = bf16[100] convert(h)
  ROOT t = (s32[100], bf16[100]) tuple(i, j)
})");
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<PtxBundle> bundle = compilePtxBundle(**module, false);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  EXPECT_EQ(bundle->ptx.find("__nv_"), std::string::npos) << "libdevice calls left unresolved";
  if (!std::filesystem::exists(kPtxas)) GTEST_SKIP() << "ptxas not found at " << kPtxas;
  EXPECT_EQ(assemble(bundle->ptx, 90, "math"), "");
}

TEST(PtxBundleTest, WritesTheBundleFiles) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"(HloModule w
ENTRY e {
  x = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  ROOT a = f32[4] add(x, c)
})");
  ASSERT_TRUE(module.ok());
  StatusOr<PtxBundle> bundle = compilePtxBundle(**module, true);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("fs_bundle_" + std::to_string(::getpid()))).string();
  ASSERT_TRUE(writePtxBundle(*bundle, dir).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/kernels.ptx"));
  EXPECT_EQ(std::filesystem::file_size(dir + "/constants.bin"), 16u);
  std::ifstream in(dir + "/bundle.json");
  nlohmann::json json = nlohmann::json::parse(in);
  EXPECT_EQ(json.at("constants"), "constants.bin");
  EXPECT_EQ(json.at("kernels").size(), 1u);
  EXPECT_EQ(json.at("kernels")[0].at("args").size(), 3u);
  EXPECT_EQ(json.at("kernels")[0].at("grid")[0], 1);
  std::filesystem::remove_all(dir);
}

// A loop and a branch become bundle.json's "program": which kernels the condition, the body and the branches
// launch, where the host reads the predicate and the branch index, and which buffers move at the boundaries.
TEST(PtxBundleTest, ControlFlowBecomesAProgram) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"(HloModule loop
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  v = f32[4] get-tuple-element(p), index=1
  twice = f32[4] add(v, v)
  ROOT t = (s32[], f32[4]) tuple(next, twice)
}
neg {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
same {
  p = f32[4] parameter(0)
  ROOT c = f32[4] copy(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  flag = pred[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w.7 = (s32[], f32[4]) while(init), condition=cond, body=body
  v = f32[4] get-tuple-element(w.7), index=1
  ROOT c.9 = f32[4] conditional(flag, v, v), true_computation=neg, false_computation=same
})");
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<PtxBundle> bundle = compilePtxBundle(**module, false);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  const nlohmann::json json = nlohmann::json::parse(bundle->json);
  expectConsistent(json, bundle->constants);
  ASSERT_TRUE(json.contains("program"));
  const nlohmann::json& program = json.at("program");
  const auto loop = std::find_if(program.begin(), program.end(), [](const auto& s) { return s.contains("while"); });
  ASSERT_NE(loop, program.end());
  EXPECT_EQ(loop->at("while"), "w.7");
  EXPECT_EQ(loop->at("condition").size(), 1u);  // the compare
  EXPECT_GE(loop->at("body").size(), 2u);       // the add and the doubling
  EXPECT_EQ(loop->at("state").size(), 2u);
  EXPECT_FALSE(loop->at("update").empty());
  const auto branch =
      std::find_if(program.begin(), program.end(), [](const auto& s) { return s.contains("conditional"); });
  ASSERT_NE(branch, program.end());
  EXPECT_EQ(branch->at("selector_dtype"), "pred");
  EXPECT_EQ(branch->at("branches").size(), 2u);
  EXPECT_EQ(branch->at("branch_results").size(), 2u);
  // Every kernel step names a kernel of the table.
  std::function<void(const nlohmann::json&)> check = [&](const nlohmann::json& steps) {
    for (const auto& step : steps) {
      if (step.contains("kernel")) {
        EXPECT_LT(step.at("kernel").get<size_t>(), json.at("kernels").size());
      }
      for (const char* key : {"condition", "body"}) {
        if (step.contains(key)) check(step.at(key));
      }
      if (step.contains("branches")) {
        for (const auto& b : step.at("branches")) check(b);
      }
    }
  };
  check(program);
  if (!std::filesystem::exists(kPtxas)) GTEST_SKIP() << "ptxas not found at " << kPtxas;
  EXPECT_EQ(assemble(bundle->ptx, 90, "control_flow"), "");
}

// Every program of the interop corpus (XLA's modules before and after its passes; llm_train aside, which the
// viewer tests use) compiles to bundles ptxas accepts, fused and unfused; the ones with loops (fori_loop,
// while_loop, scan, a decoding loop) as bundle programs.
bool callsLapack(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      if (linalg::isLapackCustomCall(*inst)) return true;
    }
  }
  return false;
}

bool hasFft(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() == HloOpcode::kFft) return true;
    }
  }
  return false;
}

TEST(PtxBundleTest, InteropProgramsAssemble) {
  const std::filesystem::path dir = std::filesystem::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "modules";
  const bool havePtxas = std::filesystem::exists(kPtxas);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() == ".txt" && file.rfind("llm_train", 0) != 0)
      names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 36u);
  for (const std::string& name : names) {
    StatusOr<std::unique_ptr<HloModule>> parsed = parseHloModuleFile((dir / (name + ".txt")).string());
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.message();
    for (const char* preset : {"none", "gpu"}) {
      std::unique_ptr<HloModule> module = fuse(**parsed, preset);
      StatusOr<PtxBundle> bundle = compilePtxBundle(*module, std::string(preset) != "none");
      if (callsLapack(*module)) {
        // JAX's LAPACK calls have no GPU kernel (JAX's GPU modules call cuSOLVER instead): refused by name.
        ASSERT_FALSE(bundle.ok()) << name;
        EXPECT_NE(bundle.message().find("(LAPACK) has no GPU kernel here"), std::string::npos) << bundle.message();
        continue;
      }
      if (hasFft(*module)) {
        // fft runs through FFTW on the CPU; no cuFFT kernel here: refused by name.
        ASSERT_FALSE(bundle.ok()) << name;
        EXPECT_NE(bundle.message().find("fft has no GPU kernel here"), std::string::npos) << bundle.message();
        continue;
      }
      ASSERT_TRUE(bundle.ok()) << name << " " << preset << ": " << bundle.message();
      const nlohmann::json json = nlohmann::json::parse(bundle->json);
      // A module with loops (fori_loop, while_loop, scan, a decoding loop) is a bundle program; one without
      // control flow is not (a call the planner runs as steps of its own may make one).
      bool loops = false;
      bool calls = false;
      for (const auto& inst : module->entry()->instructions()) {
        loops |= inst->opcode() == HloOpcode::kWhile || inst->opcode() == HloOpcode::kConditional;
        calls |= inst->opcode() == HloOpcode::kCall;
      }
      if (loops) {
        EXPECT_TRUE(json.contains("program")) << name;
      } else if (!calls) {
        EXPECT_FALSE(json.contains("program")) << name;
      }
      expectConsistent(json, bundle->constants);
      if (havePtxas) {
        EXPECT_EQ(assemble(bundle->ptx, 90, fmt::format("{}_{}", name, preset)), "") << name;
      }
    }
  }
  if (!havePtxas) GTEST_SKIP() << "ptxas not found at " << kPtxas << ": PTX was generated but not assembled";
}

}  // namespace
}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

// Threads a bundle launches for its kernel `name`, and that kernel's PTX text.
int64_t launchedThreads(const PtxBundle& bundle, const std::string& name) {
  const nlohmann::json json = nlohmann::json::parse(bundle.json);
  for (const auto& kernel : json.at("kernels")) {
    if (kernel.at("name") == name) return kernel.at("grid")[0].get<int64_t>() * kernel.at("block")[0].get<int64_t>();
  }
  ADD_FAILURE() << "no kernel " << name;
  return 0;
}
std::string kernelPtx(const PtxBundle& bundle, const std::string& name) {
  const size_t begin = bundle.ptx.find(".entry " + name + "(");
  if (begin == std::string::npos) return "";
  const size_t end = bundle.ptx.find(".entry ", begin + 1);
  return bundle.ptx.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

StatusOr<PtxBundle> compileText(const std::string& text, bool fusion = false, PtxOptions options = {}) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  if (!module.ok()) return module.status();
  std::unique_ptr<HloModule> fused = fuse(**module, fusion ? "gpu" : "none");
  return compilePtxBundle(*fused, fusion, options);
}

constexpr const char* kAdd = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

// A reduction over rows runs one warp per row: lanes stride the row, shuffles combine them (XLA GPU's row
// reduction); the rows' epilogue (divide, reshape) and a loop output of the row's shape go in the same kernel.
// A layer norm fused into one kernel (softmax-fusion's kCustom kind): one warp per row computes the mean, then
// the variance of the centred row (a reduction reading the first), then writes the row; no thread reduces a row
// per output element (which made this kernel 60x slower on an H100 than the unfused ops).
TEST(PtxBundleTest, NormalizationIsOneWarpPerRow) {
  StatusOr<PtxBundle> bundle = compileText(std::string("HloModule norm\n") + kAdd + R"(
ENTRY e {
  x = f32[512,768] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(768)
  ns = f32[512] broadcast(n), dimensions={}
  sum = f32[512] reduce(x, zero), dimensions={1}, to_apply=add
  mean = f32[512] divide(sum, ns)
  mb = f32[512,768] broadcast(mean), dimensions={0}
  c = f32[512,768] subtract(x, mb)
  sq = f32[512,768] multiply(c, c)
  ss = f32[512] reduce(sq, zero), dimensions={1}, to_apply=add
  var = f32[512] divide(ss, ns)
  r = f32[512] rsqrt(var)
  rb = f32[512,768] broadcast(r), dimensions={0}
  ROOT out = f32[512,768] multiply(c, rb)
})",
                                           true);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  const nlohmann::json json = nlohmann::json::parse(bundle->json);
  ASSERT_EQ(json.at("kernels").size(), 1u) << bundle->json;
  const std::string name = json.at("kernels")[0].at("name");
  EXPECT_EQ(launchedThreads(*bundle, name), 512 * 32);
  const std::string ptx = kernelPtx(*bundle, name);
  EXPECT_NE(ptx.find("shfl.sync.bfly"), std::string::npos);
  if (!std::filesystem::exists(kPtxas)) GTEST_SKIP() << "ptxas not found at " << kPtxas;
  EXPECT_EQ(assemble(bundle->ptx, 90, "normalization"), "");
}

TEST(PtxBundleTest, RowReductionIsOneWarpPerRowWithItsEpilogue) {
  StatusOr<PtxBundle> bundle = compileText(std::string("HloModule rows\n") + kAdd + R"(
ENTRY e {
  x = f32[1000,300] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(300)
  scaled = f32[1000,300] multiply(x, x)
  sum = f32[1000] reduce(scaled, zero), dimensions={1}, to_apply=add
  ns = f32[1000] broadcast(n), dimensions={}
  mean = f32[1000] divide(sum, ns)
  ROOT out = f32[1000,1] reshape(mean)
})",
                                           /*fusion=*/true);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  const nlohmann::json json = nlohmann::json::parse(bundle->json);
  ASSERT_EQ(json.at("kernels").size(), 1u) << bundle->json;
  const std::string name = json.at("kernels")[0].at("name");
  EXPECT_NE(kernelPtx(*bundle, name).find("shfl.sync.bfly"), std::string::npos) << kernelPtx(*bundle, name);
  EXPECT_EQ(launchedThreads(*bundle, name), 1000 * 32);
  if (std::filesystem::exists(kPtxas)) {
    EXPECT_EQ(assemble(bundle->ptx, 90, "rows"), "");
  }
}

// A column reduction with few results (a bias gradient) takes a warp per result too; one with many results keeps
// a thread per result (neighbouring threads, neighbouring columns); rows shorter than a warp stay as they were.
TEST(PtxBundleTest, WarpReductionsOnlyWhereTheyPay) {
  StatusOr<PtxBundle> bundle = compileText(std::string("HloModule shapes\n") + kAdd + R"(
ENTRY e {
  g = f32[100,10] parameter(0)
  wide = f32[64,10000] parameter(1)
  zero = f32[] constant(0)
  db = f32[10] reduce(g, zero), dimensions={0}, to_apply=add
  columns = f32[10000] reduce(wide, zero), dimensions={0}, to_apply=add
  short = f32[100] reduce(g, zero), dimensions={1}, to_apply=add
  ROOT t = (f32[10], f32[10000], f32[100]) tuple(db, columns, short)
})");
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  EXPECT_NE(kernelPtx(*bundle, "db").find("shfl.sync.bfly"), std::string::npos);
  EXPECT_EQ(launchedThreads(*bundle, "db"), 512);  // 10 warps: 320 threads, two blocks of 256
  EXPECT_EQ(kernelPtx(*bundle, "columns").find("shfl"), std::string::npos);
  EXPECT_GE(launchedThreads(*bundle, "columns"), 10000);
  EXPECT_EQ(kernelPtx(*bundle, "short").find("shfl"), std::string::npos);
  if (std::filesystem::exists(kPtxas)) {
    EXPECT_EQ(assemble(bundle->ptx, 90, "shapes"), "");
  }
}

// A reducer whose order matters (not exactly add/multiply/max/min/and/or of its parameters) keeps the in-order
// loop: a warp would combine the elements in another order.
TEST(PtxBundleTest, OrderSensitiveReducerStaysInOrder) {
  StatusOr<PtxBundle> bundle = compileText(R"(HloModule ordered
sub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT d = f32[] subtract(a, b)
}
ENTRY e {
  x = f32[8,256] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[8] reduce(x, zero), dimensions={1}, to_apply=sub
})");
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  EXPECT_EQ(kernelPtx(*bundle, "r").find("shfl"), std::string::npos);
}

// A convolutional network's ops (window_emitter.cpp, serial_emitter.cpp) through the same emitter: the PTX of
// conv, pooling, its gradient, gather, scatter and sort, unfused and fused, assembles for sm_90.
TEST(PtxBundleTest, WindowedAndIndexedOpsAssemble) {
  const std::string text = std::string("HloModule cnn\n") + kAdd + R"(
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[2,8,8,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  g = f32[2,4,4,4] parameter(2)
  idx = s32[5,1] parameter(3)
  v = s32[16] parameter(4)
  c = f32[2,8,8,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  p = f32[2,4,4,4] reduce-window(c, ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  dp = f32[2,8,8,4] select-and-scatter(c, g, zero), window={size=1x2x2x1 stride=1x2x2x1}, select=ge, scatter=add
  flat = f32[32,4] reshape(p)
  rows = f32[5,4] gather(flat, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  acc = f32[32,4] scatter(flat, idx, rows), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  rflat = f32[20] reshape(rows)
  keys = f32[16] slice(rflat), slice={[0:16]}
  s = (f32[16], s32[16]) sort(keys, v), dimensions={0}, to_apply=lt
  sk = f32[16] get-tuple-element(s), index=0
  ROOT t = (f32[2,8,8,4], f32[32,4], f32[16]) tuple(dp, acc, sk)
})";
  for (bool fusion : {false, true}) {
    StatusOr<PtxBundle> bundle = compileText(text, fusion);
    ASSERT_TRUE(bundle.ok()) << bundle.message();
    if (!std::filesystem::exists(kPtxas)) GTEST_SKIP() << "ptxas not found at " << kPtxas;
    EXPECT_EQ(assemble(bundle->ptx, 90, fusion ? "cnn_fused" : "cnn"), "");
  }
}

TEST(PtxBundleTest, BatchNormsAndVariadicWindowOpsAssemble) {
  // Unfused (`compile --pipeline=none`) the bundle expands the batch norm itself; the variadic reduce-window and
  // scatter are tuple-shaped kernels of their own with two outputs each.
  const std::string text = R"(HloModule bnv
sums {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  s = f32[] add(a, c)
  t = s32[] add(b, d)
  ROOT r = (f32[], s32[]) tuple(s, t)
}
ENTRY e {
  x = f32[4,3,5,6] parameter(0)
  scale = f32[3] parameter(1)
  offset = f32[3] parameter(2)
  idx = s32[2,1] parameter(3)
  bn = (f32[4,3,5,6], f32[3], f32[3]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
  y = f32[4,3,5,6] get-tuple-element(bn), index=0
  n = s32[4,3,5,6] iota(), iota_dimension=2
  zero = f32[] constant(0)
  none = s32[] constant(0)
  w = (f32[4,3,2,3], s32[4,3,2,3]) reduce-window(y, n, zero, none), window={size=1x1x2x2 stride=1x1x2x2}, to_apply=sums
  wy = f32[4,3,2,3] get-tuple-element(w), index=0
  wn = s32[4,3,2,3] get-tuple-element(w), index=1
  uy = f32[2,3,2,3] slice(wy), slice={[0:2], [0:3], [0:2], [0:3]}
  un = s32[2,3,2,3] slice(wn), slice={[0:2], [0:3], [0:2], [0:3]}
  sc = (f32[4,3,2,3], s32[4,3,2,3]) scatter(wy, wn, idx, uy, un), update_window_dims={1,2,3}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sums
  sy = f32[4,3,2,3] get-tuple-element(sc), index=0
  sn = s32[4,3,2,3] get-tuple-element(sc), index=1
  m = f32[3] get-tuple-element(bn), index=1
  ROOT t = (f32[4,3,2,3], s32[4,3,2,3], f32[3]) tuple(sy, sn, m)
})";
  for (bool fusion : {false, true}) {
    StatusOr<PtxBundle> bundle = compileText(text, fusion);
    ASSERT_TRUE(bundle.ok()) << bundle.message();
    expectConsistent(nlohmann::json::parse(bundle->json), bundle->constants);
    if (!std::filesystem::exists(kPtxas)) GTEST_SKIP() << "ptxas not found at " << kPtxas;
    EXPECT_EQ(assemble(bundle->ptx, 90, fusion ? "bnv_fused" : "bnv"), "");
  }
}

TEST(PtxBundleTest, FusionsWhoseRootIsAVariadicReductionAssemble) {
  // Two output buffers per kernel: the N results of a tuple-shaped reduce or reduce-window at a fusion's root.
  StatusOr<PtxBundle> bundle = compileText(std::string(testing::kVariadicReductionFusions), false);
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  expectConsistent(nlohmann::json::parse(bundle->json), bundle->constants);
  if (!std::filesystem::exists(kPtxas)) GTEST_SKIP() << "ptxas not found at " << kPtxas;
  EXPECT_EQ(assemble(bundle->ptx, 90, "vfusion"), "");
}

TEST(PtxBundleTest, RefusesABlockSizeThatSplitsWarps) {
  PtxOptions options;
  options.blockSize = 100;
  StatusOr<PtxBundle> bundle = compileText(
      "HloModule b\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n", false, options);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.message().find("multiple of 32"), std::string::npos) << bundle.message();
}

}  // namespace
}  // namespace fusionscope::core

namespace fusionscope::core {
namespace {

// Complex arithmetic (structs {re, im} of floats; exp, log, sqrt, sin, cos through libdevice) assembles for the GPU,
// fused and unfused; fft does not run there (refused by name: complex_run_test.cpp).
TEST(PtxBundleTest, ComplexArithmeticAssembles) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"(HloModule complex_gpu
ENTRY e {
  a = f32[256] parameter(0)
  b = f32[256] parameter(1)
  z = c64[256] complex(a, b)
  w = c64[256] complex(b, a)
  p = c64[256] multiply(z, w)
  q = c64[256] divide(p, w)
  e = c64[256] exponential(q)
  l = c64[256] log(e)
  r = c64[256] sqrt(l)
  s = c64[256] sine(r)
  c = c64[256] cosine(s)
  d = c128[256] convert(c)
  m = f64[256] abs(d)
  zero = c64[] constant((0, 0))
  total = c64[] reduce(c, zero), dimensions={0}, to_apply=add
  re = f32[256] real(c)
  ROOT t = (f64[256], f32[256], c64[]) tuple(m, re, total)
}
add {
  x = c64[] parameter(0)
  y = c64[] parameter(1)
  ROOT s = c64[] add(x, y)
}
)");
  ASSERT_TRUE(module.ok()) << module.message();
  const bool havePtxas = std::filesystem::exists(kPtxas);
  for (const char* preset : {"none", "gpu"}) {
    std::unique_ptr<HloModule> fused = fuse(**module, preset);
    StatusOr<PtxBundle> bundle = compilePtxBundle(*fused, std::string(preset) != "none");
    ASSERT_TRUE(bundle.ok()) << preset << ": " << bundle.message();
    if (havePtxas) {
      EXPECT_EQ(assemble(bundle->ptx, 90, fmt::format("complex_{}", preset)), "") << preset;
    }
  }
  if (!havePtxas) GTEST_SKIP() << "ptxas not found at " << kPtxas << ": PTX was generated but not assembled";
}

}  // namespace
}  // namespace fusionscope::core
