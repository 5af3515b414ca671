#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "profiler/trace/chrome_json_import.h"
#include "profiler/trace/json_text.h"
#include "tests/common/source_paths.h"
#include "tests/profiler/trace_testing.h"

namespace fusionscope::profiler {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus" / "traces";

// Counts below were taken from the files with a throwaway python3 json script (per-phase Counter over
// traceEvents, B/E stack per (pid, tid), unique pids/threads named by metadata), not from this importer.
struct CorpusCase {
  const char* file;
  int64_t eventsRead;
  std::map<char, int64_t> phases;
  int64_t matched;
  int64_t unmatchedBegin;
  size_t keptEvents;  // read - matched E - folded process/thread metadata
  size_t processes;
  size_t threads;
  size_t otherKeys;
};

const CorpusCase kCorpus[] = {
    {"catapult_flow.json",
     5017,
     {{'s', 866}, {'B', 1625}, {'E', 1622}, {'f', 886}, {'M', 18}},
     1622,
     3,
     5017 - 1622 - 18,
     1,
     16,
     1},
    {"catapult_x_event_trace.json",
     4027,
     {{'X', 2799},
      {'S', 53},
      {'T', 124},
      {'i', 59},
      {'C', 42},
      {'F', 53},
      {'B', 442},
      {'E', 442},
      {'D', 2},
      {'N', 2},
      {'M', 9}},
     442,
     0,
     4027 - 442 - 8,
     1,
     5,
     0},
    {"kineto_alexnet_critical_path.json",
     1408,
     {{'X', 868}, {'f', 345}, {'s', 155}, {'M', 38}, {'i', 2}},
     0,
     0,
     1408 - 29,
     10,
     4,
     4},
    {"kineto_mtia_inference_rank0.json",
     16158,
     {{'X', 14179}, {'M', 176}, {'i', 2}, {'f', 1166}, {'s', 635}},
     0,
     0,
     16158 - 173,
     4,
     61,
     15},
    {"tf_timeline_gpu_matmul_loop_step0.json",
     216,
     {{'M', 17}, {'X', 171}, {'s', 14}, {'t', 14}},
     0,
     0,
     216 - 17,
     17,
     0,
     0},
};

using fusionscope::testing::importOrDie;

TEST(TraceImportTest, CorpusPerPhaseCounts) {
  if (!fs::exists(kCorpusDir)) GTEST_SKIP() << "trace corpus not found at " << kCorpusDir;
  for (const CorpusCase& c : kCorpus) {
    SCOPED_TRACE(c.file);
    StatusOr<Trace> trace = importChromeTrace((kCorpusDir / c.file).string());
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->stats.eventsRead, c.eventsRead);
    EXPECT_EQ(trace->stats.phaseCounts, c.phases);
    EXPECT_EQ(trace->stats.skippedTotal(), 0);
    EXPECT_EQ(trace->stats.matchedBeginEnd, c.matched);
    EXPECT_EQ(trace->stats.unmatchedBegin, c.unmatchedBegin);
    EXPECT_EQ(trace->stats.unmatchedEnd, 0);
    EXPECT_EQ(trace->events.size(), c.keptEvents);
    EXPECT_EQ(trace->processes.size(), c.processes);
    EXPECT_EQ(trace->threads.size(), c.threads);
    EXPECT_EQ(trace->otherKeys.size(), c.otherKeys);
  }
}

