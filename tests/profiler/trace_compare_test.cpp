// Trace statistics and before/after comparison on small hand-made traces (numbers worked out by hand in the
// comments), plus the corpus traces.
#include "profiler/compare/trace_compare.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/compare/trace_stats.h"
#include "profiler/trace/chrome_json_import.h"
#include "tests/profiler/trace_testing.h"
#include "tests/common/source_paths.h"

namespace fusionscope::profiler {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus" / "traces";

using fusionscope::testing::importOrDie;

// Unfused run: four kernels on one stream (ts/dur in µs), a memcpy, and a CPU op that is not device work.
//   add.1 [0,10)  multiply.2 [12,20)  add.1 [25,35)  exponential.3 [35,40)  memcpy [50,54) on another stream
// Busy on stream 7: 10 + 8 + 10 + 5 = 33 µs of a 40 µs span -> idle 7. Gaps: 2, 5, 0. Memcpy stream: busy 4.
constexpr const char* kBefore = R"({"traceEvents":[
  {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":100},
  {"ph":"X","cat":"kernel","name":"add.1","pid":0,"tid":7,"ts":0,"dur":10,"args":{"bytes_read":800,"bytes_written":400}},
  {"ph":"X","cat":"kernel","name":"multiply.2","pid":0,"tid":7,"ts":12,"dur":8,"args":{"bytes_read":800,"bytes_written":400}},
  {"ph":"X","cat":"kernel","name":"add.1","pid":0,"tid":7,"ts":25,"dur":10,"args":{"bytes_read":800,"bytes_written":400}},
  {"ph":"X","cat":"kernel","name":"exponential.3","pid":0,"tid":7,"ts":35,"dur":5},
  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":8,"ts":50,"dur":4,"args":{"bytes":4096}}
]})";

// Fused run: fusion.1 replaces add.1 + multiply.2 (twice), exponential.3 unchanged.
constexpr const char* kAfter = R"({"traceEvents":[
  {"ph":"X","cat":"kernel","name":"fusion_1","pid":0,"tid":7,"ts":0,"dur":6,"args":{"bytes_read":800,"bytes_written":400}},
  {"ph":"X","cat":"kernel","name":"fusion_1","pid":0,"tid":7,"ts":10,"dur":6},
  {"ph":"X","cat":"kernel","name":"exponential.3","pid":0,"tid":7,"ts":16,"dur":4}
]})";

constexpr const char* kStages = R"({"schema":"fusionscope.stages/1","module":"m","stages":[
  {"index":0,"fusion_list":[]},
  {"index":1,"fusion_list":[{"name":"fusion.1","kind":"kLoop","members":["add.1"]}]},
  {"index":2,"fusion_list":[{"name":"fusion.1","kind":"kLoop","members":["add.1","multiply.2"],"operands":2}]}
]})";

TEST(TraceStatsTest, KernelAndDeviceFigures) {
  Trace trace = importOrDie(kBefore);
  TraceStats stats = computeStats(trace);
  EXPECT_EQ(stats.completeEvents, 6);
  EXPECT_EQ(stats.kernelCount, 4);
  EXPECT_TRUE(stats.kernelsOnly);
  EXPECT_EQ(stats.kernelTimeNs, 33000);
  EXPECT_EQ(stats.deviceTimeNs, 37000);
  EXPECT_EQ(stats.categoryNs.at("kernel"), 33000);
  EXPECT_EQ(stats.categoryNs.at("gpu_memcpy"), 4000);
  EXPECT_EQ(stats.categoryNs.count("cpu_op"), 0u);
  EXPECT_EQ(stats.busyNs, 37000);
  EXPECT_EQ(stats.idleNs, 7000);
  ASSERT_EQ(stats.tracks.size(), 2u);
  EXPECT_EQ(stats.gaps.count, 3);
  EXPECT_EQ(stats.gaps.totalNs, 7000);
  EXPECT_EQ(stats.gaps.maxNs, 5000);
  EXPECT_EQ(stats.gaps.p50Ns, 2000);
  EXPECT_EQ(stats.bytes, 3 * 1200 + 4096);
  EXPECT_EQ(stats.eventsWithBytes, 4);
  EXPECT_EQ(stats.spanNs, 54000);
  ASSERT_EQ(stats.names.size(), 3u);
  EXPECT_EQ(stats.names[0].name, "add.1");
  EXPECT_EQ(stats.names[0].durations.count, 2);
  EXPECT_EQ(stats.names[0].durations.totalNs, 20000);
  EXPECT_EQ(stats.names[0].bytes, 2400);
}

