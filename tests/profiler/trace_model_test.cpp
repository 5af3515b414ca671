// The trace model on small hand-written traces: one test per event kind of the Chrome trace format, flow binding,
// the text store that event fields point into, and a round trip of the generated Kineto-like trace.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/trace/chrome_json_export.h"
#include "profiler/trace/chrome_json_import.h"
#include "profiler/trace/flow_binding.h"
#include "tests/profiler/trace_testing.h"

namespace fusionscope::profiler {
namespace {

using fusionscope::testing::importOrDie;

TEST(TraceModelTest, CompleteEventsKeepDurationAndDefaultToZero) {
  Trace trace = importOrDie(R"([{"ph":"X","name":"a","pid":1,"tid":1,"ts":10,"dur":2.5},
                                {"ph":"X","name":"b","pid":1,"tid":1,"ts":20}])");
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].durNs, 2500);
  EXPECT_EQ(trace.events[0].endNs(), 12500);
  EXPECT_EQ(trace.events[1].durNs, 0);
  EXPECT_EQ(phaseKind('X'), PhaseKind::kComplete);
}

TEST(TraceModelTest, BeginEndMatchPerThreadNotAcrossThreads) {
  // The E on thread 2 must not close the B on thread 1; the B on thread 1 is closed by its own, later E.
  Trace trace = importOrDie(R"([{"ph":"B","name":"t1","pid":1,"tid":1,"ts":1},
                                {"ph":"E","pid":1,"tid":2,"ts":2},
                                {"ph":"E","pid":1,"tid":1,"ts":5,"args":{"r":1}}])");
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].phase, 'X');
  EXPECT_EQ(trace.events[0].durNs, 4000);
  EXPECT_EQ(trace.events[0].args, R"({"r":1})");
  EXPECT_EQ(trace.events[1].phase, 'E');
  EXPECT_EQ(trace.stats.matchedBeginEnd, 1);
  EXPECT_EQ(trace.stats.unmatchedEnd, 1);
}

TEST(TraceModelTest, InstantEventsKeepTheirScope) {
  Trace trace = importOrDie(R"([{"ph":"i","name":"g","pid":1,"tid":1,"ts":1,"s":"g"},
                                {"ph":"I","name":"t","pid":1,"tid":1,"ts":2},
                                {"ph":"i","name":"p","pid":1,"tid":1,"ts":3,"s":"p"}])");
  ASSERT_EQ(trace.events.size(), 3u);
  EXPECT_EQ(trace.events[0].extra, R"("s":"g")");
  EXPECT_EQ(trace.events[1].extra, "");
  EXPECT_EQ(trace.events[2].extra, R"("s":"p")");
  EXPECT_EQ(trace.events[0].durNs, kNoDuration);
  EXPECT_EQ(phaseKind('I'), PhaseKind::kInstant);
  std::string json = chromeTraceJson(trace);
  EXPECT_NE(json.find(R"("ts":3,"s":"p")"), std::string::npos) << json;
}

TEST(TraceModelTest, CounterEventsKeepSeriesInArgs) {
  Trace trace = importOrDie(R"([{"ph":"C","name":"mem","id":"a","pid":1,"ts":1,"args":{"used":10,"free":5}}])");
  ASSERT_EQ(trace.events.size(), 1u);
  EXPECT_EQ(phaseKind(trace.events[0].phase), PhaseKind::kCounter);
  EXPECT_EQ(trace.events[0].args, R"({"used":10,"free":5})");
  EXPECT_EQ(trace.events[0].id, "a");
  EXPECT_FALSE(trace.events[0].idIsNumber);
}

TEST(TraceModelTest, AsyncAndLegacyAsyncEventsKeepIdsAndExtraFields) {
  Trace trace = importOrDie(R"([{"ph":"b","name":"req","cat":"net","id2":{"local":"0x3"},"pid":1,"tid":1,"ts":1},
                                {"ph":"n","name":"req","cat":"net","id":5,"pid":1,"tid":1,"ts":2},
                                {"ph":"e","name":"req","cat":"net","id":5,"pid":1,"tid":1,"ts":3},
                                {"ph":"T","name":"old","id":"0x9","pid":1,"tid":1,"ts":4,"args":{"step":"s1"}}])");
  ASSERT_EQ(trace.events.size(), 4u);
  EXPECT_EQ(trace.events[0].extra, R"("id2":{"local":"0x3"})");
  EXPECT_EQ(trace.events[1].id, "5");
  EXPECT_TRUE(trace.events[1].idIsNumber);
  EXPECT_EQ(phaseKind('n'), PhaseKind::kAsync);
  EXPECT_EQ(phaseKind('T'), PhaseKind::kLegacyAsync);
  EXPECT_EQ(trace.events[3].args, R"({"step":"s1"})");
}

TEST(TraceModelTest, ObjectEventsAreKeptRaw) {
  Trace trace = importOrDie(R"([{"ph":"N","name":"Obj","id":"0x1","pid":1,"tid":1,"ts":1},
                                {"ph":"O","name":"Obj","id":"0x1","pid":1,"tid":1,"ts":2,"args":{"snapshot":[1]}},
                                {"ph":"D","name":"Obj","id":"0x1","pid":1,"tid":1,"ts":3}])");
  ASSERT_EQ(trace.events.size(), 3u);
  for (const TraceEvent& event : trace.events) EXPECT_EQ(phaseKind(event.phase), PhaseKind::kObject);
  EXPECT_EQ(trace.events[1].args, R"({"snapshot":[1]})");
}