TEST(TraceImportTest, CorpusFieldsOfFirstCompleteEvent) {
  if (!fs::exists(kCorpusDir)) GTEST_SKIP() << "trace corpus not found at " << kCorpusDir;
  StatusOr<Trace> trace = importChromeTrace((kCorpusDir / "kineto_mtia_inference_rank0.json").string());
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->displayTimeUnit, "ms");
  const TraceEvent* first = nullptr;
  for (const TraceEvent& e : trace->events) {
    if (e.phase == 'X' && !e.pid.isText) {
      first = &e;
      break;
    }
  }
  ASSERT_NE(first, nullptr);
  // {"ts": 701805216966.892, "dur": 31345.582, "pid": 865, "tid": 1457}: exact to the ns, no double rounding.
  EXPECT_EQ(first->name, "Stage::PyTorchMRSGIFTask::run");
  EXPECT_EQ(first->cat, "user_annotation");
  EXPECT_EQ(first->tsNs, 701805216966892);
  EXPECT_EQ(first->durNs, 31345582);
  EXPECT_EQ(first->pid, TrackId::fromNumber(865));
  EXPECT_EQ(first->tid, TrackId::fromNumber(1457));
  EXPECT_EQ(first->args, "{\n      \"External id\": 12289,\"Record function id\": 0, \"Ev Idx\": 0\n    }");
  EXPECT_EQ(trace->processes.at(TrackId::fromText("Spans")).sortIndex, 536870912);
}

TEST(TraceImportTest, MatchesBeginEndPerThread) {
  Trace trace = importOrDie(R"({"traceEvents":[
    {"ph":"B","name":"outer","pid":1,"tid":1,"ts":10,"args":{"a":1}},
    {"ph":"B","name":"other thread","pid":1,"tid":2,"ts":11},
    {"ph":"B","name":"inner","pid":1,"tid":1,"ts":12},
    {"ph":"E","pid":1,"tid":1,"ts":15.5},
    {"ph":"E","pid":1,"tid":1,"ts":20,"args":{"b":2}},
    {"ph":"E","pid":1,"tid":3,"ts":30}
  ]})");
  EXPECT_EQ(trace.stats.matchedBeginEnd, 2);
  EXPECT_EQ(trace.stats.unmatchedBegin, 1);
  EXPECT_EQ(trace.stats.unmatchedEnd, 1);
  ASSERT_EQ(trace.events.size(), 4u);
  EXPECT_EQ(trace.events[0].name, "outer");
  EXPECT_EQ(trace.events[0].phase, 'X');
  EXPECT_TRUE(trace.events[0].fromBeginEnd);
  EXPECT_EQ(trace.events[0].durNs, 10000);
  EXPECT_EQ(trace.events[0].args, R"({"a":1,"b":2})");
  EXPECT_EQ(trace.events[1].phase, 'B');
  EXPECT_EQ(trace.events[1].durNs, kNoDuration);
  EXPECT_EQ(trace.events[2].name, "inner");
  EXPECT_EQ(trace.events[2].durNs, 3500);
  EXPECT_EQ(trace.events[3].phase, 'E');
  EXPECT_EQ(trace.events[3].tid, TrackId::fromNumber(3));
}

TEST(TraceImportTest, AcceptsStringTimestampsAndRoundsToNanoseconds) {
  Trace trace = importOrDie(R"([
    {"ph":"X","name":"a","pid":1,"tid":1,"ts":"123.5","dur":"0.0015"},
    {"ph":"i","name":"b","pid":"Traces","tid":"t","ts":1.23449,"s":"g"}
  ])");
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].tsNs, 123500);
  EXPECT_EQ(trace.events[0].durNs, 2);
  EXPECT_EQ(trace.events[1].tsNs, 1234);
  EXPECT_EQ(trace.events[1].pid, TrackId::fromText("Traces"));
  EXPECT_EQ(trace.events[1].extra, R"("s":"g")");
}

TEST(TraceImportTest, ParsesMicrosecondText) {
  EXPECT_EQ(parseMicrosToNanos("1695835542481129"), 1695835542481129000);
  EXPECT_EQ(parseMicrosToNanos("0.0005"), 1);
  EXPECT_EQ(parseMicrosToNanos("0.00049"), 0);
  EXPECT_EQ(parseMicrosToNanos("-2.5"), -2500);
  EXPECT_EQ(parseMicrosToNanos("1.5e3"), 1500000);
  EXPECT_EQ(parseMicrosToNanos("abc"), std::nullopt);
  EXPECT_EQ(parseMicrosToNanos("12x"), std::nullopt);
  EXPECT_EQ(parseMicrosToNanos(""), std::nullopt);
  EXPECT_EQ(parseMicrosToNanos("99999999999999999999"), std::nullopt);
}