// Iteration spans (as `fusionscope-cli run --trace` writes them) give the device time of each iteration, and two
// runs' iterations paired in order give the spread of the ratio, not only one figure.
TEST(TraceStatsTest, IterationSpansGiveThePerIterationSpread) {
  constexpr const char* kOff = R"({"traceEvents":[
    {"ph":"X","cat":"iteration","name":"iteration 1","pid":0,"tid":3,"ts":0,"dur":50},
    {"ph":"X","cat":"kernel","name":"a","pid":0,"tid":1,"ts":1,"dur":20},
    {"ph":"X","cat":"kernel","name":"b","pid":0,"tid":1,"ts":22,"dur":20},
    {"ph":"X","cat":"iteration","name":"iteration 2","pid":0,"tid":3,"ts":60,"dur":50},
    {"ph":"X","cat":"kernel","name":"a","pid":0,"tid":1,"ts":61,"dur":15},
    {"ph":"X","cat":"kernel","name":"b","pid":0,"tid":1,"ts":77,"dur":15},
    {"ph":"X","cat":"iteration","name":"iteration 3","pid":0,"tid":3,"ts":120,"dur":50},
    {"ph":"X","cat":"kernel","name":"a","pid":0,"tid":1,"ts":121,"dur":10},
    {"ph":"X","cat":"kernel","name":"b","pid":0,"tid":1,"ts":132,"dur":10}
  ]})";
  constexpr const char* kOn = R"({"traceEvents":[
    {"ph":"X","cat":"iteration","name":"iteration 1","pid":0,"tid":3,"ts":0,"dur":30},
    {"ph":"X","cat":"kernel","name":"f","pid":0,"tid":1,"ts":1,"dur":20},
    {"ph":"X","cat":"iteration","name":"iteration 2","pid":0,"tid":3,"ts":40,"dur":30},
    {"ph":"X","cat":"kernel","name":"f","pid":0,"tid":1,"ts":41,"dur":10},
    {"ph":"X","cat":"iteration","name":"iteration 3","pid":0,"tid":3,"ts":80,"dur":30},
    {"ph":"X","cat":"kernel","name":"f","pid":0,"tid":1,"ts":81,"dur":10}
  ]})";
  const TraceStats off = computeStats(importOrDie(kOff));
  const TraceStats on = computeStats(importOrDie(kOn));
  EXPECT_EQ(off.iterationDeviceNs, (std::vector<int64_t>{40000, 30000, 20000}));
  EXPECT_EQ(on.iterationDeviceNs, (std::vector<int64_t>{20000, 10000, 10000}));
  EXPECT_EQ(off.kernelCount, 6) << "iteration spans are not kernels";
  const IterationSpread spread = iterationSpeedups(off, on);
  EXPECT_EQ(spread.count, 3);
  EXPECT_DOUBLE_EQ(spread.min, 2.0);
  EXPECT_DOUBLE_EQ(spread.median, 2.0);
  EXPECT_DOUBLE_EQ(spread.max, 3.0);
  // The text report states it; a trace without iterations has none.
  const std::string text = comparisonText(compareTraces(importOrDie(kOff), importOrDie(kOn), nullptr));
  EXPECT_NE(text.find("median 2.00x, 2.00-3.00x over 3 iteration pairs"), std::string::npos) << text;
  EXPECT_EQ(iterationSpeedups(computeStats(importOrDie(kBefore)), on).count, 0);
}

TEST(TraceStatsTest, PercentilesAreNearestRank) {
  std::vector<int64_t> values;
  for (int64_t i = 100; i >= 1; --i) values.push_back(i);
  DurationStats d = durationStats(values);
  EXPECT_EQ(d.count, 100);
  EXPECT_EQ(d.totalNs, 5050);
  EXPECT_EQ(d.minNs, 1);
  EXPECT_EQ(d.maxNs, 100);
  EXPECT_EQ(d.p50Ns, 50);
  EXPECT_EQ(d.p90Ns, 90);
  EXPECT_EQ(d.p99Ns, 99);
  std::vector<int64_t> one{7};
  EXPECT_EQ(durationStats(one).p99Ns, 7);
  std::vector<int64_t> none;
  EXPECT_EQ(durationStats(none).count, 0);
}

