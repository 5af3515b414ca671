// Trace meaning the viewer draws and the CLI reports alike: tracks and their order, slice nesting, async pairing
// with steps, counter series (profiler/trace/trace_tracks.h).
#include "profiler/trace/trace_tracks.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/trace/chrome_json_import.h"
#include "tests/profiler/trace_testing.h"

namespace fusionscope::profiler {
namespace {

using fusionscope::testing::importOrDie;

std::vector<std::string> titles(const TraceTracks& tracks) {
  std::vector<std::string> out;
  for (const TraceTrack& t : tracks.tracks) out.push_back(t.processTitle + " / " + t.title);
  return out;
}

TEST(TraceTracksTest, TitlesUseNamesAndIds) {
  EXPECT_EQ(trackText(TrackId::fromNumber(7)), "7");
  EXPECT_EQ(trackText(TrackId::fromText("Spans")), "Spans");
  EXPECT_EQ(trackTitle("stream 7", TrackId::fromNumber(7)), "stream 7 (7)");
  EXPECT_EQ(trackTitle("", TrackId::fromNumber(7)), "7");
  EXPECT_EQ(trackTitle("7", TrackId::fromNumber(7)), "7");
}

// Processes by sort index then pid; in one process the threads by sort index then tid, then "async", then counters
// by name. A thread with only instants still has a track; flows and unmatched ends are on none.
TEST(TraceTracksTest, DisplayOrderFollowsSortIndices) {
  const Trace trace = importOrDie(R"([
{"ph":"M","pid":1,"name":"process_name","args":{"name":"host"}},
{"ph":"M","pid":2,"name":"process_name","args":{"name":"gpu"}},
{"ph":"M","pid":2,"name":"process_sort_index","args":{"sort_index":-1}},
{"ph":"M","pid":1,"tid":5,"name":"thread_name","args":{"name":"main"}},
{"ph":"M","pid":1,"tid":9,"name":"thread_sort_index","args":{"sort_index":0}},
{"ph":"X","name":"a","pid":1,"tid":5,"ts":0,"dur":10},
{"ph":"X","name":"b","pid":1,"tid":9,"ts":0,"dur":10},
{"ph":"i","name":"mark","pid":1,"tid":3,"ts":4,"s":"t"},
{"ph":"C","name":"zmem","pid":1,"ts":1,"args":{"v":1}},
{"ph":"C","name":"amem","pid":1,"ts":1,"args":{"v":1}},
{"ph":"b","cat":"c","name":"req","id":"1","pid":1,"tid":5,"ts":2},
{"ph":"e","cat":"c","name":"req","id":"1","pid":1,"tid":5,"ts":3},
{"ph":"X","name":"k","pid":2,"tid":7,"ts":0,"dur":1},
{"ph":"s","name":"flow","id":"1","pid":1,"tid":5,"ts":1},
{"ph":"E","pid":1,"tid":5,"ts":50}])");
  const TraceTracks tracks = traceTracks(trace);
  EXPECT_EQ(titles(tracks),
            (std::vector<std::string>{"gpu (2) / 7", "host (1) / 9", "host (1) / 3", "host (1) / main (5)",
                                      "host (1) / async", "host (1) / amem", "host (1) / zmem"}));
  EXPECT_EQ(tracks.tracks[2].kind, TrackKind::kThread);
  EXPECT_TRUE(tracks.tracks[2].items.empty());
  EXPECT_EQ(tracks.tracks[2].instants.size(), 1u);
  EXPECT_EQ(tracks.tracks[4].kind, TrackKind::kAsync);
  EXPECT_EQ(tracks.tracks[5].kind, TrackKind::kCounter);
}

// An item sits one below the innermost slice still open at its start; on equal starts the longer encloses.
TEST(TraceTracksTest, SlicesNestByDepth) {
  const Trace trace = importOrDie(R"([
{"ph":"X","name":"inner","pid":1,"tid":1,"ts":0,"dur":5},
{"ph":"X","name":"outer","pid":1,"tid":1,"ts":0,"dur":20},
{"ph":"X","name":"deep","pid":1,"tid":1,"ts":1,"dur":2},
{"ph":"X","name":"next","pid":1,"tid":1,"ts":5,"dur":5},
{"ph":"X","name":"after","pid":1,"tid":1,"ts":20,"dur":1}])");
  const TraceTracks tracks = traceTracks(trace);
  ASSERT_EQ(tracks.tracks.size(), 1u);
  const TraceTrack& t = tracks.tracks[0];
  std::vector<std::string> names;
  for (uint32_t i : t.items) names.emplace_back(trace.events[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"outer", "inner", "deep", "next", "after"}));
  EXPECT_EQ(t.depths, (std::vector<uint16_t>{0, 1, 2, 1, 0}));
}

