// The CUPTI activity conversion without a GPU: real record structs from cupti_activity.h (CUDA 13: Kernel10,
// Memcpy6, Memset4, API, Synchronization2, Overhead3, Marker2), filled by hand and fed to ActivityConverter.
#include <cstring>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/cupti/activity_convert.h"
#include "profiler/cupti/collector.h"
#include "profiler/cupti/cuda_driver.h"
#include "profiler/trace/chrome_json_export.h"

namespace fusionscope::profiler::cupti {
namespace {

template <typename T>
T zeroed(CUpti_ActivityKind kind) {
  T record;
  std::memset(&record, 0, sizeof record);
  record.kind = kind;
  return record;
}

const TraceEvent* find(const Trace& trace, char phase, std::string_view name) {
  for (const TraceEvent& e : trace.events) {
    if (e.phase == phase && e.name == name) return &e;
  }
  return nullptr;
}

ConvertOptions options() {
  ConvertOptions o;
  o.clockOffsetNs = 1'000'000;
  o.processId = 4242;
  o.callbackName = [](CUpti_CallbackDomain domain, uint32_t cbid) -> std::string {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211) return "cudaLaunchKernel";
    return {};
  };
  return o;
}

TEST(CuptiConvertTest, KernelLaunchBecomesKernelApiCallAndFlow) {
  ActivityConverter converter(options());
  auto api = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = 211;
  api.start = 100;
  api.end = 150;
  api.processId = 4242;
  api.threadId = 7;
  api.correlationId = 55;
  auto kernel = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::string name = "fusion_3";
  kernel.name = name.c_str();
  kernel.start = 200;
  kernel.end = 1200;
  kernel.deviceId = 0;
  kernel.streamId = 13;
  kernel.correlationId = 55;
  kernel.gridX = 98;
  kernel.gridY = kernel.gridZ = 1;
  kernel.blockX = 256;
  kernel.blockY = kernel.blockZ = 1;
  kernel.registersPerThread = 32;
  kernel.staticSharedMemory = 1024;
  kernel.dynamicSharedMemory = 256;
  // GPU records usually arrive before the API record that launched them; the flow must still be found.
  converter.add(reinterpret_cast<CUpti_Activity*>(&kernel));
  converter.add(reinterpret_cast<CUpti_Activity*>(&api));
  name = "overwritten";  // the converter copied the name out of the (reusable) buffer
  Trace trace = converter.finish();

  const TraceEvent* k = find(trace, 'X', "fusion_3");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->cat, "kernel");
  EXPECT_EQ(k->pid, TrackId::fromNumber(0));
  EXPECT_EQ(k->tid, TrackId::fromNumber(13));
  EXPECT_EQ(k->tsNs, 1'000'200);
  EXPECT_EQ(k->durNs, 1000);
  nlohmann::json args = nlohmann::json::parse(k->args);
  EXPECT_EQ(args["correlation"], 55);
  EXPECT_EQ(args["grid"], nlohmann::json({98, 1, 1}));
  EXPECT_EQ(args["block"], nlohmann::json({256, 1, 1}));
  EXPECT_EQ(args["registers per thread"], 32);
  EXPECT_EQ(args["shared memory"], 1280);