TEST(TraceModelTest, EscapedStringsAreUnescapedAndOwnedByTheTrace) {
  Trace trace = importOrDie(R"([{"ph":"X","name":"a\"b\u00e9","cat":"c\\d","pid":"p\n","tid":1,"ts":1}])");
  ASSERT_EQ(trace.events.size(), 1u);
  EXPECT_EQ(trace.events[0].name, "a\"b\xc3\xa9");
  EXPECT_EQ(trace.events[0].cat, "c\\d");
  EXPECT_EQ(trace.events[0].pid, TrackId::fromText("p\n"));
  EXPECT_TRUE(trace.text.owns(trace.events[0].name));
  EXPECT_TRUE(trace.text.owns(trace.events[0].pid.text));
}

TEST(TraceModelTest, MovedAndClonedTracesKeepValidText) {
  Trace trace = importOrDie(R"({"traceEvents":[{"ph":"X","name":"kernel_name","pid":"gpu","tid":7,"ts":1,
                                                "args":{"k":1}}]})");
  Trace moved = std::move(trace);
  EXPECT_EQ(moved.events[0].name, "kernel_name");
  EXPECT_TRUE(moved.text.owns(moved.events[0].args));
  Trace copy = moved.clone();
  moved = Trace{};  // the clone must not point into the trace it came from
  ASSERT_EQ(copy.events.size(), 1u);
  EXPECT_EQ(copy.events[0].name, "kernel_name");
  EXPECT_EQ(copy.events[0].pid, TrackId::fromText("gpu"));
  EXPECT_EQ(copy.events[0].args, R"({"k":1})");
  EXPECT_TRUE(copy.text.owns(copy.events[0].name));
}

TEST(TraceModelTest, TextStoreCopiesLargeAndSmallTexts) {
  TextStore store;
  std::string big(600000, 'x');
  std::string_view small = store.copy("abc");
  std::string_view large = store.copy(big);
  std::string_view after = store.copy("def");
  big.assign(big.size(), 'y');
  EXPECT_EQ(small, "abc");
  EXPECT_EQ(large, std::string(600000, 'x'));
  EXPECT_EQ(after, "def");
  EXPECT_TRUE(store.owns(large));
  EXPECT_FALSE(store.owns(std::string_view(big)));
  EXPECT_TRUE(store.copy("").empty());
}

TEST(TraceModelTest, FlowStartBindsToEnclosingSliceAndEndToNextSlice) {
  Trace trace = importOrDie(R"([
    {"ph":"X","name":"outer","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","name":"launch","pid":1,"tid":1,"ts":10,"dur":5},
    {"ph":"s","name":"f","cat":"c","id":1,"pid":1,"tid":1,"ts":12},
    {"ph":"X","name":"kernel","pid":2,"tid":7,"ts":50,"dur":10},
    {"ph":"f","name":"f","cat":"c","id":1,"pid":2,"tid":7,"ts":40},
    {"ph":"s","name":"f","cat":"c","id":2,"pid":1,"tid":1,"ts":20},
    {"ph":"f","name":"f","cat":"c","id":2,"bp":"e","pid":2,"tid":7,"ts":55},
    {"ph":"t","name":"f","cat":"c","id":3,"pid":3,"tid":3,"ts":1}
  ])");
  std::vector<FlowBinding> bindings = bindFlows(trace);
  ASSERT_EQ(bindings.size(), 5u);
  EXPECT_EQ(bindings[0].slice, 1);   // s inside launch (innermost), not outer
  EXPECT_EQ(bindings[1].slice, 3);   // f without bp: next slice on its thread
  EXPECT_EQ(bindings[2].slice, 0);   // s at 20: only outer encloses it
  EXPECT_EQ(bindings[3].slice, 3);   // f with bp=e inside kernel
  EXPECT_EQ(bindings[4].slice, -1);  // nothing on that thread
  std::vector<FlowChain> chains = flowChains(trace);
  ASSERT_EQ(chains.size(), 3u);
  EXPECT_EQ(chains[0].id, "1");
  ASSERT_EQ(chains[0].steps.size(), 2u);
  EXPECT_EQ(trace.events[chains[0].steps[0].slice].name, "launch");
  EXPECT_EQ(trace.events[chains[0].steps[1].slice].name, "kernel");
}

TEST(TraceModelTest, NotJsonReportsLineColumnAndByteOffsetOfTheProblem) {
  StatusOr<Trace> trace = importChromeTraceText(R"({"traceEvents":[{"ph":"X","ts":1} {"ph":"X"}]})", "bad.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.message().find("bad.json:1:35: error:"), std::string::npos) << trace.message();
  EXPECT_NE(trace.message().find("(at byte offset 34)"), std::string::npos) << trace.message();
}

}  // namespace
}  // namespace fusionscope::profiler