TEST(TraceImportTest, KeepsFlowAsyncAndObjectFields) {
  Trace trace = importOrDie(R"([
    {"ph":"s","name":"ac2g","cat":"ac2g","id":7,"pid":1,"tid":2,"ts":1},
    {"ph":"f","name":"ac2g","cat":"ac2g","id":7,"bp":"e","pid":0,"tid":7,"ts":2},
    {"ph":"S","name":"legacy","cat":"c","id":"0xff","pid":1,"tid":2,"ts":3},
    {"ph":"b","name":"async","cat":"c","id":"x","pid":1,"tid":2,"ts":4},
    {"ph":"O","name":"obj","id":"0x1","pid":1,"tid":2,"ts":5,"args":{"snapshot":{"k":[1,2]}}},
    {"ph":"C","name":"ctr","pid":1,"tid":2,"ts":6,"args":{"v":3.25}}
  ])");
  ASSERT_EQ(trace.events.size(), 6u);
  EXPECT_EQ(trace.events[0].id, "7");
  EXPECT_TRUE(trace.events[0].idIsNumber);
  EXPECT_EQ(trace.events[1].bp, "e");
  EXPECT_EQ(trace.events[2].id, "0xff");
  EXPECT_FALSE(trace.events[2].idIsNumber);
  EXPECT_EQ(phaseKind(trace.events[2].phase), PhaseKind::kLegacyAsync);
  EXPECT_EQ(phaseKind(trace.events[3].phase), PhaseKind::kAsync);
  EXPECT_EQ(phaseKind(trace.events[4].phase), PhaseKind::kObject);
  EXPECT_EQ(trace.events[4].args, R"({"snapshot":{"k":[1,2]}})");
  EXPECT_EQ(trace.events[5].args, R"({"v":3.25})");
}

TEST(TraceImportTest, FoldsMetadataIntoProcessAndThreadRecords) {
  Trace trace = importOrDie(R"([
    {"ph":"M","name":"process_name","pid":3,"args":{"name":"GPU 0"}},
    {"args":{"sort_index":5},"ph":"M","name":"process_sort_index","pid":3},
    {"ph":"M","name":"thread_name","pid":3,"tid":"stream 7","args":{"name":"Stream 7"}},
    {"ph":"M","name":"thread_sort_index","pid":3,"tid":"stream 7","args":{"sort_index":-1}},
    {"ph":"M","name":"process_labels","pid":3,"args":{"labels":"x"}}
  ])");
  EXPECT_EQ(trace.processes.at(TrackId::fromNumber(3)), (ProcessInfo{"GPU 0", 5}));
  EXPECT_EQ(trace.threads.at({TrackId::fromNumber(3), TrackId::fromText("stream 7")}), (ThreadInfo{"Stream 7", -1}));
  ASSERT_EQ(trace.events.size(), 1u);
  EXPECT_EQ(trace.events[0].name, "process_labels");
  EXPECT_EQ(trace.stats.phaseCounts.at('M'), 5);
}

TEST(TraceImportTest, CountsMalformedEventsWithReasons) {
  Trace trace = importOrDie(R"({"traceEvents":[
    42, "x", [1],
    {"name":"no phase","ts":1},
    {"ph":"XX","name":"long phase","ts":1},
    {"ph":"X","name":"bad ts","ts":"soon","dur":1},
    {"ph":"X","name":"no ts","dur":1},
    {"ph":"X","name":"bad dur","ts":1,"dur":-3},
    {"ph":"X","name":"bad pid","ts":1,"pid":{}},
    {"ph":"X","name":"ok","ts":1,"dur":1}
  ], "otherData": {"k": "v"}})");
  std::map<std::string, int64_t> expected{{"not an object", 3}, {"missing ph", 1}, {"bad ph", 1}, {"bad ts", 1},
                                          {"missing ts", 1},    {"bad dur", 1},    {"bad pid", 1}};
  EXPECT_EQ(trace.stats.skipped, expected);
  EXPECT_EQ(trace.stats.eventsRead, 10);
  ASSERT_EQ(trace.events.size(), 1u);
  EXPECT_EQ(trace.events[0].name, "ok");
  ASSERT_EQ(trace.otherKeys.size(), 1u);
  EXPECT_EQ(trace.otherKeys[0].first, "otherData");
  EXPECT_EQ(trace.otherKeys[0].second, R"({"k": "v"})");
}