  const TraceEvent* launch = find(trace, 'X', "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->cat, "cuda_runtime");
  EXPECT_EQ(launch->pid, TrackId::fromNumber(4242));
  EXPECT_EQ(launch->tid, TrackId::fromNumber(7));
  EXPECT_EQ(launch->tsNs, 1'000'100);

  const TraceEvent* start = find(trace, 's', "ac2g");
  const TraceEvent* end = find(trace, 'f', "ac2g");
  ASSERT_NE(start, nullptr);
  ASSERT_NE(end, nullptr);
  EXPECT_EQ(start->id, "55");
  EXPECT_EQ(end->id, "55");
  EXPECT_EQ(end->bp, "e");
  EXPECT_EQ(start->tsNs, launch->tsNs);
  EXPECT_EQ(end->tsNs, k->tsNs);
  EXPECT_EQ(end->tid, k->tid);
  EXPECT_EQ(converter.stats().flows, 1);
  EXPECT_EQ(trace.processes.at(TrackId::fromNumber(0)).name, "GPU 0");
  EXPECT_EQ(trace.threads.at({TrackId::fromNumber(0), TrackId::fromNumber(13)}).name, "stream 13");
  // Events come out in time order.
  for (size_t i = 1; i < trace.events.size(); ++i) EXPECT_LE(trace.events[i - 1].tsNs, trace.events[i].tsNs);
}

// The GPU runner launches through the driver API (cuLaunchKernel), with no runtime call: the flow must start at the
// driver call. When a runtime call and the driver call it makes share a correlation id, the flow starts at the
// runtime call, whatever order the records arrive in.
TEST(CuptiConvertTest, DriverLaunchesGetFlowsAndRuntimeCallsWinOverTheirDriverCalls) {
  ConvertOptions o = options();
  o.callbackName = [](CUpti_CallbackDomain domain, uint32_t cbid) -> std::string {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 307) return "cuLaunchKernel";
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211) return "cudaLaunchKernel";
    return {};
  };
  ActivityConverter converter(o);
  auto api = [](CUpti_ActivityKind kind, uint32_t cbid, uint64_t start, uint32_t correlation) {
    auto record = zeroed<CUpti_ActivityAPI>(kind);
    record.cbid = cbid;
    record.start = start;
    record.end = start + 5;
    record.processId = 4242;
    record.threadId = 9;
    record.correlationId = correlation;
    return record;
  };
  auto kernel = [](const char* name, uint64_t start, uint32_t correlation) {
    auto record = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    record.name = name;
    record.start = start;
    record.end = start + 50;
    record.streamId = 7;
    record.correlationId = correlation;
    return record;
  };
  auto driverOnly = api(CUPTI_ACTIVITY_KIND_DRIVER, 307, 10, 1);
  auto driverUnderRuntime = api(CUPTI_ACTIVITY_KIND_DRIVER, 307, 32, 2);
  auto runtime = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 30, 2);
  auto first = kernel("fusion_1", 100, 1);
  auto second = kernel("fusion_2", 200, 2);
  auto unknownCbid = api(CUPTI_ACTIVITY_KIND_DRIVER, 9999, 300, 3);
  for (CUpti_Activity* record :
       {reinterpret_cast<CUpti_Activity*>(&first), reinterpret_cast<CUpti_Activity*>(&driverOnly),
        reinterpret_cast<CUpti_Activity*>(&driverUnderRuntime), reinterpret_cast<CUpti_Activity*>(&second),
        reinterpret_cast<CUpti_Activity*>(&runtime), reinterpret_cast<CUpti_Activity*>(&unknownCbid)}) {
    converter.add(record);
  }
  Trace trace = converter.finish();
  EXPECT_EQ(converter.stats().records.at("driver"), 3);
  EXPECT_EQ(converter.stats().records.at("runtime"), 1);
  EXPECT_EQ(converter.stats().flows, 2);
  const TraceEvent* launch = find(trace, 'X', "cuLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->cat, "cuda_driver");
  EXPECT_EQ(launch->tsNs, 1'000'010);
  EXPECT_NE(find(trace, 'X', "cuDriver#9999"), nullptr);  // a name CUPTI does not know is still shown
  std::map<std::string, int64_t> flowStart;               // flow id -> start time
  std::map<std::string, int64_t> flowEnd;
  for (const TraceEvent& e : trace.events) {
    if (e.phase == 's') flowStart[std::string(e.id)] = e.tsNs;
    if (e.phase == 'f') flowEnd[std::string(e.id)] = e.tsNs;
  }
  EXPECT_EQ(flowStart.at("1"), 1'000'010);  // the driver call
  EXPECT_EQ(flowEnd.at("1"), 1'000'100);
  EXPECT_EQ(flowStart.at("2"), 1'000'030);  // the runtime call, not the driver call inside it (32)
  EXPECT_EQ(flowEnd.at("2"), 1'000'200);
  EXPECT_EQ(flowStart.count("3"), 0u);  // no GPU work carries correlation 3
}

TEST(CuptiConvertTest, CopiesAndMemsetsCarryBytesAndBandwidth) {
  ActivityConverter converter(options());
  auto copy = zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 4000;
  copy.start = 0;
  copy.end = 2000;
  copy.streamId = 7;
  auto set = zeroed<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  set.bytes = 100;
  set.start = 3000;
  set.end = 3100;
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  converter.add(reinterpret_cast<CUpti_Activity*>(&copy));
  converter.add(reinterpret_cast<CUpti_Activity*>(&set));
  Trace trace = converter.finish();
  const TraceEvent* c = find(trace, 'X', "Memcpy HtoD (Pageable -> Device)");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cat, "gpu_memcpy");
  nlohmann::json args = nlohmann::json::parse(c->args);
  EXPECT_EQ(args["bytes"], 4000);
  EXPECT_DOUBLE_EQ(args["memory bandwidth (GB/s)"].get<double>(), 2.0);
  const TraceEvent* s = find(trace, 'X', "Memset (Device)");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->cat, "gpu_memset");
  EXPECT_EQ(nlohmann::json::parse(s->args)["bytes"], 100);
  EXPECT_EQ(find(trace, 's', "ac2g"), nullptr);  // no API records, no flows
}