TEST(TraceStatsTest, OverlappingDeviceEventsCountOnceAsBusy) {
  Trace trace = importOrDie(R"([
    {"ph":"X","cat":"kernel","name":"a","pid":0,"tid":1,"ts":0,"dur":10},
    {"ph":"X","cat":"kernel","name":"b","pid":0,"tid":1,"ts":5,"dur":10},
    {"ph":"X","cat":"kernel","name":"c","pid":0,"tid":1,"ts":20,"dur":1}])");
  TraceStats stats = computeStats(trace);
  EXPECT_EQ(stats.busyNs, 16000);
  EXPECT_EQ(stats.idleNs, 5000);
  EXPECT_EQ(stats.gaps.totalNs, 5000);  // 0 for the overlap, 5 after b
}

TEST(TraceStatsTest, CpuOnlyTraceReportsAllCompleteEvents) {
  Trace trace = importOrDie(R"([{"ph":"X","name":"MatMul","pid":1,"tid":1,"ts":0,"dur":3},
                                {"ph":"X","name":"MatMul","pid":1,"tid":1,"ts":5,"dur":1},
                                {"ph":"i","name":"mark","pid":1,"tid":1,"ts":2}])");
  TraceStats stats = computeStats(trace);
  EXPECT_FALSE(stats.kernelsOnly);
  EXPECT_EQ(stats.deviceTimeNs, 0);
  ASSERT_EQ(stats.names.size(), 1u);
  EXPECT_EQ(stats.names[0].durations.totalNs, 4000);
  EXPECT_EQ(stats.spanNs, 6000);
  nlohmann::json json = nlohmann::json::parse(statsJson(stats));
  EXPECT_EQ(json["names"][0]["durations"]["count"], 2);
  EXPECT_EQ(json["names_are_kernels"], false);
}

TEST(TraceStatsTest, ArgsBytesPrefersBytesOverReadWritten) {
  EXPECT_EQ(argsBytes(R"({"bytes": 64, "bytes_read": 1})"), 64);
  EXPECT_EQ(argsBytes(R"({"bytes_read": 10, "bytes_written": 6})"), 16);
  EXPECT_EQ(argsBytes(R"({"other": 1})"), 0);
  EXPECT_EQ(argsBytes(R"({"bytes": "many"})"), 0);
  EXPECT_EQ(argsBytes("not json"), 0);
}

TEST(TraceCompareTest, MapsFusionsToReplacedKernelsWithStages) {
  Trace before = importOrDie(kBefore);
  Trace after = importOrDie(kAfter);
  StatusOr<FusionMembership> membership = parseFusionMembership(kStages, "stages.json");
  ASSERT_TRUE(membership.ok()) << membership.message();
  EXPECT_EQ(membership->members.at("fusion.1"), (std::vector<std::string>{"add.1", "multiply.2"}));
  TraceComparison c = compareTraces(before, after, &*membership);
  EXPECT_EQ(c.before.kernelCount, 4);
  EXPECT_EQ(c.after.kernelCount, 3);
  ASSERT_EQ(c.mappings.size(), 2u);
  const KernelMapping& fusion = c.mappings[0];
  EXPECT_EQ(fusion.after, "fusion_1");
  EXPECT_EQ(fusion.via, "stages.json");
  EXPECT_EQ(fusion.before, (std::vector<std::string>{"add.1", "multiply.2"}));
  EXPECT_EQ(fusion.beforeCount, 3);
  EXPECT_EQ(fusion.beforeNs, 28000);
  EXPECT_EQ(fusion.afterNs, 12000);
  EXPECT_NEAR(fusion.speedup(), 28.0 / 12.0, 1e-9);
  const KernelMapping& same = c.mappings[1];
  EXPECT_EQ(same.after, "exponential.3");
  EXPECT_EQ(same.via, "same name");
  EXPECT_NEAR(same.speedup(), 1.25, 1e-9);
  EXPECT_TRUE(c.unmappedBefore.empty());
  std::string text = comparisonText(c);
  EXPECT_NE(text.find("speedup 2.33x [stages.json]"), std::string::npos) << text;
  nlohmann::json json = nlohmann::json::parse(comparisonJson(c));
  EXPECT_EQ(json["mappings"][0]["before"].size(), 2u);
  EXPECT_EQ(json["before"]["kernel_count"], 4);
}

