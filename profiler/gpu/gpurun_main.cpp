// fusionscope-gpurun: runs a GPU bundle (bundle.h) on the first CUDA device under the CUPTI collector.
//
//   fusionscope-gpurun BUNDLE_DIR [-n N] [--trace FILE] [--out DIR] [--input NAME=FILE.npy]... [--seed S] [--no-trace]
//
// Loads kernels.ptx with cuModuleLoadDataEx, allocates every buffer, fills parameters with seeded uniform random
// data in [-1, 1) (integers: 0..9, pred: 0/1) or from --input files, copies constants, runs the kernels in order
// (or the bundle's program, with its loops and branches; Ctrl-C stops a loop) N times, writes the trace (default
// BUNDLE_DIR/timeline.ctf.json) and every output as DIR/NAME.npy. Exit codes: 0 ok, 1 a CUDA or CUPTI call failed (the
// message names the call, file and line), 2 bad usage or a bad bundle/input, 3 no CUDA driver or no CUDA device.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/oom_reserve.h"
#include "profiler/cupti/collector.h"
#include "profiler/cupti/cuda_check.h"
#include "profiler/cupti/cuda_driver.h"
#include "profiler/cupti/trace_file.h"
#include "profiler/gpu/annotate.h"
#include "profiler/gpu/bundle.h"
#include "profiler/gpu/npy.h"

namespace {

using namespace fusionscope;
using namespace fusionscope::profiler;
namespace fs = std::filesystem;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitNoCuda = 3;

struct Options {
  std::string bundle;
  int iterations = 1;
  std::string trace;
  std::string out;
  std::map<std::string, std::string> inputs;
  uint64_t seed = 1;
  bool collect = true;
};

const char* kUsage =
    "usage: fusionscope-gpurun BUNDLE_DIR [-n N] [--trace FILE] [--out DIR] [--input NAME=FILE.npy]... [--seed S] "
    "[--no-trace]\n";

bool parseArgs(int argc, char** argv, Options& o, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&](std::string& target) {
      if (i + 1 >= argc) {
        error = arg + " needs a value";
        return false;
      }
      target = argv[++i];
      return true;
    };
    std::string value;
    if (arg == "-n" || arg == "--iterations") {
      if (!next(value)) return false;
      char* end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || n <= 0 || n > 1000000) {
        error = "-n: expected a positive count, got '" + value + "'";
        return false;
      }
      o.iterations = static_cast<int>(n);
    } else if (arg == "--trace") {
      if (!next(o.trace)) return false;
    } else if (arg == "--out") {
      if (!next(o.out)) return false;
    } else if (arg == "--seed") {
      if (!next(value)) return false;
      o.seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (arg == "--input") {
      if (!next(value)) return false;
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) {
        error = "--input: expected NAME=FILE.npy, got '" + value + "'";
        return false;
      }
      o.inputs[value.substr(0, eq)] = value.substr(eq + 1);
    } else if (arg == "--no-trace") {
      o.collect = false;
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(kExitOk);
    } else if (!arg.empty() && arg[0] == '-') {
      error = "unknown option " + arg;
      return false;
    } else if (o.bundle.empty()) {
      o.bundle = arg;
    } else {
      error = "unexpected argument " + arg;
      return false;
    }
  }
  if (o.bundle.empty()) {
    error = "no bundle directory given";
    return false;
  }
  return true;
}

StatusOr<std::string> readBinary(const std::string& path) {
  return gpu::readRegularFile(path, int64_t{1} << 36);  // no file a bundle names is larger than its buffers' limit
}

// Seeded host data for one parameter.
std::string randomData(const gpu::BundleValue& p, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(p.index));
  int64_t n = p.elements();
  int64_t size = gpu::dtypeBytes(p.dtype);
  std::string data(static_cast<size_t>(n * size), '\0');
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < n; ++i) {
    char* at = data.data() + i * size;
    if (p.dtype == "f32") {
      float v = static_cast<float>(real(rng));
      std::memcpy(at, &v, 4);
    } else if (p.dtype == "f64") {
      double v = real(rng);
      std::memcpy(at, &v, 8);
    } else if (p.dtype == "f16" || p.dtype == "bf16") {
      // Small exactly representable values: k/8 for k in -8..8, built from the float's bits.
      float v = static_cast<float>(small(rng) - 4) / 8.0f;
      uint32_t bits = 0;
      std::memcpy(&bits, &v, 4);
      uint16_t half = 0;
      if (p.dtype == "bf16") {
        half = static_cast<uint16_t>(bits >> 16);
      } else if (v != 0.0f) {
        uint32_t sign = (bits >> 16) & 0x8000u;
        int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
        uint32_t mantissa = (bits >> 13) & 0x3ffu;
        half = static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | mantissa);
      }
      std::memcpy(at, &half, 2);
    } else if (p.dtype == "pred") {
      *at = static_cast<char>(small(rng) & 1);
    } else {
      int64_t v = small(rng);
      std::memcpy(at, &v, static_cast<size_t>(size));  // little-endian: the low bytes hold the value
    }
  }
  return data;
}

