#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "profiler/trace/kernel_events.h"
#include "profiler/trace/trace_model.h"
#include "profiler/trace/trace_tracks.h"

namespace fusionscope::viewer {

// What kind of data a lane holds: one lane per profiler::TraceTrack (profiler/trace/trace_tracks.h decides the
// tracks, their order, async pairing, nesting depths and counter series). Slice lanes are one per (pid, tid) with
// nested rows (depth); async lanes one per process for S/F and b/e pairs; counter lanes one per (pid, counter name).
enum class LaneKind { kSlices, kAsync, kCounter };

using CounterSample = profiler::CounterSample;  // values: one per TimelineLane::series

// One horizontal lane, a profiler::TraceTrack arranged for drawing. Rows hold indices into Trace::events (or, for async
// lanes, into TimelineModel::asyncSlices) sorted by start; within one row the intervals never overlap, which is what
// makes the level-of-detail query a sequence of binary searches.
struct TimelineLane {
  LaneKind kind = LaneKind::kSlices;
  profiler::TrackId pid;
  profiler::TrackId tid;
  std::string title;  // "process name (pid)" / "thread name (tid)"
  std::string processTitle;
  struct Row {
    std::vector<uint32_t> items;
    std::vector<int64_t> starts;
    std::vector<int64_t> ends;
  };
  std::vector<Row> rows;
  std::vector<uint32_t> instants;  // event indices of instant events on this thread, by ts
  std::vector<int64_t> instantTs;
  // Counters.
  std::vector<std::string> series;
  std::vector<CounterSample> samples;  // by ts
  double counterMax = 0;
};

// An async span as fs_profiler paired it (profiler::pairAsyncSpans); its steps are TimelineModel::asyncSteps()
// [firstStep, firstStep + stepCount), by time.
using AsyncSlice = profiler::AsyncSpan;

// One drawable box of a row at a given resolution: a single event, or several events merged because they are
// closer than a pixel (level-of-detail aggregation).
struct SliceRun {
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint32_t count = 0;
  uint32_t item = 0;  // the first item of the run (event index, or async slice index)
};

struct FlowArrow {
  uint32_t from = 0;  // event indices of the bound slices
  uint32_t to = 0;
};

// Summary of the slices intersecting a time range (box selection).
struct RangeSummary {
  int64_t fromNs = 0;
  int64_t toNs = 0;
  int64_t count = 0;
  int64_t totalNs = 0;  // summed wall durations of those slices
  struct Name {
    std::string name;
    int64_t count = 0;
    int64_t totalNs = 0;
  };
  std::vector<Name> byName;  // longest total first
};

// The timeline's data model over one imported Trace: lanes in the trace's sort order (process sort index, then
// pid; thread sort index, then tid; counters after the threads of their process), slices nested by depth, counters,
// flows and instants. It owns the Trace and is immutable once built, so it can be built on a worker thread and
// shared with the GUI. The level-of-detail query (`runs`) lives here, as in Qt Creator's TimelineModel: the
// renderer only draws what it returns.
class TimelineModel {
 public:
  explicit TimelineModel(profiler::Trace trace);

  const profiler::Trace& trace() const { return m_trace; }
  const std::vector<TimelineLane>& lanes() const { return m_lanes; }
  const std::vector<AsyncSlice>& asyncSlices() const { return m_async.spans; }
  // Event indices of the async steps drawn as markers on their span (see AsyncSlice).
  const std::vector<uint32_t>& asyncSteps() const { return m_async.steps; }
  // Flow arrows sorted by the earlier of their two slices' starts.
  const std::vector<FlowArrow>& flows() const { return m_flows; }
  // The flows [first, last) that may touch [fromNs, toNs): O(log n), so a frame can count them before drawing.
  std::pair<size_t, size_t> flowsInRange(int64_t fromNs, int64_t toNs) const;

  int64_t startNs() const { return m_startNs; }
  int64_t endNs() const { return m_endNs; }
  // Start of the first kernel event (profiler::KernelClassifier), or of the first slice when there is none: the
  // point two traces are aligned at in a comparison.
  int64_t firstKernelNs() const { return m_firstKernelNs; }
  // End of the last kernel event (or of the last slice when there is none).
  int64_t lastKernelEndNs() const { return m_lastKernelEndNs; }

