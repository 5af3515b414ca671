#include "viewer/timeline_model.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <unordered_map>

#include "profiler/trace/chrome_json_import.h"
#include "profiler/trace/flow_binding.h"
#include "profiler/trace/kernel_events.h"

namespace fusionscope::viewer {
namespace {

using profiler::PhaseKind;
using profiler::TrackId;

bool containsNoCase(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return true;
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != haystack.end();
}

void appendToRow(TimelineLane::Row& row, uint32_t item, int64_t start, int64_t end) {
  row.items.push_back(item);
  row.starts.push_back(start);
  row.ends.push_back(end);
}

}  // namespace

TimelineModel::TimelineModel(profiler::Trace trace) : m_trace(std::move(trace)), m_instructions(m_trace) {
  build();
}

size_t TimelineModel::sliceLaneCount() const {
  return static_cast<size_t>(
      std::count_if(m_lanes.begin(), m_lanes.end(), [](const TimelineLane& l) { return l.kind == LaneKind::kSlices; }));
}

void TimelineModel::build() {
  const std::vector<profiler::TraceEvent>& events = m_trace.events;
  m_eventLane.assign(events.size(), -1);
  m_eventDepth.assign(events.size(), 0);

  m_startNs = std::numeric_limits<int64_t>::max();
  m_endNs = std::numeric_limits<int64_t>::min();
  int64_t firstKernel = std::numeric_limits<int64_t>::max();
  int64_t firstSlice = std::numeric_limits<int64_t>::max();
  int64_t lastKernelEnd = std::numeric_limits<int64_t>::min();
  int64_t lastSliceEnd = std::numeric_limits<int64_t>::min();
  auto extend = [&](int64_t from, int64_t to) {
    m_startNs = std::min(m_startNs, from);
    m_endNs = std::max(m_endNs, to);
  };

  const profiler::KernelClassifier kernels(m_trace);
  for (uint32_t i = 0; i < events.size(); ++i) {
    const profiler::TraceEvent& e = events[i];
    switch (profiler::phaseKind(e.phase)) {
      case PhaseKind::kComplete:
        ++m_sliceCount;
        extend(e.tsNs, e.endNs());
        firstSlice = std::min(firstSlice, e.tsNs);
        lastSliceEnd = std::max(lastSliceEnd, e.endNs());
        if (kernels.isKernel(i)) {
          firstKernel = std::min(firstKernel, e.tsNs);
          lastKernelEnd = std::max(lastKernelEnd, e.endNs());
        }
        break;
      case PhaseKind::kInstant:
        ++m_instantCount;
        extend(e.tsNs, e.tsNs);
        break;
      case PhaseKind::kCounter:
        ++m_counterSamples;
        extend(e.tsNs, e.tsNs);
        break;
      case PhaseKind::kFlow: ++m_flowEvents; break;
      case PhaseKind::kAsync:
      case PhaseKind::kLegacyAsync: ++m_asyncEvents; break;
      default: ++m_undrawn; break;
    }
  }

  // What the tracks are, which async events pair and how slices nest is fs_profiler's decision; the model only
  // arranges it into rows for drawing. Steps of a span that never finishes stay counted as undrawn, like the span.
  profiler::TraceTracks tracks = profiler::traceTracks(m_trace);
  m_async = std::move(tracks.async);
  for (const AsyncSlice& span : m_async.spans) extend(span.startNs, span.endNs);
  m_undrawn += m_asyncEvents - m_async.pairedEvents;

  if (m_startNs > m_endNs) m_startNs = m_endNs = 0;
  m_firstKernelNs = firstKernel != std::numeric_limits<int64_t>::max()
                        ? firstKernel
                        : (firstSlice != std::numeric_limits<int64_t>::max() ? firstSlice : m_startNs);
  m_lastKernelEndNs = lastKernelEnd != std::numeric_limits<int64_t>::min()
                          ? lastKernelEnd
                          : (lastSliceEnd != std::numeric_limits<int64_t>::min() ? lastSliceEnd : m_endNs);

  for (profiler::TraceTrack& track : tracks.tracks) {
    TimelineLane lane;
    lane.pid = track.pid;
    lane.tid = track.tid;
    lane.title = std::move(track.title);
    lane.processTitle = std::move(track.processTitle);
    const int laneIndex = static_cast<int>(m_lanes.size());
    switch (track.kind) {
      case profiler::TrackKind::kThread:
        lane.kind = LaneKind::kSlices;
        for (size_t k = 0; k < track.items.size(); ++k) {
          const uint32_t event = track.items[k];
          const uint16_t depth = track.depths[k];
          if (lane.rows.size() <= depth) lane.rows.resize(depth + 1);
          appendToRow(lane.rows[depth], event, events[event].tsNs, events[event].endNs());
          m_eventLane[event] = laneIndex;
          m_eventDepth[event] = depth;
        }
        if (lane.rows.empty()) lane.rows.resize(1);
        lane.instants = std::move(track.instants);
        for (uint32_t i : lane.instants) {
          lane.instantTs.push_back(events[i].tsNs);
          m_eventLane[i] = laneIndex;
        }
        break;
      case profiler::TrackKind::kAsync:
        lane.kind = LaneKind::kAsync;
        for (size_t k = 0; k < track.items.size(); ++k) {
          const AsyncSlice& span = m_async.spans[track.items[k]];
          if (lane.rows.size() <= track.depths[k]) lane.rows.resize(track.depths[k] + 1);
          appendToRow(lane.rows[track.depths[k]], track.items[k], span.startNs, span.endNs);
        }
        break;
      case profiler::TrackKind::kCounter:
        lane.kind = LaneKind::kCounter;
        lane.series = std::move(track.series);
        lane.samples = std::move(track.samples);
        // Samples are drawn stacked: the scale is the largest sum of a sample's positive values.
        for (const CounterSample& sample : lane.samples) {
          double stacked = 0;
          for (double v : sample.values) stacked += std::max(0.0, v);
          lane.counterMax = std::max(lane.counterMax, stacked);
        }
        break;
    }
    m_lanes.push_back(std::move(lane));
  }

  // Flows: consecutive steps of a chain whose events bound to slices become arrows.
  for (const profiler::FlowChain& chain : profiler::flowChains(m_trace)) {
    int64_t previous = -1;
    for (const profiler::FlowBinding& step : chain.steps) {
      if (step.slice < 0) continue;
      if (previous >= 0 && previous != step.slice)
        m_flows.push_back(FlowArrow{static_cast<uint32_t>(previous), static_cast<uint32_t>(step.slice)});
      previous = step.slice;
    }
  }
  auto flowStart = [&](const FlowArrow& f) { return std::min(events[f.from].tsNs, events[f.to].tsNs); };
  std::stable_sort(m_flows.begin(), m_flows.end(),
                   [&](const FlowArrow& a, const FlowArrow& b) { return flowStart(a) < flowStart(b); });
  m_flowStarts.reserve(m_flows.size());
  for (const FlowArrow& f : m_flows) {
    const int64_t start = flowStart(f);
    m_flowStarts.push_back(start);
    m_maxFlowSpan = std::max(m_maxFlowSpan, std::max(events[f.from].endNs(), events[f.to].endNs()) - start);
  }
}

std::pair<size_t, size_t> TimelineModel::flowsInRange(int64_t fromNs, int64_t toNs) const {
  const auto lo = std::lower_bound(m_flowStarts.begin(), m_flowStarts.end(), fromNs - m_maxFlowSpan);
  const auto hi = std::upper_bound(lo, m_flowStarts.end(), toNs);
  return {static_cast<size_t>(lo - m_flowStarts.begin()), static_cast<size_t>(hi - m_flowStarts.begin())};
}

void TimelineModel::runs(int laneIndex, int rowIndex, int64_t fromNs, int64_t toNs, double nsPerPixel,
                         std::vector<SliceRun>& out) const {
  out.clear();
  if (laneIndex < 0 || laneIndex >= static_cast<int>(m_lanes.size())) return;
  const TimelineLane& lane = m_lanes[laneIndex];
  if (rowIndex < 0 || rowIndex >= static_cast<int>(lane.rows.size())) return;
  const TimelineLane::Row& row = lane.rows[rowIndex];
  const size_t n = row.items.size();
  const int64_t pixel = std::max<int64_t>(1, static_cast<int64_t>(nsPerPixel));
  // Ends are sorted too (intervals in a row are disjoint and sorted by start).
  size_t i = static_cast<size_t>(std::upper_bound(row.ends.begin(), row.ends.end(), fromNs) - row.ends.begin());
  // Zero-length slices ending exactly at fromNs are still visible.
  while (i > 0 && row.ends[i - 1] == fromNs && row.starts[i - 1] == fromNs) --i;
  while (i < n && row.starts[i] < toNs) {
    const int64_t boundary = std::max(row.ends[i], row.starts[i] + pixel);
    size_t j = static_cast<size_t>(
        std::lower_bound(row.starts.begin() + static_cast<std::ptrdiff_t>(i) + 1, row.starts.end(), boundary) -
        row.starts.begin());
    // Do not swallow a slice that is itself at least a pixel wide: it gets its own box.
    if (j > i + 1 && row.ends[j - 1] - row.starts[j - 1] >= pixel) --j;
    out.push_back(SliceRun{row.starts[i], row.ends[j - 1], static_cast<uint32_t>(j - i), row.items[i]});
    i = j;
  }
}

int64_t TimelineModel::itemAt(int laneIndex, int rowIndex, int64_t ns, int64_t slackNs) const {
  if (laneIndex < 0 || laneIndex >= static_cast<int>(m_lanes.size())) return -1;
  const TimelineLane& lane = m_lanes[laneIndex];
  if (rowIndex < 0 || rowIndex >= static_cast<int>(lane.rows.size())) return -1;
  const TimelineLane::Row& row = lane.rows[rowIndex];
  // The last item starting at or before ns + slack; then check it (and its predecessor) for containment.
  auto it = std::upper_bound(row.starts.begin(), row.starts.end(), ns + slackNs);
  size_t k = static_cast<size_t>(it - row.starts.begin());
  int64_t best = -1;
  int64_t bestDistance = std::numeric_limits<int64_t>::max();
  for (size_t c = k; c > 0 && c + 2 > k; --c) {
    const size_t idx = c - 1;
    const int64_t distance =
        ns < row.starts[idx] ? row.starts[idx] - ns : (ns > row.ends[idx] ? ns - row.ends[idx] : 0);
    if (distance <= slackNs && distance < bestDistance) {
      best = static_cast<int64_t>(row.items[idx]);
      bestDistance = distance;
    }
  }
  return best;
}

std::string_view TimelineModel::itemName(const TimelineLane& lane, uint32_t item) const {
  return m_trace.events[itemEvent(lane, item)].name;
}

uint32_t TimelineModel::itemEvent(const TimelineLane& lane, uint32_t item) const {
  return lane.kind == LaneKind::kAsync ? m_async.spans[item].begin : item;
}

std::vector<uint32_t> TimelineModel::search(std::string_view text) const {
  std::vector<uint32_t> found;
  if (text.empty()) return found;
  for (uint32_t i = 0; i < m_trace.events.size(); ++i)
    if (containsNoCase(m_trace.events[i].name, text)) found.push_back(i);
  return found;
}

RangeSummary TimelineModel::summarize(int64_t fromNs, int64_t toNs) const {
  RangeSummary summary;
  summary.fromNs = std::min(fromNs, toNs);
  summary.toNs = std::max(fromNs, toNs);
  std::unordered_map<std::string_view, RangeSummary::Name> names;
  for (const TimelineLane& lane : m_lanes) {
    if (lane.kind != LaneKind::kSlices) continue;
    for (const TimelineLane::Row& row : lane.rows) {
      size_t i =
          static_cast<size_t>(std::upper_bound(row.ends.begin(), row.ends.end(), summary.fromNs) - row.ends.begin());
      while (i > 0 && row.ends[i - 1] == summary.fromNs && row.starts[i - 1] == summary.fromNs) --i;
      for (; i < row.items.size() && row.starts[i] < summary.toNs; ++i) {
        const profiler::TraceEvent& e = m_trace.events[row.items[i]];
        const int64_t dur = std::max<int64_t>(0, e.durNs);
        ++summary.count;
        summary.totalNs += dur;
        RangeSummary::Name& n = names[e.name];
        ++n.count;
        n.totalNs += dur;
      }
    }
  }
  for (auto& [name, entry] : names) {
    entry.name = std::string(name);
    summary.byName.push_back(std::move(entry));
  }
  std::sort(summary.byName.begin(), summary.byName.end(), [](const RangeSummary::Name& a, const RangeSummary::Name& b) {
    return a.totalNs != b.totalNs ? a.totalNs > b.totalNs : a.name < b.name;
  });
  return summary;
}

std::string_view TimelineModel::instructionOf(uint32_t event) const {
  return m_instructions.instructionOf(m_trace, event);
}

std::vector<uint32_t> TimelineModel::eventsOfInstruction(std::string_view instruction) const {
  return m_instructions.eventsOfInstruction(m_trace, instruction);
}

std::vector<uint32_t> TimelineModel::eventsNamed(std::string_view name) const {
  return profiler::eventsNamed(m_trace, name);
}

}  // namespace fusionscope::viewer

namespace fusionscope::viewer {

StatusOr<std::shared_ptr<const TimelineModel>> loadTimeline(const std::string& path) {
  StatusOr<profiler::Trace> trace = profiler::importChromeTrace(path);
  if (!trace.ok()) return trace.status();
  if (trace->events.empty()) return Status::error(path + ": error: no trace events in the file");
  return std::shared_ptr<const TimelineModel>(std::make_shared<TimelineModel>(std::move(*trace)));
}

}  // namespace fusionscope::viewer