struct Device {
  const cupti::DriverApi* api = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::map<int64_t, CUdeviceptr> buffers;
  ~Device() {
    if (!api) return;
    for (auto& [id, pointer] : buffers) (void)api->cuMemFree(pointer);
    if (module) (void)api->cuModuleUnload(module);
    if (context) (void)api->cuDevicePrimaryCtxRelease(device);
  }
};

volatile int g_interrupted = 0;
void onInterrupt(int) {
  g_interrupted = 1;
}

// Runs a bundle's program with the driver: launches on the legacy default stream (so every launch, copy and read
// is ordered after the ones before it); buffer ids resolve through Device::buffers, which swaps exchange.
class ProgramRunner : public gpu::ProgramDevice {
 public:
  ProgramRunner(const gpu::Bundle& bundle, Device& device, const std::vector<CUfunction>& functions)
      : m_bundle(bundle), m_device(device), m_functions(functions) {}

  Status launch(int64_t kernel) override {
    const gpu::BundleKernel& k = m_bundle.kernels[static_cast<size_t>(kernel)];
    std::vector<CUdeviceptr> pointers;
    for (int64_t id : k.args) pointers.push_back(m_device.buffers.at(id));
    std::vector<void*> params;
    for (CUdeviceptr& p : pointers) params.push_back(&p);
    FS_CUDA_CHECK(m_device.api->cuLaunchKernel(m_functions[static_cast<size_t>(kernel)], k.grid[0], k.grid[1],
                                               k.grid[2], k.block[0], k.block[1], k.block[2], k.sharedBytes, nullptr,
                                               params.data(), nullptr));
    return okStatus();
  }
  Status read(int64_t buffer, void* out, int64_t bytes) override {
    FS_CUDA_CHECK(m_device.api->cuMemcpyDtoH(out, m_device.buffers.at(buffer), static_cast<size_t>(bytes)));
    return okStatus();
  }
  Status copy(int64_t from, int64_t to, int64_t bytes) override {
    FS_CUDA_CHECK(
        m_device.api->cuMemcpyDtoD(m_device.buffers.at(to), m_device.buffers.at(from), static_cast<size_t>(bytes)));
    return okStatus();
  }
  void swap(int64_t a, int64_t b) override { std::swap(m_device.buffers.at(a), m_device.buffers.at(b)); }

 private:
  const gpu::Bundle& m_bundle;
  Device& m_device;
  const std::vector<CUfunction>& m_functions;
};

// What the run needs from the host side: parameter data (from --input .npy files, else generated), the constants
// and the PTX. Read before the driver is touched, so that a bad input is reported as bad input on any machine; the
// generated data only after (fillGeneratedInputs): 3.2 GB of it took 13 s before a machine without a driver said so.
struct HostData {
  std::map<int64_t, std::string> inputs;  // buffer id -> bytes
  std::string constants;
  std::string ptx;
};

StatusOr<HostData> prepareHost(const gpu::Bundle& bundle, const Options& o) {
  HostData host;
  for (const gpu::BundleValue& p : bundle.parameters) {
    auto given = o.inputs.find(p.name);
    if (given == o.inputs.end()) continue;  // generated once the driver is there
    StatusOr<std::string> bytes = readBinary(given->second);
    if (!bytes.ok()) return bytes.status();
    StatusOr<NpyFile> array = gpu::decodeNpy(*bytes, given->second);
    if (!array.ok()) return array.status();
    if (array->descr != gpu::npyDescriptor(p.dtype) || array->dims != p.dims) {
      return Status::error(given->second + ": error: parameter " + p.name + " wants " + p.dtype + " (" +
                           gpu::npyDescriptor(p.dtype) + ") with " + std::to_string(p.dims.size()) +
                           " dims as in the bundle; the file has " + array->descr);
    }
    host.inputs[p.buffer] = std::move(array->data);
  }
  for (const auto& [name, file] : o.inputs) {
    bool known = false;
    for (const gpu::BundleValue& p : bundle.parameters) known = known || p.name == name;
    if (!known) {
      return Status::error("--input " + name + ": the bundle has no parameter of that name");
    }
  }
  if (!bundle.constantsFile.empty()) {
    StatusOr<std::string> bytes = readBinary((fs::path(bundle.directory) / bundle.constantsFile).string());
    if (!bytes.ok()) return bytes.status();
    host.constants = std::move(*bytes);
  }
  StatusOr<std::string> ptx = readBinary((fs::path(bundle.directory) / bundle.ptxFile).string());
  if (!ptx.ok()) return ptx.status();
  host.ptx = std::move(*ptx);
  return host;
}