TEST(CuptiConvertTest, NvtxRangesSyncOverheadAndUnknownKinds) {
  ActivityConverter converter(options());
  auto start = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  start.id = 9;
  start.timestamp = 10;
  start.name = "train_step";
  start.domain = "app";
  start.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  start.objectId.pt.processId = 4242;
  start.objectId.pt.threadId = 7;
  auto end = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  end.id = 9;
  end.timestamp = 510;
  auto instant = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  instant.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
  instant.name = "checkpoint";
  instant.timestamp = 600;
  auto orphanEnd = zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  orphanEnd.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  orphanEnd.id = 77;
  auto sync = zeroed<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = 700;
  sync.end = 900;
  sync.correlationId = 3;
  sync.streamId = 13;
  auto syncApi = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  syncApi.cbid = 1;
  syncApi.correlationId = 3;
  syncApi.processId = 4242;
  syncApi.threadId = 8;
  syncApi.start = 690;
  syncApi.end = 910;
  auto overhead = zeroed<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  overhead.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  overhead.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  overhead.objectId.pt.processId = 4242;
  overhead.objectId.pt.threadId = 7;
  overhead.start = 1000;
  overhead.end = 1100;
  auto unknown = zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  for (CUpti_Activity* r :
       {reinterpret_cast<CUpti_Activity*>(&start), reinterpret_cast<CUpti_Activity*>(&end),
        reinterpret_cast<CUpti_Activity*>(&instant), reinterpret_cast<CUpti_Activity*>(&orphanEnd),
        reinterpret_cast<CUpti_Activity*>(&sync), reinterpret_cast<CUpti_Activity*>(&syncApi),
        reinterpret_cast<CUpti_Activity*>(&overhead), reinterpret_cast<CUpti_Activity*>(&unknown)}) {
    converter.add(r);
  }
  converter.stats().droppedRecords = 5;
  Trace trace = converter.finish();

  const TraceEvent* range = find(trace, 'X', "train_step");
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->cat, "nvtx");
  EXPECT_EQ(range->durNs, 500);
  EXPECT_EQ(range->tid, TrackId::fromNumber(7));
  EXPECT_EQ(range->args, R"({"domain":"app"})");
  const TraceEvent* mark = find(trace, 'i', "checkpoint");
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ(mark->extra, R"("s":"t")");
  const TraceEvent* s = find(trace, 'X', "cudaStreamSynchronize");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->cat, "cuda_sync");
  EXPECT_EQ(s->tid, TrackId::fromNumber(8));  // moved onto its API call's thread
  EXPECT_EQ(s->durNs, 200);
  const TraceEvent* o = find(trace, 'X', "CUPTI buffer flush");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->cat, "overhead");
  EXPECT_NE(find(trace, 'X', "cudaRuntime#1"), nullptr);  // no name from the callback: the cbid is kept

  EXPECT_EQ(converter.stats().unknownRecords, 1);
  EXPECT_EQ(converter.stats().unmatchedMarkers, 1);
  ASSERT_FALSE(trace.otherKeys.empty());
  nlohmann::json summary = nlohmann::json::parse(trace.otherKeys.back().second);
  EXPECT_EQ(trace.otherKeys.back().first, "fusionscope_cupti");
  EXPECT_EQ(summary["dropped_records"], 5);
  EXPECT_EQ(summary["unknown_records"], 1);
  EXPECT_EQ(summary["records"]["marker"], 4);
  EXPECT_TRUE(nlohmann::json::accept(chromeTraceJson(trace)));
}

// `trace --api` / $FUSIONSCOPE_TRACE_API: each level by name and back, anything else refused; the level the
// collector used is in the trace's summary, and absent when the converter was not told one.
TEST(CuptiConvertTest, ApiRecordLevelsByNameAndInTheSummary) {
  for (std::string_view name : {"filtered", "all", "none"}) {
    std::optional<ApiRecords> records = parseApiRecords(name);
    ASSERT_TRUE(records.has_value()) << name;
    EXPECT_EQ(apiRecordsName(*records), name);
  }
  EXPECT_EQ(parseApiRecords("some"), std::nullopt);
  EXPECT_EQ(parseApiRecords(""), std::nullopt);
  EXPECT_EQ(CollectorOptions().api, ApiRecords::kFiltered);

  ConvertOptions o = options();
  o.apiRecords = "none";
  nlohmann::json summary = nlohmann::json::parse(ActivityConverter(o).finish().otherKeys.back().second);
  EXPECT_EQ(summary["api_records"], "none");
  nlohmann::json unnamed = nlohmann::json::parse(ActivityConverter(options()).finish().otherKeys.back().second);
  EXPECT_FALSE(unnamed.contains("api_records"));
}

TEST(CuptiConvertTest, DriverIsDlopenedAndItsAbsenceIsReported) {
  StatusOr<const DriverApi*> driver = loadDriver();
  if (driverLibraryPresent()) {
    EXPECT_TRUE(driver.ok()) << driver.message();
  } else {
    ASSERT_FALSE(driver.ok());
    EXPECT_EQ(driver.message(), kNoDriverMessage);
  }
}

}  // namespace
}  // namespace fusionscope::profiler::cupti
