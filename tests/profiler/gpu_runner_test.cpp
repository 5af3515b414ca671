// The GPU runner without a GPU: bundle parsing and validation, .npy encoding/decoding, and the no-driver path of
// the real fusionscope-gpurun binary.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "profiler/gpu/annotate.h"
#include "profiler/gpu/bundle.h"
#include "profiler/gpu/npy.h"

namespace fusionscope::profiler::gpu {
namespace {

namespace fs = std::filesystem;

// The bundle format's own example (docs/PROFILER.md), trimmed to a consistent set of buffers.
const std::string kBundle = R"({
  "schema": "fusionscope.bundle/1", "module": "mnist_softmax_train_step", "fusion": true,
  "target": {"triple": "nvptx64-nvidia-cuda", "sm": 90, "ptx": "kernels.ptx"},
  "buffers": [{"id": 0, "bytes": 313600}, {"id": 1, "bytes": 40, "constant_offset": 0}, {"id": 3, "bytes": 31360},
              {"id": 5, "bytes": 31360}],
  "constants": "constants.bin",
  "parameters": [{"index": 0, "name": "x", "dtype": "f32", "dims": [100, 784], "buffer": 0},
                 {"index": 1, "name": "W", "dtype": "f32", "dims": [784, 10], "buffer": 5}],
  "outputs": [{"index": 0, "name": "W_new", "dtype": "f32", "dims": [784, 10], "buffer": 5, "aliases_parameter": 1}],
  "kernels": [{"name": "fusion_3", "instruction": "fusion.3", "kind": "kLoop", "grid": [98, 1, 1],
               "block": [256, 1, 1], "shared_bytes": 0, "args": [0, 3, 5], "bytes_read": 313600,
               "bytes_written": 31360, "elements": 7840}],
  "peak_bytes": 123456
})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(GpuBundleTest, ParsesTheDocumentedExample) {
  StatusOr<Bundle> bundle = parseBundle(kBundle, "bundle.json");
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  EXPECT_EQ(bundle->module, "mnist_softmax_train_step");
  EXPECT_TRUE(bundle->fusion);
  EXPECT_EQ(bundle->sm, 90);
  ASSERT_EQ(bundle->buffers.size(), 4u);
  EXPECT_EQ(bundle->buffers[1].constantOffset, 0);
  ASSERT_EQ(bundle->kernels.size(), 1u);
  EXPECT_EQ(bundle->kernels[0].grid[0], 98u);
  EXPECT_EQ(bundle->kernels[0].args, (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(bundle->outputs[0].aliasesParameter, 1);
  EXPECT_EQ(bundle->parameters[0].elements(), 78400);
}

TEST(GpuBundleTest, RejectsBadBundlesWithTheirLocation) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"{not json", "bundle.json: error: not valid JSON (at byte offset"},
      {replaced(kBundle, "fusionscope.bundle/1", "other/2"), "schema: expected \"fusionscope.bundle/1\""},
      {replaced(kBundle, "\"args\": [0, 3, 5]", "\"args\": [0, 17, 5]"), "kernels[0].args[1]: unknown buffer 17"},
      {replaced(kBundle, "\"dims\": [100, 784], \"buffer\": 0", "\"dims\": [100, 784], \"buffer\": 9"),
       "parameters[0].buffer: unknown buffer 9"},
      {replaced(kBundle, "{\"id\": 3, \"bytes\": 31360}", "{\"id\": 0, \"bytes\": 31360}"),
       "buffers[2].id: duplicate buffer id 0"},
      {replaced(kBundle, "\"dtype\": \"f32\", \"dims\": [100, 784]", "\"dtype\": \"f8\", \"dims\": [100, 784]"),
       "parameters[0].dtype: unknown dtype \"f8\""},
      {replaced(kBundle, "\"dims\": [100, 784]", "\"dims\": [200, 784]"), "parameters[0]: 627200 bytes do not fit"},
      {replaced(kBundle, "\"grid\": [98, 1, 1]", "\"grid\": [98, 0, 1]"), "kernels[0].grid[1]: must be positive"},
      {replaced(kBundle, "\"aliases_parameter\": 1", "\"aliases_parameter\": 4"),
       "outputs[0].aliases_parameter: no parameter with index 4"},
      {replaced(kBundle, "\"module\": \"mnist_softmax_train_step\",", ""), "bundle: missing \"module\""},
  };
  for (const Case& c : cases) {
    StatusOr<Bundle> bundle = parseBundle(c.text, "bundle.json");
    ASSERT_FALSE(bundle.ok()) << c.message;
    EXPECT_NE(bundle.message().find(c.message), std::string::npos) << bundle.message();
  }
}

