// The GPU runner without a GPU: bundle parsing and validation, .npy encoding/decoding, and the no-driver path of
// the real fusionscope-gpurun binary.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "profiler/gpu/annotate.h"
#include "profiler/gpu/bundle.h"
#include "profiler/gpu/npy.h"
#include "tests/common/source_paths.h"

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
      // A number no JSON number type holds: nlohmann throws out_of_range, not parse_error (the runner aborted).
      {replaced(kBundle, "\"bytes\": 313600", "\"bytes\": 1e999999"), "bundle.json: error: not valid JSON"},
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
      // Sizes are refused before anything is allocated: 3e9 elements (the runner aborted allocating them), a product
      // that would wrap around, buffers past the runner's limit.
      {replaced(kBundle, "\"dims\": [100, 784]", "\"dims\": [30000000000, 784]"),
       "parameters[0].dims: more than 68719476736 elements"},
      {replaced(kBundle, "\"dims\": [100, 784]", "\"dims\": [30000000000]"),
       "parameters[0].dims: more than 68719476736 bytes"},
      {replaced(kBundle, "\"dims\": [100, 784]", "\"dims\": [4294967296, 4294967296, 4]"),
       "parameters[0].dims: more than 68719476736 elements"},
      {replaced(kBundle, "{\"id\": 0, \"bytes\": 313600}", "{\"id\": 0, \"bytes\": 9223372036854775807}"),
       "buffers[0].bytes: the buffers hold more than 68719476736 bytes in all"},
  };
  for (const Case& c : cases) {
    StatusOr<Bundle> bundle = parseBundle(c.text, "bundle.json");
    ASSERT_FALSE(bundle.ok()) << c.message;
    EXPECT_NE(bundle.message().find(c.message), std::string::npos) << bundle.message();
  }
}

// A counting loop and a branch (docs/BUNDLE.md, "Control flow"): buffer 0 holds the start value, the loop state
// lives in buffer 1 (its body writes buffer 3, which the update swaps in), buffer 2 is the predicate, the branch
// moves its result into buffer 4.
const std::string kProgramBundle = R"({
  "schema": "fusionscope.bundle/1", "module": "count", "fusion": false,
  "target": {"triple": "nvptx64-nvidia-cuda", "sm": 90, "ptx": "kernels.ptx"},
  "buffers": [{"id": 0, "bytes": 4}, {"id": 1, "bytes": 4}, {"id": 2, "bytes": 1}, {"id": 3, "bytes": 4},
              {"id": 4, "bytes": 4}],
  "parameters": [{"index": 0, "name": "start", "dtype": "s32", "dims": [], "buffer": 0}],
  "outputs": [{"index": 0, "name": "result", "dtype": "s32", "dims": [], "buffer": 4}],
  "kernels": [{"name": "lt3", "grid": [1, 1, 1], "block": [32, 1, 1], "args": [1, 2]},
              {"name": "inc", "grid": [1, 1, 1], "block": [32, 1, 1], "args": [1, 3]},
              {"name": "neg", "grid": [1, 1, 1], "block": [32, 1, 1], "args": [1, 3]}],
  "program": [
    {"while": "w", "init": [{"from": 0, "to": 1}], "state": [1], "condition": [{"kernel": 0}], "predicate": 2,
     "body": [{"kernel": 1}], "update": [{"from": 3, "to": 1, "swap": true}]},
    {"conditional": "c", "selector": 2, "selector_dtype": "pred", "branches": [[{"kernel": 2}], [{"kernel": 1}]],
     "branch_results": [[{"from": 3, "to": 4}], [{"from": 3, "to": 4}]], "results": [4]}
  ]
})";

// Host memory standing in for the device: buffers through a table of pointers, kernels by name.
class HostDevice : public ProgramDevice {
 public:
  explicit HostDevice(const Bundle& bundle) : m_bundle(bundle) {
    for (const BundleBuffer& b : bundle.buffers) {
      m_memory.emplace_back(static_cast<size_t>(b.bytes), 0);
      m_table[b.id] = m_memory.back().data();
    }
  }
  Status launch(int64_t kernel) override {
    const BundleKernel& k = m_bundle.kernels[static_cast<size_t>(kernel)];
    const int32_t in = value(k.args[0]);
    uint8_t* out = m_table.at(k.args[1]);
    if (k.name == "lt3") {
      *out = in < 3 ? 1 : 0;
    } else {
      const int32_t result = k.name == "inc" ? in + 1 : -in;
      std::memcpy(out, &result, 4);
    }
    launched.push_back(k.name);
    return okStatus();
  }
  Status read(int64_t buffer, void* out, int64_t bytes) override {
    std::memcpy(out, m_table.at(buffer), static_cast<size_t>(bytes));
    return okStatus();
  }
  Status copy(int64_t from, int64_t to, int64_t bytes) override {
    std::memcpy(m_table.at(to), m_table.at(from), static_cast<size_t>(bytes));
    return okStatus();
  }
  void swap(int64_t a, int64_t b) override { std::swap(m_table.at(a), m_table.at(b)); }
  int32_t value(int64_t buffer) const {
    int32_t v = 0;
    std::memcpy(&v, m_table.at(buffer), 4);
    return v;
  }
  void set(int64_t buffer, int32_t v) { std::memcpy(m_table.at(buffer), &v, 4); }
  std::vector<std::string> launched;