TEST(TraceCompareTest, WithoutStagesUsesMembersFromArgs) {
  Trace before = importOrDie(kBefore);
  Trace after = importOrDie(R"([
    {"ph":"X","cat":"kernel","name":"fusion.7","pid":0,"tid":7,"ts":0,"dur":6,"args":{"members":["multiply.2"]}},
    {"ph":"X","cat":"kernel","name":"loop_add","pid":0,"tid":7,"ts":10,"dur":2,"args":{"hlo_op":"add.1"}}])");
  TraceComparison c = compareTraces(before, after, nullptr);
  ASSERT_EQ(c.mappings.size(), 2u);
  EXPECT_EQ(c.mappings[0].after, "fusion.7");
  EXPECT_EQ(c.mappings[0].before, (std::vector<std::string>{"multiply.2"}));
  EXPECT_EQ(c.mappings[0].via, "args");
  EXPECT_EQ(c.mappings[1].before, (std::vector<std::string>{"add.1"}));
  EXPECT_EQ(c.unmappedBefore, (std::vector<std::string>{"exponential.3"}));
}

// XLA on a GPU names kernels apart from the op they ran (args hlo_op): membership is found through the after
// kernel's hlo_op and before kernels answer to theirs, so a library kernel ("sm90_gemm") is still claimed.
TEST(TraceCompareTest, MatchesThroughHloOpWhenKernelNamesDiffer) {
  Trace before = importOrDie(R"([
    {"ph":"X","cat":"kernel","name":"sm90_gemm","pid":0,"tid":7,"ts":0,"dur":10,"args":{"hlo_op":"custom-call.1"}},
    {"ph":"X","cat":"kernel","name":"loop_add","pid":0,"tid":7,"ts":10,"dur":3,"args":{"hlo_op":"add.1"}},
    {"ph":"X","cat":"kernel","name":"loop_multiply","pid":0,"tid":7,"ts":13,"dur":3,"args":{"hlo_op":"multiply.2"}}])");
  Trace after = importOrDie(R"([
    {"ph":"X","cat":"kernel","name":"sm90_gemm","pid":0,"tid":7,"ts":0,"dur":10,"args":{"hlo_op":"custom-call.1"}},
    {"ph":"X","cat":"kernel","name":"loop_multiply_fusion","pid":0,"tid":7,"ts":10,"dur":4,
     "args":{"hlo_op":"multiply_add_fusion"}}])");
  FusionMembership membership;
  membership.members["multiply_add_fusion"] = {"add.1", "multiply.2"};
  membership.source = "fused HLO";
  TraceComparison c = compareTraces(before, after, &membership);
  ASSERT_EQ(c.mappings.size(), 2u);
  EXPECT_EQ(c.mappings[0].after, "sm90_gemm");
  EXPECT_EQ(c.mappings[0].before, (std::vector<std::string>{"sm90_gemm"}));  // its hlo_op, read as its one member
  EXPECT_EQ(c.mappings[0].via, "args");
  EXPECT_EQ(c.mappings[1].after, "loop_multiply_fusion");
  EXPECT_EQ(c.mappings[1].via, "fused HLO");
  EXPECT_EQ(c.mappings[1].before, (std::vector<std::string>{"loop_add", "loop_multiply"}));
  EXPECT_EQ(c.mappings[1].beforeNs, 6000);
  EXPECT_TRUE(c.unmappedBefore.empty());
}