// S/F pair by (pid, cat, name, id), b/e by (pid, cat, id) and nest; steps join the innermost open span with their
// key when they lie within it. Unfinished spans, finishes and steps with nothing open pair with nothing.
TEST(TraceTracksTest, AsyncSpansPairWithTheirSteps) {
  const Trace trace = importOrDie(R"([
{"ph":"S","cat":"io","name":"load","id":"1","pid":0,"tid":1,"ts":0},
{"ph":"T","cat":"io","name":"load","id":"1","pid":0,"tid":1,"ts":10},
{"ph":"F","cat":"io","name":"load","id":"1","pid":0,"tid":1,"ts":40},
{"ph":"b","cat":"net","name":"outer","id":"9","pid":0,"tid":1,"ts":5},
{"ph":"b","cat":"net","name":"inner","id":"9","pid":0,"tid":2,"ts":6},
{"ph":"n","cat":"net","name":"retry","id":"9","pid":0,"tid":1,"ts":7},
{"ph":"e","cat":"net","name":"inner","id":"9","pid":0,"tid":2,"ts":8},
{"ph":"e","cat":"net","name":"outer","id":"9","pid":0,"tid":1,"ts":30},
{"ph":"F","cat":"io","name":"load","id":"2","pid":0,"tid":1,"ts":3},
{"ph":"S","cat":"io","name":"open","id":"3","pid":0,"tid":1,"ts":1},
{"ph":"T","cat":"io","name":"open","id":"3","pid":0,"tid":1,"ts":2},
{"ph":"S","cat":"io","name":"load","id":"1","pid":1,"tid":1,"ts":50},
{"ph":"F","cat":"io","name":"load","id":"1","pid":1,"tid":1,"ts":45}])");
  const AsyncSpans async = pairAsyncSpans(trace);
  ASSERT_EQ(async.spans.size(), 3u);  // in finish order: inner, outer, load
  EXPECT_EQ(trace.events[async.spans[0].begin].name, "inner");
  EXPECT_EQ(async.spans[0].stepCount, 1u);  // "retry" belongs to the innermost open b with id 9
  EXPECT_EQ(trace.events[async.steps[async.spans[0].firstStep]].name, "retry");
  EXPECT_EQ(trace.events[async.spans[1].begin].name, "outer");
  EXPECT_EQ(async.spans[1].stepCount, 0u);
  EXPECT_EQ(async.spans[2].startNs, 0);
  EXPECT_EQ(async.spans[2].endNs, 40000);
  EXPECT_EQ(async.spans[2].stepCount, 1u);
  // Not paired: the F with id 2, the unfinished "open" and its step, and pid 1's F written before its S (in time
  // order the F comes first and finds nothing open).
  EXPECT_EQ(async.pairedEvents, (2 + 1) + 2 + (2 + 1));

  const TraceTracks tracks = traceTracks(trace);
  ASSERT_EQ(tracks.tracks.size(), 1u);  // pid 0's async track; pid 1 has no span
  EXPECT_EQ(tracks.tracks[0].items.size(), 3u);
  EXPECT_EQ(tracks.tracks[0].depths, (std::vector<uint16_t>{0, 1, 2}));  // load, outer, inner
}

// Counter series: one per args key (counterValues), in the order first seen; a sample without a series' key has 0
// for it.
TEST(TraceTracksTest, CounterSeriesFromArgs) {
  const Trace trace = importOrDie(R"([
{"ph":"C","name":"mem","pid":1,"ts":2,"args":{"used":5,"free":"3"}},
{"ph":"C","name":"mem","pid":1,"ts":1,"args":{"used":1}},
{"ph":"C","name":"mem","pid":1,"ts":3,"args":{"cached":2.5,"used":"x"}}])");
  const TraceTracks tracks = traceTracks(trace);
  ASSERT_EQ(tracks.tracks.size(), 1u);
  const TraceTrack& t = tracks.tracks[0];
  EXPECT_EQ(t.series, (std::vector<std::string>{"used", "free", "cached"}));
  ASSERT_EQ(t.samples.size(), 3u);
  EXPECT_EQ(t.samples[0].tsNs, 1000);
  EXPECT_EQ(t.samples[0].values, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(t.samples[1].values, (std::vector<double>{5, 3, 0}));
  EXPECT_EQ(t.samples[2].values, (std::vector<double>{0, 0, 2.5}));
}

}  // namespace
}  // namespace fusionscope::profiler