 private:
  const Bundle& m_bundle;
  std::list<std::vector<uint8_t>> m_memory;
  std::map<int64_t, uint8_t*> m_table;
};

TEST(GpuProgramTest, LoopsRunUntilThePredicateAndBranchesFollowTheSelector) {
  StatusOr<Bundle> bundle = parseBundle(kProgramBundle, "bundle.json");
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  ASSERT_EQ(bundle->program.size(), 2u);
  HostDevice device(*bundle);
  device.set(0, 0);
  int64_t launches = 0;
  ASSERT_TRUE(runProgram(*bundle, device, nullptr, &launches).ok());
  // 0 -> 1 -> 2 -> 3: four conditions, three bodies; the predicate is false afterwards: the second branch (inc).
  EXPECT_EQ(device.value(1), 3);
  EXPECT_EQ(device.value(4), 4);
  EXPECT_EQ(launches, 8);
  EXPECT_EQ(device.launched, (std::vector<std::string>{"lt3", "inc", "lt3", "inc", "lt3", "inc", "lt3", "inc"}));
  // A start past the bound: no trip, and the branch still sees the predicate (false).
  HostDevice again(*bundle);
  again.set(0, 7);
  ASSERT_TRUE(runProgram(*bundle, again).ok());
  EXPECT_EQ(again.value(4), 8);
}

TEST(GpuProgramTest, InterruptStopsTheLoopNamingIt) {
  StatusOr<Bundle> bundle = parseBundle(kProgramBundle, "bundle.json");
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  HostDevice device(*bundle);
  volatile int interrupt = 1;
  Status status = runProgram(*bundle, device, &interrupt);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("w: interrupted after 0 trips"), std::string::npos) << status.message();
}

TEST(GpuProgramTest, BranchIndexFollowsXla) {
  const uint8_t yes = 1;
  const uint8_t no = 0;
  EXPECT_EQ(branchIndex(&yes, "pred", 2), 0);
  EXPECT_EQ(branchIndex(&no, "pred", 2), 1);
  const int32_t two = 2;
  const int32_t minusOne = -1;
  const int32_t nine = 9;
  EXPECT_EQ(branchIndex(reinterpret_cast<const uint8_t*>(&two), "s32", 3), 2);
  EXPECT_EQ(branchIndex(reinterpret_cast<const uint8_t*>(&minusOne), "s32", 3), 2);  // out of range: the last
  EXPECT_EQ(branchIndex(reinterpret_cast<const uint8_t*>(&nine), "s32", 3), 2);
  const int8_t one = 1;
  EXPECT_EQ(branchIndex(reinterpret_cast<const uint8_t*>(&one), "s8", 3), 1);
}

TEST(GpuProgramTest, RejectsBadProgramsWithTheirLocation) {
  const std::pair<std::string, std::string> cases[] = {
      {replaced(kProgramBundle, "\"body\": [{\"kernel\": 1}]", "\"body\": [{\"kernel\": 5}]"),
       "program[0].body[0].kernel: no kernel 5 (the bundle has 3)"},
      {replaced(kProgramBundle, "\"predicate\": 2", "\"predicate\": 12"), "program[0].predicate: unknown buffer 12"},
      {replaced(kProgramBundle, "{\"from\": 3, \"to\": 1, \"swap\": true}", "{\"from\": 3, \"to\": 8}"),
       "program[0].update[0].to: unknown buffer 8"},
      {replaced(kProgramBundle, "\"selector_dtype\": \"pred\"", "\"selector_dtype\": \"f32\""),
       "program[1].selector_dtype: expected pred or an integer type"},
      {replaced(kProgramBundle, "\"branches\": [[{\"kernel\": 2}], [{\"kernel\": 1}]]", "\"branches\": []"),
       "program[1].branches: expected a non-empty array"},
      {replaced(kProgramBundle, "{\"kernel\": 2}", "{\"launch\": 2}"),
       "program[1].branches[0][0]: expected \"kernel\", \"while\" or \"conditional\""},
  };
  for (const auto& [text, message] : cases) {
    StatusOr<Bundle> bundle = parseBundle(text, "bundle.json");
    ASSERT_FALSE(bundle.ok()) << message;
    EXPECT_NE(bundle.message().find(message), std::string::npos) << bundle.message();
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

// bundle.json and the files it names are regular files: a FIFO would block the runner forever and /dev/zero fill
// its memory.
TEST(GpuBundleTest, SpecialFilesAreRefusedWithoutBlocking) {
  fs::path dir = fs::temp_directory_path() / ("fs_gpu_bundle_fifo_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "bundle.json").c_str(), 0600), 0);
  StatusOr<Bundle> fifo = loadBundle(dir.string());
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.message().find("not a regular file"), std::string::npos) << fifo.message();
  StatusOr<std::string> zero = readRegularFile("/dev/zero", 1 << 20);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.message().find("not a regular file"), std::string::npos) << zero.message();
  std::ofstream(dir / "big.bin") << std::string(100, 'x');
  StatusOr<std::string> big = readRegularFile((dir / "big.bin").string(), 64);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.message().find("100 bytes, more than the 64"), std::string::npos) << big.message();
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
  EXPECT_NE(err.find("/nonexistent/bundle/bundle.json: error: cannot read: No such file or directory"),
            std::string::npos)
      << err;
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
