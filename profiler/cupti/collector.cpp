#include "profiler/cupti/collector.h"

#include <cupti.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler/cupti/activity_convert.h"
#include "profiler/cupti/cuda_check.h"
#include "profiler/cupti/signal_flush.h"
#include "profiler/cupti/trace_file.h"

namespace fusionscope::profiler::cupti {
namespace {

constexpr size_t kBufferSize = size_t{8} << 20;  // CUPTI's recommended range is 1-10 MB

const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,          CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA,
};

struct State {
  std::mutex mutex;
  std::vector<std::unique_ptr<uint8_t[]>> pool;  // free buffers, reused across requests
  std::optional<ActivityConverter> converter;
  CollectorSummary summary;
  std::vector<CUpti_ActivityKind> enabled;
  bool running = false;
  std::string atExitPath;
};

State& state() {
  static State* s = new State();  // never destroyed: CUPTI may call back during exit
  return *s;
}

std::string callbackName(CUpti_CallbackDomain domain, uint32_t cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) return {};
  std::string text(name);
  // cuptiGetCallbackName returns versioned names ("cudaLaunchKernel_v7000"); Kineto shows the plain API name.
  if (size_t v = text.rfind("_v"); v != std::string::npos && v + 2 < text.size() &&
                                   text.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    text.erase(v);
  }
  return text;
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::unique_ptr<uint8_t[]> block;
  if (!s.pool.empty()) {
    block = std::move(s.pool.back());
    s.pool.pop_back();
  } else {
    block.reset(new uint8_t[kBufferSize]);  // operator new aligns to 16 bytes; CUPTI needs 8
    ++s.summary.buffersAllocated;
  }
  *buffer = block.release();
  *size = kBufferSize;
  *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t streamId, uint8_t* buffer, size_t, size_t validSize) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    if (s.converter) s.converter->add(record);
    ++s.summary.records;
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, streamId, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    s.summary.droppedRecords += static_cast<int64_t>(dropped);
    if (s.converter) s.converter->stats().droppedRecords += static_cast<int64_t>(dropped);
    std::fprintf(stderr, "fusionscope: CUPTI dropped %zu activity records (buffers full)\n", dropped);
  }
  ++s.summary.buffersCompleted;
  s.pool.emplace_back(buffer);
}

// Offset from CUPTI's clock to the trace clock (system_clock ns since the epoch, as Kineto): the mid-point of two
// system-clock reads around one cuptiGetTimestamp.
StatusOr<int64_t> clockOffset() {
  auto now = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  int64_t before = now();
  uint64_t cuptiNs = 0;
  Status status = [&]() -> Status {
    FS_CUDA_CHECK(cuptiGetTimestamp(&cuptiNs));
    return okStatus();
  }();
  if (!status.ok()) return status;
  int64_t after = now();
  return before + (after - before) / 2 - static_cast<int64_t>(cuptiNs);
}

// API calls that only ask (or set what is already set) and that programs make around every launch: PyTorch calls
// cudaGetDevice three times and cudaGetLastError, cuDevicePrimaryCtxGetState and cuKernelGetName once per kernel,
// JAX cuCtxSetCurrent and cuGetProcAddress. Each record costs the calling thread CUPTI's time (measured on an H100:
// ~0.8 us a record, so +56 % on a launch-bound PyTorch loop with every call recorded); ApiRecords::kFiltered leaves
// them out. Names without CUPTI's version suffix.
const char* const kQueryApis[] = {
    // runtime
    "cudaGetDevice", "cudaGetDeviceCount", "cudaGetLastError", "cudaPeekAtLastError", "cudaDeviceGetAttribute",
    "cudaGetDeviceProperties", "cudaPointerGetAttributes", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo",
    "cudaFuncGetAttributes", "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPointByVersion", "cudaGetFuncBySymbol", "cudaStreamQuery", "cudaEventQuery",
    "cudaDeviceGetStreamPriorityRange", "cudaStreamGetPriority", "cudaStreamGetFlags", "cudaStreamGetId",
    "cudaThreadExchangeStreamCaptureMode", "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cudaOccupancyMaxActiveClusters",
    "cudaOccupancyAvailableDynamicSMemPerBlock",
    // driver
    "cuDevicePrimaryCtxGetState", "cuKernelGetName", "cuFuncGetName", "cuCtxGetCurrent", "cuCtxSetCurrent",
    "cuCtxGetDevice", "cuCtxGetId", "cuCtxGetFlags", "cuCtxGetApiVersion", "cuCtxGetLimit",
    "cuCtxGetStreamPriorityRange", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetAttribute", "cuDeviceGetName",
    "cuDeviceGetUuid", "cuDeviceTotalMem", "cuDriverGetVersion", "cuGetProcAddress", "cuPointerGetAttribute",
    "cuPointerGetAttributes", "cuStreamGetCaptureInfo", "cuStreamIsCapturing", "cuStreamGetId", "cuStreamGetCtx",
    "cuStreamGetFlags", "cuStreamGetPriority", "cuStreamQuery", "cuEventQuery", "cuFuncGetAttribute",
    "cuKernelGetAttribute", "cuKernelGetFunction", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cuOccupancyMaxActiveClusters", "cuModuleGetLoadingMode"};

bool isQueryApi(const std::string& name) {
  for (const char* query : kQueryApis) {
    if (name == query) return true;
  }
  return false;
}

// Turns records off for the query calls of one domain, found by name (callback ids differ between CUDA versions).
Status disableQueryApis(CUpti_CallbackDomain domain, uint32_t size,
                        CUptiResult (*enableApi)(CUpti_CallbackId, uint8_t)) {
  for (uint32_t cbid = 1; cbid < size; ++cbid) {
    if (isQueryApi(callbackName(domain, cbid))) FS_CUDA_CHECK(enableApi(cbid, 0));
  }
  return okStatus();
}

Status enableAll(State& s, ApiRecords api) {
  FS_CUDA_CHECK(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));
  for (CUpti_ActivityKind kind : kKinds) {
    const bool isApi = kind == CUPTI_ACTIVITY_KIND_RUNTIME || kind == CUPTI_ACTIVITY_KIND_DRIVER;
    if (isApi && api == ApiRecords::kNone) continue;
    FS_CUDA_CHECK(cuptiActivityEnable(kind));
    s.enabled.push_back(kind);
  }
  // After the kinds: enabling RUNTIME or DRIVER resets per-call choices made before it.
  if (api == ApiRecords::kFiltered) {
    FS_RETURN_IF_ERROR(
        disableQueryApis(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, cuptiActivityEnableRuntimeApi));
    FS_RETURN_IF_ERROR(
        disableQueryApis(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, cuptiActivityEnableDriverApi));
  }
  return okStatus();
}

