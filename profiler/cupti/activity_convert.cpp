#include "profiler/cupti/activity_convert.h"

#include <algorithm>
#include <string>

#include "profiler/trace/json_text.h"

namespace fusionscope::profiler::cupti {
namespace {

void appendUnsigned(std::string& out, uint64_t value) {
  out += std::to_string(value);
}

// "memory bandwidth (GB/s)" as Kineto writes it for copies and memsets: bytes per ns.
void appendBandwidth(std::string& out, uint64_t bytes, uint64_t start, uint64_t end) {
  out += ",\"memory bandwidth (GB/s)\":";
  if (end > start) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", static_cast<double>(bytes) / static_cast<double>(end - start));
    out += buffer;
  } else {
    out += '0';
  }
}

const char* syncName(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "cudaEventSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "cudaStreamWaitEvent";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "cudaStreamSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "cudaDeviceSynchronize";
    default: return "Synchronization";
  }
}

const char* overheadName(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Runtime triggered module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity buffer request";
    default: return "Overhead";
  }
}

}  // namespace

const char* memcpyKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

const char* memoryKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
    default: return "Unknown";
  }
}

ActivityConverter::ActivityConverter(ConvertOptions options) : m_options(std::move(options)) {}

int64_t ActivityConverter::traceTime(uint64_t cuptiNs) const {
  return static_cast<int64_t>(cuptiNs) + m_options.clockOffsetNs;
}

void ActivityConverter::add(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      addKernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      ++m_stats.records["kernel"];
      return;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      addMemcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
      ++m_stats.records["memcpy"];
      return;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      addMemset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
      ++m_stats.records["memset"];
      return;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      addApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), true);
      ++m_stats.records["runtime"];
      return;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      addApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), false);
      ++m_stats.records["driver"];
      return;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      addSync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
      ++m_stats.records["synchronization"];
      return;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      addOverhead(*reinterpret_cast<const CUpti_ActivityOverhead3*>(record));
      ++m_stats.records["overhead"];
      return;
    case CUPTI_ACTIVITY_KIND_MARKER:
      addMarker(*reinterpret_cast<const CUpti_ActivityMarker2*>(record));
      ++m_stats.records["marker"];
      return;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:
      ++m_stats.records["marker_data"];  // colours and categories only; the marker itself carries name and time
      return;
    default: ++m_stats.unknownRecords; return;
  }
}

TraceEvent& ActivityConverter::device(std::string_view name, std::string_view cat, uint32_t deviceId, uint32_t streamId,
                                      uint64_t start, uint64_t end, uint32_t correlation) {
  TraceEvent event;
  event.phase = 'X';
  event.name = m_trace.copyText(name);
  event.cat = cat;
  event.pid = TrackId::fromNumber(deviceId);
  event.tid = TrackId::fromNumber(streamId);
  event.tsNs = traceTime(start);
  event.durNs = end > start ? static_cast<int64_t>(end - start) : 0;
  m_devices[deviceId] = true;
  m_streams[{deviceId, streamId}] = true;
  m_deviceWork.emplace_back(m_trace.events.size(), correlation);
  m_trace.events.push_back(event);
  return m_trace.events.back();
}

void ActivityConverter::addKernel(const CUpti_ActivityKernel10& k) {
  TraceEvent& event =
      device(k.name ? k.name : "<unnamed kernel>", "kernel", k.deviceId, k.streamId, k.start, k.end, k.correlationId);
  std::string args = "{\"queued\":";
  appendUnsigned(args, k.queued);
  args += ",\"device\":";
  appendUnsigned(args, k.deviceId);
  args += ",\"context\":";
  appendUnsigned(args, k.contextId);
  args += ",\"stream\":";
  appendUnsigned(args, k.streamId);
  args += ",\"correlation\":";
  appendUnsigned(args, k.correlationId);
  args += ",\"registers per thread\":";
  appendUnsigned(args, k.registersPerThread);
  args += ",\"shared memory\":";
  args += std::to_string(static_cast<int64_t>(k.staticSharedMemory) + k.dynamicSharedMemory);
  args += ",\"grid\":[" + std::to_string(k.gridX) + "," + std::to_string(k.gridY) + "," + std::to_string(k.gridZ) + "]";
  args += ",\"block\":[" + std::to_string(k.blockX) + "," + std::to_string(k.blockY) + "," + std::to_string(k.blockZ) +
          "]}";
  event.args = m_trace.copyText(args);
}