TEST(GpuBundleTest, LoadChecksFilesAndConstantRanges) {
  fs::path dir = fs::temp_directory_path() / ("fs_gpu_bundle_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "bundle.json") << kBundle;
  StatusOr<Bundle> noPtx = loadBundle(dir.string());
  ASSERT_FALSE(noPtx.ok());
  EXPECT_NE(noPtx.message().find("kernels.ptx not found"), std::string::npos) << noPtx.message();
  std::ofstream(dir / "kernels.ptx") << ".version 8.0\n";
  std::ofstream(dir / "constants.bin") << std::string(20, '\0');  // buffer 1 needs 40 bytes
  StatusOr<Bundle> shortConstants = loadBundle(dir.string());
  ASSERT_FALSE(shortConstants.ok());
  EXPECT_NE(shortConstants.message().find("lie outside"), std::string::npos) << shortConstants.message();
  std::ofstream(dir / "constants.bin") << std::string(40, '\0');
  StatusOr<Bundle> good = loadBundle(dir.string());
  EXPECT_TRUE(good.ok()) << good.message();
  fs::remove_all(dir);
}

TEST(GpuAnnotateTest, KernelEventsGetTheirInstructionAndBytes) {
  StatusOr<Bundle> bundle = parseBundle(kBundle, "bundle.json");
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  Trace trace;
  auto add = [&](std::string_view name, std::string_view cat, std::string_view args) {
    TraceEvent event;
    event.name = name;
    event.cat = cat;
    event.durNs = 5;
    event.args = args;
    trace.events.push_back(event);
  };
  add("fusion_3", "kernel", R"({"correlation":7,"grid":[98,1,1]})");
  add("fusion_3", "kernel", "{ }");
  add("fusion_3", "cuda_runtime", R"({"cbid":211})");  // the launch call, not the kernel
  add("other_kernel", "kernel", R"({"correlation":8})");
  EXPECT_EQ(annotateKernelEvents(trace, *bundle), 2);
  EXPECT_EQ(trace.events[0].args, R"({"correlation":7,"grid":[98,1,1],"hlo_op":"fusion.3","kind":"kLoop",)"
                                  R"("bytes_read":313600,"bytes_written":31360,"elements":7840})");
  EXPECT_EQ(trace.events[1].args, R"({ "hlo_op":"fusion.3","kind":"kLoop","bytes_read":313600,"bytes_written":31360,)"
                                  R"("elements":7840})");
  EXPECT_EQ(trace.events[2].args, R"({"cbid":211})");
  EXPECT_EQ(trace.events[3].args, R"({"correlation":8})");
}

TEST(NpyTest, EncodesHeaderAlignedAndDecodesBack) {
  float values[6] = {1, 2, 3, 4, 5, 6};
  StatusOr<std::string> npy =
      encodeNpy("f32", {2, 3}, std::string_view(reinterpret_cast<const char*>(values), sizeof values));
  ASSERT_TRUE(npy.ok()) << npy.message();
  EXPECT_EQ(npy->substr(0, 6), "\x93NUMPY");
  EXPECT_EQ((*npy)[6], '\x01');
  size_t headerLength = static_cast<unsigned char>((*npy)[8]) | (static_cast<unsigned char>((*npy)[9]) << 8);
  EXPECT_EQ((10 + headerLength) % 64, 0u);
  EXPECT_NE(npy->find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_EQ(npy->size(), 10 + headerLength + sizeof values);
  StatusOr<NpyFile> back = decodeNpy(*npy, "x.npy");
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->descr, "<f4");
  EXPECT_EQ(back->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back->data, std::string(reinterpret_cast<const char*>(values), sizeof values));

  StatusOr<std::string> vector = encodeNpy("s32", {3}, std::string(12, '\0'));
  ASSERT_TRUE(vector.ok());
  EXPECT_NE(vector->find("'shape': (3,)"), std::string::npos);
  StatusOr<std::string> scalar = encodeNpy("pred", {}, std::string(1, '\1'));
  ASSERT_TRUE(scalar.ok());
  EXPECT_NE(scalar->find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(scalar->find("'shape': ()"), std::string::npos);
  EXPECT_FALSE(encodeNpy("f32", {2}, std::string(4, '\0')).ok());  // wrong byte count
  EXPECT_FALSE(encodeNpy("f7", {1}, std::string(4, '\0')).ok());
  EXPECT_FALSE(decodeNpy("not npy at all", "bad.npy").ok());
}

int runGpurun(const std::string& args, std::string& err) {
  fs::path errPath = fs::temp_directory_path() / ("fs_gpurun_err_" + std::to_string(::getpid()));
  int status = std::system((std::string(FS_GPURUN_PATH) + " " + args + " 2>" + errPath.string()).c_str());
  std::ifstream in(errPath);
  std::stringstream buffer;
  buffer << in.rdbuf();
  err = buffer.str();
  fs::remove(errPath);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(GpuRunnerTest, BadUsageAndBadBundleExitTwo) {
  std::string err;
  EXPECT_EQ(runGpurun("", err), 2);
  EXPECT_NE(err.find("usage:"), std::string::npos) << err;
  EXPECT_EQ(runGpurun("/nonexistent/bundle", err), 2);
  EXPECT_NE(err.find("cannot read bundle.json"), std::string::npos) << err;
}

TEST(GpuRunnerTest, WithoutDriverSaysSoAndExitsThree) {
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY)) {
    ::dlclose(driver);
    GTEST_SKIP() << "a CUDA driver is installed here";
  }
  fs::path dir = fs::temp_directory_path() / ("fs_gpurun_nodriver_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "bundle.json") << kBundle;
  std::ofstream(dir / "kernels.ptx") << ".version 8.0\n";
  std::ofstream(dir / "constants.bin") << std::string(40, '\0');
  std::string err;
  EXPECT_EQ(runGpurun(dir.string(), err), 3);
  EXPECT_NE(err.find("no CUDA driver found"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "timeline.ctf.json"));
  fs::remove_all(dir);
}

// A real bundle: the MNIST sample compiled by `fusionscope-cli compile --target=nvptx`, loaded by the runner's own
// bundle code and by the binary, which validates everything (bundle, PTX, constants, --input files) before it looks
// for the driver; then the same bundle broken in the ways the runner must name.
class CompiledBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("fs_gpurun_compiled_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    std::string sample = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";
    std::string command = std::string(FS_CLI_PATH) + " compile " + sample + " --target=nvptx --sm=90 -o " +
                          (m_dir / "bundle").string() + " >/dev/null 2>" + (m_dir / "compile.err").string();
    int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << readText(m_dir / "compile.err");
  }
  void TearDown() override { fs::remove_all(m_dir); }

  static std::string readText(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  fs::path bundle() const { return m_dir / "bundle"; }
  fs::path m_dir;
};

TEST_F(CompiledBundleTest, LoadsTheCompiledSample) {
  StatusOr<Bundle> loaded = loadBundle(bundle().string());
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(loaded->module, "mnist_softmax_train_step");
  EXPECT_FALSE(loaded->kernels.empty());
  EXPECT_FALSE(loaded->parameters.empty());
  EXPECT_FALSE(loaded->outputs.empty());
  std::string ptx = readText(bundle() / loaded->ptxFile);
  for (const BundleKernel& kernel : loaded->kernels) {
    EXPECT_NE(ptx.find(".entry " + kernel.name), std::string::npos) << kernel.name;
  }
}

TEST_F(CompiledBundleTest, BinaryValidatesUpToTheDriver) {
  std::string err;
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY)) {
    ::dlclose(driver);
    GTEST_SKIP() << "a CUDA driver is installed here";
  }
  EXPECT_EQ(runGpurun(bundle().string() + " -n 3", err), 3) << err;
  EXPECT_NE(err.find("no CUDA driver found"), std::string::npos) << err;
  EXPECT_EQ(runGpurun(bundle().string() + " -n 0", err), 2) << err;
  EXPECT_NE(err.find("-n: expected a positive count"), std::string::npos) << err;
  EXPECT_EQ(runGpurun(bundle().string() + " --input nosuch=" + (m_dir / "x.npy").string(), err), 2) << err;
  EXPECT_NE(err.find("--input nosuch: the bundle has no parameter"), std::string::npos) << err;
  StatusOr<Bundle> loaded = loadBundle(bundle().string());
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  std::string parameter = loaded->parameters.front().name;
  EXPECT_EQ(runGpurun(bundle().string() + " --input " + parameter + "=" + (m_dir / "missing.npy").string(), err), 2);
  EXPECT_NE(err.find("missing.npy"), std::string::npos) << err;
  std::ofstream(m_dir / "bad.npy") << "not numpy";
  EXPECT_EQ(runGpurun(bundle().string() + " --input " + parameter + "=" + (m_dir / "bad.npy").string(), err), 2);
  EXPECT_NE(err.find("bad.npy"), std::string::npos) << err;

  std::string json = readText(bundle() / "bundle.json");
  size_t args = json.find("\"args\"");
  ASSERT_NE(args, std::string::npos);
  size_t open = json.find('[', args);
  std::ofstream(bundle() / "bundle.json") << json.substr(0, open + 1) + "9999, " + json.substr(open + 1);
  EXPECT_EQ(runGpurun(bundle().string(), err), 2) << err;
  EXPECT_NE(err.find("bundle.json"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown buffer 9999"), std::string::npos) << err;

  std::ofstream(bundle() / "bundle.json") << json;
  fs::remove(bundle() / "kernels.ptx");
  EXPECT_EQ(runGpurun(bundle().string(), err), 2) << err;
  EXPECT_NE(err.find("kernels.ptx"), std::string::npos) << err;
}

}  // namespace
}  // namespace fusionscope::profiler::gpu