// Stops the collector and writes its trace once, whichever comes first: the program's exit or a signal (on the
// watcher thread of signal_flush.h). The mutex makes a late second caller wait until the file is complete.
void writeOnce(const char* why) {
  static std::mutex writeMutex;
  static bool written = false;
  std::lock_guard writeLock(writeMutex);
  State& s = state();
  std::string path;
  {
    std::lock_guard lock(s.mutex);
    if (written || !s.running || s.atExitPath.empty()) return;
    path = s.atExitPath;
  }
  written = true;
  StatusOr<Trace> trace = stopCollector();
  if (!trace.ok()) {
    std::fprintf(stderr, "fusionscope: %s\n", trace.message().c_str());
    return;
  }
  Status status = writeTraceFile(*trace, path);
  CollectorSummary summary = collectorSummary();
  if (!status.ok()) {
    std::fprintf(stderr, "fusionscope: %s\n", status.message().c_str());
  } else {
    std::fprintf(stderr, "fusionscope: %s: wrote %s (%zu events; %lld activity records captured, %lld dropped)\n", why,
                 path.c_str(), trace->events.size(), static_cast<long long>(summary.records),
                 static_cast<long long>(summary.droppedRecords));
  }
}

void atExitHandler() {
  writeOnce("at exit");
}

}  // namespace

constexpr std::pair<std::string_view, ApiRecords> kApiRecordNames[] = {
    {"filtered", ApiRecords::kFiltered}, {"all", ApiRecords::kAll}, {"none", ApiRecords::kNone}};

std::optional<ApiRecords> parseApiRecords(std::string_view text) {
  for (const auto& [name, records] : kApiRecordNames) {
    if (text == name) return records;
  }
  return std::nullopt;
}

std::string_view apiRecordsName(ApiRecords records) {
  for (const auto& [name, value] : kApiRecordNames) {
    if (value == records) return name;
  }
  return "filtered";
}

Status startCollector(CollectorOptions collectorOptions) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.running) return Status::error("the CUPTI collector is already running");
  StatusOr<int64_t> offset = clockOffset();
  if (!offset.ok()) return offset.status();
  ConvertOptions options;
  options.clockOffsetNs = *offset;
  options.processId = ::getpid();
  options.callbackName = callbackName;
  options.apiRecords = std::string(apiRecordsName(collectorOptions.api));
  s.converter.emplace(std::move(options));
  s.summary = CollectorSummary{};
  if (Status enabled = enableAll(s, collectorOptions.api); !enabled.ok()) {
    for (CUpti_ActivityKind kind : s.enabled) (void)cuptiActivityDisable(kind);
    s.enabled.clear();
    s.converter.reset();
    return enabled;
  }
  s.running = true;
  return okStatus();
}

StatusOr<Trace> stopCollector() {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (!s.running) return Status::error("the CUPTI collector is not running");
  }
  // Flush outside the lock: CUPTI calls bufferCompleted from this thread during the flush.
  Status flushed = [&]() -> Status {
    FS_CUDA_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    return okStatus();
  }();
  std::lock_guard lock(s.mutex);
  for (CUpti_ActivityKind kind : s.enabled) (void)cuptiActivityDisable(kind);
  s.enabled.clear();
  s.running = false;
  if (!flushed.ok()) {
    s.converter.reset();
    return flushed;
  }
  Trace trace = s.converter->finish();
  s.converter.reset();
  return trace;
}

bool collectorRunning() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.running;
}

CollectorSummary collectorSummary() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.summary;
}

void stopAndWriteAtExit(std::string path) {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    s.atExitPath = std::move(path);
  }
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit(atExitHandler);
    installSignalFlush(
        [](int signal) { writeOnce(signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)"); });
  }
}

}  // namespace fusionscope::profiler::cupti
