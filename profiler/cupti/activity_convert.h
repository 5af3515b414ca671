#pragma once

// Conversion of CUPTI activity records into trace events: a pure function of the records (no CUPTI or driver call),
// so it is tested without a GPU by feeding it the real structs from cupti_activity.h filled in by hand.
#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler::cupti {

struct ConvertOptions {
  // trace time = CUPTI timestamp + clockOffsetNs. CUPTI stamps GPU and API records with its own clock
  // (cuptiGetTimestamp); the collector measures the offset to the trace clock (system_clock, as Kineto) at start.
  int64_t clockOffsetNs = 0;
  // The traced process: pid of the host tracks (API calls, NVTX, overhead, synchronisation).
  int64_t processId = 0;
  // Name of a runtime/driver API callback id; the collector passes cuptiGetCallbackName, tests a lambda. When
  // empty, names read "cudaRuntime#cbid" / "cuDriver#cbid".
  std::function<std::string(CUpti_CallbackDomain, uint32_t)> callbackName;
  // Which API calls the collector recorded ("filtered", "all", "none"), written into the summary; empty: omitted.
  std::string apiRecords;
};

// What the conversion saw, written into the trace's top level as "fusionscope_cupti".
struct ConvertStats {
  std::map<std::string, int64_t> records;  // by kind ("kernel", "memcpy", ...)
  int64_t unknownRecords = 0;              // kinds the converter does not handle (counted, never silent)
  int64_t droppedRecords = 0;              // reported by CUPTI (set by the collector)
  int64_t unmatchedMarkers = 0;            // NVTX range starts without an end, or ends without a start
  int64_t flows = 0;                       // ac2g pairs emitted
};

class ActivityConverter {
 public:
  explicit ActivityConverter(ConvertOptions options);

  // Adds one record; the record's strings (kernel and marker names) are copied, so the buffer can be reused.
  void add(const CUpti_Activity* record);
  // Ends the conversion: pairs API calls with the GPU work they launched (correlation id -> "ac2g" flow s/f, as
  // Kineto writes them), puts synchronisation records on the thread of their API call, names the processes and
  // threads, sorts events by time and returns the trace.
  Trace finish();

  ConvertStats& stats() { return m_stats; }
  const ConvertStats& stats() const { return m_stats; }

 private:
  int64_t traceTime(uint64_t cuptiNs) const;
  void addKernel(const CUpti_ActivityKernel10& kernel);
  void addMemcpy(const CUpti_ActivityMemcpy6& copy);
  void addMemset(const CUpti_ActivityMemset4& set);
  void addApi(const CUpti_ActivityAPI& api, bool runtime);
  void addSync(const CUpti_ActivitySynchronization2& sync);
  void addOverhead(const CUpti_ActivityOverhead3& overhead);
  void addMarker(const CUpti_ActivityMarker2& marker);
  TraceEvent& device(std::string_view name, std::string_view cat, uint32_t deviceId, uint32_t streamId, uint64_t start,
                     uint64_t end, uint32_t correlation);

  struct ApiCall {
    int64_t startNs = 0;
    uint32_t processId = 0;
    uint32_t threadId = 0;
  };
  struct OpenMarker {
    int64_t startNs = 0;
    std::string_view name;
    std::string_view domain;
    int64_t processId = 0;
    int64_t threadId = 0;
  };

  ConvertOptions m_options;
  ConvertStats m_stats;
  Trace m_trace;
  std::map<uint32_t, ApiCall> m_apiByCorrelation;
  std::vector<std::pair<size_t, uint32_t>> m_deviceWork;  // (event index, correlation id)
  std::vector<std::pair<size_t, uint32_t>> m_syncs;       // (event index, correlation id)
  std::map<uint32_t, OpenMarker> m_openMarkers;
  std::map<uint32_t, bool> m_devices;
  std::map<std::pair<uint32_t, uint32_t>, bool> m_streams;
  std::map<uint32_t, bool> m_threads;
};

// Kineto's names for memcpy kinds and memory kinds, e.g. "HtoD", "Pageable", "Device".
const char* memcpyKindName(uint8_t kind);
const char* memoryKindName(uint8_t kind);

}  // namespace fusionscope::profiler::cupti
