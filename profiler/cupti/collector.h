#pragma once

// The CUPTI activity collector: enables CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER, SYNCHRONIZATION,
// OVERHEAD and MARKER (NVTX) records, hands CUPTI buffers from a pool in the buffer-requested callback, converts
// completed buffers as they arrive (ActivityConverter), and flushes everything on stop. Records CUPTI drops are
// counted and reported, never silent. One collector per process (CUPTI's callbacks are process-wide).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler::cupti {

struct CollectorSummary {
  int64_t records = 0;
  int64_t droppedRecords = 0;
  int64_t buffersCompleted = 0;
  int64_t buffersAllocated = 0;
};

// Which CUDA runtime and driver API calls get a record. Each record costs the calling thread CUPTI's time, so a
// launch-bound program runs slower the more calls are recorded (docs/PROFILER.md, "Collector overhead").
enum class ApiRecords {
  kFiltered,  // every call except the queries programs make around each launch (collector.cpp kQueryApis)
  kAll,       // every call
  kNone,      // none: kernels, copies, memsets, synchronisations and NVTX only; no ac2g flows (they start at calls)
};
// "filtered", "all" or "none" (the CLI's `trace --api` and the injection library's $FUSIONSCOPE_TRACE_API).
std::optional<ApiRecords> parseApiRecords(std::string_view text);
std::string_view apiRecordsName(ApiRecords records);

struct CollectorOptions {
  ApiRecords api = ApiRecords::kFiltered;
};

// Starts collecting. Fails with the CUPTI call, file, line and message (e.g. no driver, or CUPTI cannot attach).
Status startCollector(CollectorOptions options = {});
// Flushes every buffer, disables the activity kinds and returns the converted trace. Fails when not started.
StatusOr<Trace> stopCollector();
bool collectorRunning();
CollectorSummary collectorSummary();

// Flushes on process exit (atexit), or on SIGINT/SIGTERM where the program left them at their default action
// (signal_flush.h), and writes the trace to `path` if the collector is still running then, saying on stderr how many
// activity records were captured and dropped; used by the injection library, whose host program never calls stop.
void stopAndWriteAtExit(std::string path);

}  // namespace fusionscope::profiler::cupti