void ActivityConverter::addMemcpy(const CUpti_ActivityMemcpy6& c) {
  std::string name = std::string("Memcpy ") + memcpyKindName(c.copyKind) + " (" + memoryKindName(c.srcKind) + " -> " +
                     memoryKindName(c.dstKind) + ")";
  TraceEvent& event = device(name, "gpu_memcpy", c.deviceId, c.streamId, c.start, c.end, c.correlationId);
  std::string args = "{\"device\":";
  appendUnsigned(args, c.deviceId);
  args += ",\"context\":";
  appendUnsigned(args, c.contextId);
  args += ",\"stream\":";
  appendUnsigned(args, c.streamId);
  args += ",\"correlation\":";
  appendUnsigned(args, c.correlationId);
  args += ",\"bytes\":";
  appendUnsigned(args, c.bytes);
  appendBandwidth(args, c.bytes, c.start, c.end);
  args += '}';
  event.args = m_trace.copyText(args);
}

void ActivityConverter::addMemset(const CUpti_ActivityMemset4& s) {
  std::string name = std::string("Memset (") + memoryKindName(static_cast<uint8_t>(s.memoryKind)) + ")";
  TraceEvent& event = device(name, "gpu_memset", s.deviceId, s.streamId, s.start, s.end, s.correlationId);
  std::string args = "{\"device\":";
  appendUnsigned(args, s.deviceId);
  args += ",\"context\":";
  appendUnsigned(args, s.contextId);
  args += ",\"stream\":";
  appendUnsigned(args, s.streamId);
  args += ",\"correlation\":";
  appendUnsigned(args, s.correlationId);
  args += ",\"bytes\":";
  appendUnsigned(args, s.bytes);
  appendBandwidth(args, s.bytes, s.start, s.end);
  args += '}';
  event.args = m_trace.copyText(args);
}

void ActivityConverter::addApi(const CUpti_ActivityAPI& api, bool runtime) {
  CUpti_CallbackDomain domain = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  std::string name;
  if (m_options.callbackName) name = m_options.callbackName(domain, api.cbid);
  if (name.empty()) name = std::string(runtime ? "cudaRuntime#" : "cuDriver#") + std::to_string(api.cbid);
  TraceEvent event;
  event.phase = 'X';
  event.name = m_trace.copyText(name);
  event.cat = runtime ? "cuda_runtime" : "cuda_driver";
  event.pid = TrackId::fromNumber(api.processId);
  event.tid = TrackId::fromNumber(api.threadId);
  event.tsNs = traceTime(api.start);
  event.durNs = api.end > api.start ? static_cast<int64_t>(api.end - api.start) : 0;
  std::string args = "{\"cbid\":" + std::to_string(api.cbid) + ",\"correlation\":" + std::to_string(api.correlationId);
  if (api.returnValue != 0) args += ",\"return\":" + std::to_string(api.returnValue);
  args += '}';
  event.args = m_trace.copyText(args);
  m_threads[api.threadId] = true;
  // A runtime call and the driver call it makes share the correlation id; the runtime call is what users wrote.
  auto [it, inserted] =
      m_apiByCorrelation.try_emplace(api.correlationId, ApiCall{event.tsNs, api.processId, api.threadId});
  if (!inserted && runtime) it->second = ApiCall{event.tsNs, api.processId, api.threadId};
  m_trace.events.push_back(event);
}

void ActivityConverter::addSync(const CUpti_ActivitySynchronization2& s) {
  TraceEvent event;
  event.phase = 'X';
  event.name = syncName(s.type);
  event.cat = "cuda_sync";
  event.pid = TrackId::fromNumber(m_options.processId);
  event.tid = TrackId::fromNumber(0);  // the API call's thread, once known (finish)
  event.tsNs = traceTime(s.start);
  event.durNs = s.end > s.start ? static_cast<int64_t>(s.end - s.start) : 0;
  std::string args =
      "{\"context\":" + std::to_string(s.contextId) + ",\"correlation\":" + std::to_string(s.correlationId);
  if (s.streamId != static_cast<uint32_t>(-1)) args += ",\"stream\":" + std::to_string(s.streamId);
  args += '}';
  event.args = m_trace.copyText(args);
  m_syncs.emplace_back(m_trace.events.size(), s.correlationId);
  m_trace.events.push_back(event);
}

void ActivityConverter::addOverhead(const CUpti_ActivityOverhead3& o) {
  TraceEvent event;
  event.phase = 'X';
  event.name = overheadName(o.overheadKind);
  event.cat = "overhead";
  bool thread = o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS;
  event.pid = TrackId::fromNumber(thread ? o.objectId.pt.processId : m_options.processId);
  event.tid = TrackId::fromNumber(o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o.objectId.pt.threadId : 0);
  event.tsNs = traceTime(o.start);
  event.durNs = o.end > o.start ? static_cast<int64_t>(o.end - o.start) : 0;
  m_trace.events.push_back(event);
}