  // Counts of what the model shows, by kind; together with `undrawn` they add up to trace().events.size().
  int64_t sliceCount() const { return m_sliceCount; }
  int64_t instantCount() const { return m_instantCount; }
  int64_t counterSampleCount() const { return m_counterSamples; }
  int64_t flowEventCount() const { return m_flowEvents; }
  int64_t asyncEventCount() const { return m_asyncEvents; }
  int64_t undrawnCount() const { return m_undrawn; }  // object events (N/O/D), unmatched B/E, unpaired async
  int64_t asyncStepCount() const { return static_cast<int64_t>(m_async.steps.size()); }  // drawn as markers
  size_t sliceLaneCount() const;

  // Where an event is drawn: lane and row (depth), or lane -1 when it is not a slice.
  int laneOf(uint32_t event) const { return m_eventLane[event]; }
  int depthOf(uint32_t event) const { return m_eventDepth[event]; }

  // Level of detail: the boxes of one row intersecting [fromNs, toNs) at `nsPerPixel`. Events that would be less
  // than a pixel apart are merged into one run; a run never swallows an event wider than a pixel. The work is
  // O(runs · log n), independent of how many events the range holds.
  void runs(int lane, int row, int64_t fromNs, int64_t toNs, double nsPerPixel, std::vector<SliceRun>& out) const;

  // The event (or async slice) at `ns` in a row, with `slackNs` of tolerance; -1 when none.
  int64_t itemAt(int lane, int row, int64_t ns, int64_t slackNs) const;

  // Name, start and end of a row item (event or async slice).
  std::string_view itemName(const TimelineLane& lane, uint32_t item) const;
  uint32_t itemEvent(const TimelineLane& lane, uint32_t item) const;

  // Every event (any phase) whose name contains `text`, case-insensitively; in event order.
  std::vector<uint32_t> search(std::string_view text) const;
  // Slices (complete events, every lane) intersecting [fromNs, toNs).
  RangeSummary summarize(int64_t fromNs, int64_t toNs) const;
  // Complete events whose kernel name (profiler::normalizeKernelName) equals normalize(name): profiler::eventsNamed.
  std::vector<uint32_t> eventsNamed(std::string_view name) const;
  // The HLO instruction a complete event ran (profiler::InstructionIndex: its args' "hlo_op" or "instruction" when
  // present, else its name). Kernels are linked to the graph by this.
  std::string_view instructionOf(uint32_t event) const;
  // Complete events that ran `instruction` (profiler::InstructionIndex::eventsOfInstruction): an event with an
  // "hlo_op" arg matches by that arg only, so a PTX kernel named differently still links to its fusion.
  std::vector<uint32_t> eventsOfInstruction(std::string_view instruction) const;

 private:
  void build();

  profiler::Trace m_trace;
  profiler::InstructionIndex m_instructions;  // built from m_trace, declared after it
  std::vector<TimelineLane> m_lanes;
  profiler::AsyncSpans m_async;
  std::vector<FlowArrow> m_flows;
  std::vector<int64_t> m_flowStarts;  // per flow: min start of its two slices
  int64_t m_maxFlowSpan = 0;          // longest (max end - min start) over flows
  std::vector<int32_t> m_eventLane;
  std::vector<uint16_t> m_eventDepth;
  int64_t m_startNs = 0;
  int64_t m_endNs = 0;
  int64_t m_firstKernelNs = 0;
  int64_t m_lastKernelEndNs = 0;
  int64_t m_sliceCount = 0;
  int64_t m_instantCount = 0;
  int64_t m_counterSamples = 0;
  int64_t m_flowEvents = 0;
  int64_t m_asyncEvents = 0;
  int64_t m_undrawn = 0;
};

}  // namespace fusionscope::viewer

namespace fusionscope::viewer {

// Imports a Chrome trace (.json or .json.gz) and builds its model; the importer's error (file and byte offset)
// on failure. Safe to call on a worker thread.
StatusOr<std::shared_ptr<const TimelineModel>> loadTimeline(const std::string& path);

}  // namespace fusionscope::viewer