// Seeded data for every parameter no --input names.
void fillGeneratedInputs(const gpu::Bundle& bundle, const Options& o, HostData& host) {
  for (const gpu::BundleValue& p : bundle.parameters) {
    if (o.inputs.find(p.name) == o.inputs.end()) host.inputs[p.buffer] = randomData(p, o.seed);
  }
}

Status runBundle(const gpu::Bundle& bundle, const Options& o, const HostData& host, Device& d, int& exitCode) {
  const cupti::DriverApi& cu = *d.api;
  exitCode = kExitFailed;
  FS_CUDA_CHECK(cu.cuInit(0));
  int count = 0;
  FS_CUDA_CHECK(cu.cuDeviceGetCount(&count));
  if (count == 0) {
    exitCode = kExitNoCuda;
    return Status::error("no CUDA device found");
  }
  FS_CUDA_CHECK(cu.cuDeviceGet(&d.device, 0));
  char deviceName[256] = {};
  FS_CUDA_CHECK(cu.cuDeviceGetName(deviceName, sizeof deviceName, d.device));
  FS_CUDA_CHECK(cu.cuDevicePrimaryCtxRetain(&d.context, d.device));
  FS_CUDA_CHECK(cu.cuCtxSetCurrent(d.context));
  std::fprintf(stderr, "fusionscope-gpurun: %s on %s, %zu kernels x %d\n", bundle.module.c_str(), deviceName,
               bundle.kernels.size(), o.iterations);

  const std::map<int64_t, std::string>& hostInputs = host.inputs;
  const std::string& constants = host.constants;
  const std::string* ptx = &host.ptx;

  if (o.collect) {
    FS_RETURN_IF_ERROR(cupti::startCollector());
  }
  for (const gpu::BundleBuffer& b : bundle.buffers) {
    CUdeviceptr pointer = 0;
    FS_CUDA_CHECK(cu.cuMemAlloc(&pointer, static_cast<size_t>(b.bytes)));
    d.buffers[b.id] = pointer;
    FS_CUDA_CHECK(cu.cuMemsetD8(pointer, 0, static_cast<size_t>(b.bytes)));
    if (b.constantOffset) {
      FS_CUDA_CHECK(cu.cuMemcpyHtoD(pointer, constants.data() + *b.constantOffset, static_cast<size_t>(b.bytes)));
    }
  }
  for (const auto& [id, bytes] : hostInputs) FS_CUDA_CHECK(cu.cuMemcpyHtoD(d.buffers[id], bytes.data(), bytes.size()));

  // The JIT log says why a PTX module does not load; keep it for the error message.
  std::vector<char> log(16384, '\0');
  CUjit_option jitOptions[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* jitValues[] = {log.data(), reinterpret_cast<void*>(log.size())};
  Status loaded = cupti::callStatus(cu.cuModuleLoadDataEx(&d.module, ptx->c_str(), 2, jitOptions, jitValues),
                                    "cuModuleLoadDataEx(kernels.ptx)", __FILE__, __LINE__);
  if (!loaded.ok()) return Status::error(loaded.message() + "\nJIT log: " + std::string(log.data()));
  std::vector<CUfunction> functions;
  for (const gpu::BundleKernel& k : bundle.kernels) {
    CUfunction function = nullptr;
    Status found = cupti::callStatus(cu.cuModuleGetFunction(&function, d.module, k.name.c_str()), "cuModuleGetFunction",
                                     __FILE__, __LINE__);
    if (!found.ok()) return Status::error(found.message() + " (kernel " + k.name + ")");
    functions.push_back(function);
  }
  ProgramRunner runner(bundle, d, functions);
  if (!bundle.program.empty()) std::signal(SIGINT, onInterrupt);  // a loop that never ends stops on Ctrl-C
  int64_t launches = 0;
  for (int iteration = 0; iteration < o.iterations; ++iteration) {
    FS_RETURN_IF_ERROR(gpu::runProgram(bundle, runner, &g_interrupted, &launches));
  }
  FS_CUDA_CHECK(cu.cuCtxSynchronize());
  if (!bundle.program.empty()) {
    std::fprintf(stderr, "fusionscope-gpurun: %lld launches (loops and branches)\n", static_cast<long long>(launches));
  }

  std::string outDir = o.out.empty() ? (fs::path(bundle.directory) / "outputs").string() : o.out;
  std::error_code error;
  fs::create_directories(outDir, error);
  for (const gpu::BundleValue& output : bundle.outputs) {
    std::string bytes(static_cast<size_t>(output.elements() * gpu::dtypeBytes(output.dtype)), '\0');
    FS_CUDA_CHECK(cu.cuMemcpyDtoH(bytes.data(), d.buffers.at(output.buffer), bytes.size()));
    StatusOr<std::string> npy = gpu::encodeNpy(output.dtype, output.dims, bytes);
    if (!npy.ok()) return npy.status();
    std::string path = (fs::path(outDir) / (output.name + ".npy")).string();
    FS_RETURN_IF_ERROR(cupti::writeBytesAtomic(path, *npy));
  }
  if (o.collect) {
    StatusOr<Trace> trace = cupti::stopCollector();
    if (!trace.ok()) return trace.status();
    gpu::annotateKernelEvents(*trace, bundle);
    std::string path = o.trace.empty() ? (fs::path(bundle.directory) / "timeline.ctf.json").string() : o.trace;
    FS_RETURN_IF_ERROR(cupti::writeTraceFile(*trace, path));
    cupti::CollectorSummary summary = cupti::collectorSummary();
    std::fprintf(stderr, "fusionscope-gpurun: trace %s (%zu events, %lld records, %lld dropped)\n", path.c_str(),
                 trace->events.size(), static_cast<long long>(summary.records),
                 static_cast<long long>(summary.droppedRecords));
  }
  std::fprintf(stderr, "fusionscope-gpurun: outputs in %s\n", outDir.c_str());
  exitCode = kExitOk;
  return okStatus();
}

}  // namespace

