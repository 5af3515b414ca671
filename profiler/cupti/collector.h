#pragma once

// The CUPTI activity collector: enables CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER, SYNCHRONIZATION,
// OVERHEAD and MARKER (NVTX) records, hands CUPTI buffers from a pool in the buffer-requested callback, converts
// completed buffers as they arrive (ActivityConverter), and flushes everything on stop. Records CUPTI drops are
// counted and reported, never silent. One collector per process (CUPTI's callbacks are process-wide).
#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler::cupti {

struct CollectorSummary {
  int64_t records = 0;
  int64_t droppedRecords = 0;
  int64_t buffersCompleted = 0;
  int64_t buffersAllocated = 0;
};

// Starts collecting. Fails with the CUPTI call, file, line and message (e.g. no driver, or CUPTI cannot attach).
Status startCollector();
// Flushes every buffer, disables the activity kinds and returns the converted trace. Fails when not started.
StatusOr<Trace> stopCollector();
bool collectorRunning();
CollectorSummary collectorSummary();

// Flushes on process exit (atexit), or on SIGINT/SIGTERM where the program left them at their default action
// (signal_flush.h), and writes the trace to `path` if the collector is still running then, saying on stderr how many
// activity records were captured and dropped; used by the injection library, whose host program never calls stop.
void stopAndWriteAtExit(std::string path);

}  // namespace fusionscope::profiler::cupti