void ActivityConverter::addMarker(const CUpti_ActivityMarker2& m) {
  int64_t processId = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
                          ? m.objectId.pt.processId
                          : m_options.processId;
  int64_t threadId = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m.objectId.pt.threadId : 0;
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    m_openMarkers[m.id] = OpenMarker{traceTime(m.timestamp), m_trace.copyText(m.name ? m.name : ""),
                                     m_trace.copyText(m.domain ? m.domain : ""), processId, threadId};
    return;
  }
  TraceEvent event;
  event.cat = "nvtx";
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto open = m_openMarkers.find(m.id);
    if (open == m_openMarkers.end()) {
      ++m_stats.unmatchedMarkers;
      return;
    }
    event.phase = 'X';
    event.name = open->second.name;
    event.pid = TrackId::fromNumber(open->second.processId);
    event.tid = TrackId::fromNumber(open->second.threadId);
    event.tsNs = open->second.startNs;
    event.durNs = std::max<int64_t>(0, traceTime(m.timestamp) - open->second.startNs);
    if (!open->second.domain.empty()) {
      std::string args = "{\"domain\":";
      appendJsonString(args, open->second.domain);
      args += '}';
      event.args = m_trace.copyText(args);
    }
    m_openMarkers.erase(open);
  } else {
    event.phase = 'i';
    event.name = m_trace.copyText(m.name ? m.name : "");
    event.pid = TrackId::fromNumber(processId);
    event.tid = TrackId::fromNumber(threadId);
    event.tsNs = traceTime(m.timestamp);
    event.extra = "\"s\":\"t\"";
  }
  m_threads[static_cast<uint32_t>(threadId)] = true;
  m_trace.events.push_back(event);
}

Trace ActivityConverter::finish() {
  m_stats.unmatchedMarkers += static_cast<int64_t>(m_openMarkers.size());
  m_openMarkers.clear();
  for (const auto& [index, correlation] : m_syncs) {
    auto api = m_apiByCorrelation.find(correlation);
    if (api == m_apiByCorrelation.end()) continue;
    m_trace.events[index].pid = TrackId::fromNumber(api->second.processId);
    m_trace.events[index].tid = TrackId::fromNumber(api->second.threadId);
  }
  // ac2g flows, as Kineto writes them: "s" at the launching API call, "f" with bp "e" inside the GPU work.
  std::vector<TraceEvent> flows;
  for (const auto& [index, correlation] : m_deviceWork) {
    auto api = m_apiByCorrelation.find(correlation);
    if (api == m_apiByCorrelation.end() || correlation == 0) continue;
    std::string_view id = m_trace.copyText(std::to_string(correlation));
    TraceEvent start;
    start.phase = 's';
    start.name = "ac2g";
    start.cat = "ac2g";
    start.id = id;
    start.idIsNumber = true;
    start.pid = TrackId::fromNumber(api->second.processId);
    start.tid = TrackId::fromNumber(api->second.threadId);
    start.tsNs = api->second.startNs;
    TraceEvent end = start;
    end.phase = 'f';
    end.bp = "e";
    end.pid = m_trace.events[index].pid;
    end.tid = m_trace.events[index].tid;
    end.tsNs = m_trace.events[index].tsNs;
    flows.push_back(start);
    flows.push_back(end);
    ++m_stats.flows;
  }
  m_trace.events.insert(m_trace.events.end(), flows.begin(), flows.end());
  std::stable_sort(m_trace.events.begin(), m_trace.events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.tsNs < b.tsNs; });

  for (const auto& [deviceId, unused] : m_devices) {
    ProcessInfo& info = m_trace.processes[TrackId::fromNumber(deviceId)];
    info.name = "GPU " + std::to_string(deviceId);
    info.sortIndex = 1000 + deviceId;
  }
  for (const auto& [key, unused] : m_streams) {
    m_trace.threads[{TrackId::fromNumber(key.first), TrackId::fromNumber(key.second)}].name =
        "stream " + std::to_string(key.second);
  }
  if (!m_threads.empty()) {
    m_trace.processes[TrackId::fromNumber(m_options.processId)].name =
        "host process " + std::to_string(m_options.processId);
  }

  std::string summary = "{\"records\":{";
  bool first = true;
  for (const auto& [kind, count] : m_stats.records) {
    if (!first) summary += ',';
    first = false;
    appendJsonString(summary, kind);
    summary += ':' + std::to_string(count);
  }
  summary += "},\"unknown_records\":" + std::to_string(m_stats.unknownRecords) +
             ",\"dropped_records\":" + std::to_string(m_stats.droppedRecords) +
             ",\"unmatched_markers\":" + std::to_string(m_stats.unmatchedMarkers) + ",\"flows\":";
  summary += std::to_string(m_stats.flows);  // appended, not `literal + string`: GCC 12's -O3 -Wrestrict false alarm
  if (!m_options.apiRecords.empty()) {
    summary += ",\"api_records\":";
    appendJsonString(summary, m_options.apiRecords);
  }
  summary += "}";
  m_trace.otherKeys.emplace_back("fusionscope_cupti", summary);
  m_trace.displayTimeUnit = "ns";
  return std::move(m_trace);
}

}  // namespace fusionscope::profiler::cupti