// A before kernel several after kernels list (an op XLA duplicated into several fusions) goes to the one that
// alone lists it or is named like it, else to the first by after time.
TEST(TraceCompareTest, ContestedBeforeKernelsGoFirstToWhoAloneListsThem) {
  Trace before = importOrDie(R"([
    {"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":0,"dur":1},
    {"ph":"X","cat":"kernel","name":"b","pid":0,"tid":7,"ts":1,"dur":1},
    {"ph":"X","cat":"kernel","name":"c","pid":0,"tid":7,"ts":2,"dur":1},
    {"ph":"X","cat":"kernel","name":"x","pid":0,"tid":7,"ts":3,"dur":1},
    {"ph":"X","cat":"kernel","name":"y","pid":0,"tid":7,"ts":4,"dur":1}])");
  Trace after = importOrDie(R"([
    {"ph":"X","cat":"kernel","name":"f1","pid":0,"tid":7,"ts":0,"dur":10},
    {"ph":"X","cat":"kernel","name":"f2","pid":0,"tid":7,"ts":10,"dur":5},
    {"ph":"X","cat":"kernel","name":"f3","pid":0,"tid":7,"ts":15,"dur":1},
    {"ph":"X","cat":"kernel","name":"x","pid":0,"tid":7,"ts":20,"dur":4},
    {"ph":"X","cat":"kernel","name":"y","pid":0,"tid":7,"ts":30,"dur":3}])");
  FusionMembership membership;
  membership.members["f1"] = {"b", "a"};
  membership.members["f2"] = {"b", "c"};
  membership.members["f3"] = {"b"};
  membership.members["x"] = {"y", "x"};
  membership.members["y"] = {"x", "y"};
  TraceComparison c = compareTraces(before, after, &membership);
  std::map<std::string, std::vector<std::string>> replaced;
  for (const KernelMapping& m : c.mappings) replaced[m.after] = m.before;
  EXPECT_EQ(replaced["f1"], (std::vector<std::string>{"b", "a"}));  // b: listed by three, f1 ran longest
  EXPECT_EQ(replaced["f2"], (std::vector<std::string>{"c"}));
  EXPECT_TRUE(replaced["f3"].empty());
  EXPECT_EQ(replaced["x"], (std::vector<std::string>{"x"}));
  EXPECT_EQ(replaced["y"], (std::vector<std::string>{"y"}));
  EXPECT_TRUE(c.unmappedBefore.empty());
}

// XLA:CPU's kernels carry an hlo_op equal to their name: that is the kernel itself, not a member list, so an
// unchanged kernel maps by name and a fusion with nothing to say about its members stays unmapped.
TEST(TraceCompareTest, XlaHloOpEqualToTheNameIsNotAMemberList) {
  Trace before = importOrDie(R"([
    {"ph":"X","name":"dot","pid":1,"tid":1,"ts":0,"dur":10,"args":{"hlo_module":"jit_step","hlo_op":"dot"}},
    {"ph":"X","name":"wrapped_add","pid":1,"tid":1,"ts":10,"dur":2,"args":{"hlo_module":"jit_step","hlo_op":"wrapped_add"}}])");
  Trace after = importOrDie(R"([
    {"ph":"X","name":"dot","pid":1,"tid":1,"ts":0,"dur":10,"args":{"hlo_module":"jit_step","hlo_op":"dot"}},
    {"ph":"X","name":"add_reduce_fusion","pid":1,"tid":1,"ts":10,"dur":1,
     "args":{"hlo_module":"jit_step","hlo_op":"add_reduce_fusion"}}])");
  TraceComparison c = compareTraces(before, after, nullptr);
  EXPECT_EQ(c.before.kernelCount, 2);
  EXPECT_EQ(c.after.kernelCount, 2);
  ASSERT_EQ(c.mappings.size(), 2u);
  EXPECT_EQ(c.mappings[0].after, "dot");
  EXPECT_EQ(c.mappings[0].via, "same name");
  EXPECT_EQ(c.mappings[1].after, "add_reduce_fusion");
  EXPECT_TRUE(c.mappings[1].before.empty());
  EXPECT_EQ(c.mappings[1].via, "");
  EXPECT_EQ(c.unmappedBefore, (std::vector<std::string>{"wrapped_add"}));
}