// XLA's profiler ends traceEvents with `{}`; that is padding, while every other malformed event still counts.
TEST(TraceImportTest, EmptyObjectIsNotMalformed) {
  Trace trace = importOrDie(R"({"traceEvents":[
    {"ph":"X","name":"thunk","ts":1,"dur":2,"args":{"hlo_op":"fusion.1"}},
    {"name":"no phase","ts":1},
    { },
    {"ph":"X","name":"no ts","dur":1},
    {}
  ]})");
  EXPECT_EQ(trace.stats.eventsRead, 5);
  EXPECT_EQ(trace.stats.emptyObjects, 2);
  std::map<std::string, int64_t> expected{{"missing ph", 1}, {"missing ts", 1}};
  EXPECT_EQ(trace.stats.skipped, expected);
  EXPECT_EQ(trace.stats.skippedTotal(), 2);
  ASSERT_EQ(trace.events.size(), 1u);
  EXPECT_EQ(trace.events[0].name, "thunk");
}

TEST(TraceImportTest, NotJsonIsAnErrorWithByteOffset) {
  StatusOr<Trace> trace = importChromeTraceText("  \n hello world", "junk.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.message().find("junk.json"), std::string::npos) << trace.message();
  EXPECT_NE(trace.message().find("byte offset 4"), std::string::npos) << trace.message();

  StatusOr<Trace> broken = importChromeTraceText(R"([{"ph":"X","ts":1},{"ph":"X","ts":)", "broken.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.message().find("broken.json"), std::string::npos) << broken.message();
  EXPECT_NE(broken.message().find("byte offset 33"), std::string::npos) << broken.message();

  StatusOr<Trace> trailing = importChromeTraceText(R"([{"ph":"X","ts":1}] trailing)", "trailing.json");
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.message().find("trailing.json"), std::string::npos) << trailing.message();

  StatusOr<Trace> noEvents = importChromeTraceText(R"({"foo": 1})", "obj.json");
  ASSERT_FALSE(noEvents.ok());
  EXPECT_NE(noEvents.message().find("traceEvents"), std::string::npos) << noEvents.message();
}

// simdjson rejects bad UTF-8 before parsing, at no position: the message named 1:1 for a byte on line 2.
TEST(TraceImportTest, InvalidUtf8IsReportedAtItsByte) {
  const std::string text = "[{\"ph\":\"X\",\"ts\":1},\n {\"name\":\"k\xff\",\"ph\":\"X\",\"ts\":2}]";
  StatusOr<Trace> trace = importChromeTraceText(text, "utf8.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.message().find("utf8.json:2:12: error"), std::string::npos) << trace.message();
  EXPECT_NE(trace.message().find("byte offset 31"), std::string::npos) << trace.message();
}

TEST(TraceImportTest, MissingFileIsAnErrorNamingIt) {
  std::string path = (fs::temp_directory_path() / "fs_profiler_no_such_trace.json").string();
  StatusOr<Trace> trace = importChromeTrace(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.message().find(path), std::string::npos) << trace.message();
}

TEST(TraceImportTest, ReadsGzipCompressedTrace) {
  std::string json = R"({"traceEvents":[{"ph":"X","name":"k","pid":1,"tid":2,"ts":1.5,"dur":2}]})";
  fs::path path = fs::temp_directory_path() / ("fs_profiler_gz_test_" + std::to_string(::getpid()) + ".json.gz");
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, json.data(), static_cast<unsigned>(json.size())), static_cast<int>(json.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
  StatusOr<Trace> trace = importChromeTrace(path.string());
  fs::remove(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->events.size(), 1u);
  EXPECT_EQ(trace->events[0].name, "k");
  EXPECT_EQ(trace->events[0].tsNs, 1500);
  EXPECT_EQ(trace->events[0].durNs, 2000);
}

}  // namespace
}  // namespace fusionscope::profiler