static int runMain(int argc, char** argv) {
  Options options;
  std::string error;
  if (!parseArgs(argc, argv, options, error)) {
    std::fprintf(stderr, "fusionscope-gpurun: %s\n%s", error.c_str(), kUsage);
    return kExitBadInput;
  }
  StatusOr<gpu::Bundle> bundle = gpu::loadBundle(options.bundle);
  if (!bundle.ok()) {
    std::fprintf(stderr, "%s\n", bundle.message().c_str());
    return kExitBadInput;
  }
  // The host keeps a copy of every parameter and output: a bundle whose buffers exceed this machine's memory is
  // refused with the figures instead of aborting in an allocation.
  int64_t bundleBytes = 0;
  for (const gpu::BundleBuffer& buffer : bundle->buffers) bundleBytes += buffer.bytes;  // parseBundle bounds the sum
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long pageSize = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0 && bundleBytes > static_cast<int64_t>(pages) * pageSize / 2) {
    std::fprintf(stderr,
                 "%s/bundle.json: error: its buffers hold %lld bytes, more than half of this machine's memory (%lld "
                 "bytes); the runner keeps a host copy of each\n",
                 options.bundle.c_str(), static_cast<long long>(bundleBytes),
                 static_cast<long long>(pages) * static_cast<long long>(pageSize));
    return kExitFailed;
  }
  StatusOr<HostData> host = prepareHost(*bundle, options);
  if (!host.ok()) {
    std::fprintf(stderr, "%s\n", host.message().c_str());
    return kExitBadInput;
  }
  StatusOr<const cupti::DriverApi*> driver = cupti::loadDriver();
  if (!driver.ok()) {
    std::fprintf(stderr, "fusionscope-gpurun: %s\n", driver.message().c_str());
    return kExitNoCuda;
  }
  fillGeneratedInputs(*bundle, options, *host);
  int exitCode = kExitFailed;
  {
    Device device;
    device.api = *driver;
    Status ran = runBundle(*bundle, options, *host, device, exitCode);
    if (!ran.ok()) std::fprintf(stderr, "fusionscope-gpurun: %s\n", ran.message().c_str());
  }
  return exitCode;
}

int main(int argc, char** argv) {
  fusionscope::installOutOfMemoryReserve();
  try {
    return runMain(argc, argv);
  } catch (const std::bad_alloc&) {  // the bundle's sizes were checked against memory; this is the last line
    std::fputs("fusionscope-gpurun: out of memory\n", stderr);
    return kExitFailed;
  } catch (const std::length_error&) {
    std::fputs("fusionscope-gpurun: out of memory\n", stderr);
    return kExitFailed;
  }
}