// The real pair (JAX 0.10, MNIST step, 5 runs, CPU): fusion cuts the kernels launched; without the modules only
// the kernels fusion left alone map (by name).
TEST(TraceCompareTest, RealJaxUnfusedAgainstFused) {
  const fs::path dir = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "mnist_step";
  StatusOr<Trace> before = importChromeTrace((dir / "perfetto-unfused.json.gz").string());
  StatusOr<Trace> after = importChromeTrace((dir / "perfetto-fused.json.gz").string());
  ASSERT_TRUE(before.ok()) << before.message();
  ASSERT_TRUE(after.ok()) << after.message();
  TraceComparison c = compareTraces(*before, *after, nullptr);
  EXPECT_EQ(c.before.kernelCount, 125);
  EXPECT_EQ(c.after.kernelCount, 45);
  EXPECT_GT(c.before.kernelTimeNs, 0);
  EXPECT_GT(c.after.kernelTimeNs, 0);
  ASSERT_EQ(c.mappings.size(), 9u);
  std::vector<std::string> byName;
  for (const KernelMapping& m : c.mappings) {
    if (m.via == "same name") byName.push_back(m.after);
  }
  std::sort(byName.begin(), byName.end());
  EXPECT_EQ(byName, (std::vector<std::string>{"dot", "wrapped_reduce-window", "ynn_fusion"}));
  EXPECT_EQ(c.unmappedBefore.size(), 22u);
}

TEST(TraceCompareTest, UnknownKernelHasNoMapping) {
  Trace before = importOrDie(kBefore);
  Trace after = importOrDie(R"([{"ph":"X","cat":"kernel","name":"mystery","pid":0,"tid":7,"ts":0,"dur":6}])");
  TraceComparison c = compareTraces(before, after, nullptr);
  ASSERT_EQ(c.mappings.size(), 1u);
  EXPECT_TRUE(c.mappings[0].before.empty());
  EXPECT_EQ(c.mappings[0].speedup(), 0.0);
  EXPECT_EQ(c.unmappedBefore.size(), 3u);
  EXPECT_NE(comparisonText(c).find("no matching before kernel"), std::string::npos);
}

TEST(TraceCompareTest, BadStagesJsonIsAnError) {
  StatusOr<FusionMembership> notJson = parseFusionMembership("{nope", "s.json");
  ASSERT_FALSE(notJson.ok());
  EXPECT_NE(notJson.message().find("s.json: error:"), std::string::npos) << notJson.message();
  StatusOr<FusionMembership> noStages = parseFusionMembership(R"({"schema":"x"})", "s.json");
  ASSERT_FALSE(noStages.ok());
  EXPECT_NE(noStages.message().find("no \"stages\" array"), std::string::npos) << noStages.message();
  StatusOr<FusionMembership> badMembers =
      parseFusionMembership(R"({"stages":[{"fusion_list":[{"name":"f","members":[1]}]}]})", "s.json");
  ASSERT_FALSE(badMembers.ok());
  EXPECT_NE(badMembers.message().find("byte offset"), std::string::npos) << badMembers.message();
  EXPECT_FALSE(loadFusionMembership("/nonexistent/stages.json").ok());
}

TEST(TraceCompareTest, NormalizesKernelNames) {
  EXPECT_EQ(normalizeKernelName("fusion.3"), "fusion_3");
  EXPECT_EQ(normalizeKernelName("fusion-3"), "fusion_3");
  EXPECT_EQ(normalizeKernelName("fusion_3"), "fusion_3");
}

// Kernel counts and time of the Kineto corpus trace, checked by hand with a python json script (cat == "kernel").
TEST(TraceStatsTest, CorpusKinetoKernels) {
  fs::path path = kCorpusDir / "kineto_alexnet_critical_path.json";
  if (!fs::exists(path)) GTEST_SKIP() << "trace corpus not found at " << kCorpusDir;
  StatusOr<Trace> trace = importChromeTrace(path.string());
  ASSERT_TRUE(trace.ok()) << trace.message();
  TraceStats stats = computeStats(*trace);
  EXPECT_EQ(stats.kernelCount, 79);
  EXPECT_EQ(stats.kernelTimeNs, 10692000);
  // Comparing a trace with itself maps every kernel to itself with speedup 1.
  TraceComparison c = compareTraces(*trace, *trace, nullptr);
  EXPECT_TRUE(c.unmappedBefore.empty());
  for (const KernelMapping& m : c.mappings) {
    EXPECT_EQ(m.via, "same name") << m.after;
    EXPECT_DOUBLE_EQ(m.speedup(), 1.0) << m.after;
  }
}

}  // namespace
}  // namespace fusionscope::profiler
