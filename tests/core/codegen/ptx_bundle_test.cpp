// The NVPTX bundle: every sample's kernels (fused and unfused) assemble with ptxas for sm_80 and sm_90, and
// bundle.json agrees with itself (args name existing buffers, sizes match shapes, constants fit constants.bin).
#include "core/codegen/ptx_bundle.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/codegen/element_types.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"
#include "tests/core/testing/corpus.h"

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
    EXPECT_GE(threads, kernel.at("elements").get<int64_t>() / static_cast<int64_t>(kernel.at("args").size()))
        << kernel.dump();
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

// A bundle is a flat kernel list: a module with a loop is refused with one message naming the while.
TEST(PtxBundleTest, ControlFlowIsRefusedNamingTheInstruction) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"(HloModule loop
cond {
  p = f32[4] parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  ROOT w.7 = f32[4] while(x), condition=cond, body=body
})");
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<PtxBundle> bundle = compilePtxBundle(**module, false);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.message().find("w.7: control flow (while) is not supported by the nvptx bundle"), std::string::npos)
      << bundle.message();
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
