#include "viewer/timeline_model.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "profiler/trace/chrome_json_import.h"
#include "profiler/trace/event_args.h"
#include "profiler/trace/flow_binding.h"
#include "profiler/trace/kernel_events.h"

namespace fusionscope::viewer {
namespace {

using profiler::PhaseKind;
using profiler::TrackId;

std::string trackIdText(const TrackId& id) {
  return id.isText ? std::string(id.text) : std::to_string(id.number);
}

bool containsNoCase(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return true;
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != haystack.end();
}

// Rows of non-overlapping intervals: an item goes one row below the innermost open one. Items at the same depth
// never overlap because a row is reused only after its previous item ended.
template <typename StartFn, typename EndFn>
std::vector<uint16_t> assignDepths(const std::vector<uint32_t>& sortedItems, StartFn start, EndFn end) {
  std::vector<uint16_t> depths(sortedItems.size());
  std::vector<int64_t> open;  // end times of the open items, innermost last
  for (size_t i = 0; i < sortedItems.size(); ++i) {
    const int64_t s = start(sortedItems[i]);
    while (!open.empty() && open.back() <= s) open.pop_back();
    depths[i] = static_cast<uint16_t>(std::min<size_t>(open.size(), std::numeric_limits<uint16_t>::max() - 1));
    open.push_back(std::max(end(sortedItems[i]), s));
  }
  return depths;
}

void appendToRow(TimelineLane::Row& row, uint32_t item, int64_t start, int64_t end) {
  row.items.push_back(item);
  row.starts.push_back(start);
  row.ends.push_back(end);
}

}  // namespace

std::string trackTitle(const std::string& name, const TrackId& id) {
  const std::string idText = trackIdText(id);
  if (name.empty() || name == idText) return idText;
  return name + " (" + idText + ")";
}

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

  // Group events into tracks first; lanes are created in display order afterwards.
  std::map<std::pair<TrackId, TrackId>, std::vector<uint32_t>> threadSlices;
  std::map<std::pair<TrackId, TrackId>, std::vector<uint32_t>> threadInstants;
  std::map<std::pair<TrackId, std::string_view>, std::vector<uint32_t>> counters;
  std::map<TrackId, std::vector<uint32_t>> processAsync;  // async slice indices
  // Open async spans by (pid, cat, name, id); b/e nest, so each key keeps a stack.
  std::map<std::tuple<TrackId, std::string_view, std::string_view, std::string_view>, std::vector<uint32_t>> openAsync;

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
  std::vector<uint32_t> asyncOrder;  // async events, sorted by ts below
  for (uint32_t i = 0; i < events.size(); ++i) {
    const profiler::TraceEvent& e = events[i];
    switch (profiler::phaseKind(e.phase)) {
      case PhaseKind::kComplete:
        threadSlices[{e.pid, e.tid}].push_back(i);
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
        threadInstants[{e.pid, e.tid}].push_back(i);
        ++m_instantCount;
        extend(e.tsNs, e.tsNs);
        break;
      case PhaseKind::kCounter:
        counters[{e.pid, e.name}].push_back(i);
        ++m_counterSamples;
        extend(e.tsNs, e.tsNs);
        break;
      case PhaseKind::kFlow: ++m_flowEvents; break;
      case PhaseKind::kAsync:
      case PhaseKind::kLegacyAsync:
        ++m_asyncEvents;
        asyncOrder.push_back(i);
        break;
      default: ++m_undrawn; break;
    }
  }

  // Async spans: pair starts (S, b) with finishes (F, e) in timestamp order. Steps (T/p of an S/F span, n of a
  // b/e span) belong to the innermost open span with their key and become markers on it once it finishes; steps
  // of a span that never finishes stay counted as undrawn, like the span itself.
  std::stable_sort(asyncOrder.begin(), asyncOrder.end(),
                   [&](uint32_t a, uint32_t b) { return events[a].tsNs < events[b].tsNs; });
  int64_t pairedAsyncEvents = 0;
  std::unordered_map<uint32_t, std::vector<uint32_t>> pendingSteps;  // begin event -> its steps so far
  for (uint32_t i : asyncOrder) {
    const profiler::TraceEvent& e = events[i];
    const char p = e.phase;
    const bool legacy = p == 'S' || p == 'F' || p == 'T' || p == 'p';
    if (!legacy && p != 'b' && p != 'e' && p != 'n') continue;
    auto key = std::make_tuple(e.pid, e.cat, legacy ? e.name : std::string_view{}, e.id);
    if (p == 'S' || p == 'b') {
      openAsync[key].push_back(i);
      continue;
    }
    auto it = openAsync.find(key);
    if (it == openAsync.end() || it->second.empty()) continue;
    if (p == 'T' || p == 'p' || p == 'n') {
      pendingSteps[it->second.back()].push_back(i);
      continue;
    }
    const uint32_t begin = it->second.back();
    it->second.pop_back();
    const int64_t start = events[begin].tsNs;
    const int64_t end = std::max(start, e.tsNs);
    AsyncSlice slice{begin, start, end, static_cast<uint32_t>(m_asyncSteps.size()), 0};
    if (auto steps = pendingSteps.find(begin); steps != pendingSteps.end()) {
      for (uint32_t step : steps->second) {
        if (events[step].tsNs < start || events[step].tsNs > end) continue;
        m_asyncSteps.push_back(step);
        ++slice.stepCount;
      }
      pendingSteps.erase(steps);
    }
    m_async.push_back(slice);
    processAsync[events[begin].pid].push_back(static_cast<uint32_t>(m_async.size() - 1));
    pairedAsyncEvents += 2 + slice.stepCount;
    extend(start, end);
  }
  m_undrawn += m_asyncEvents - pairedAsyncEvents;

  if (m_startNs > m_endNs) m_startNs = m_endNs = 0;
  m_firstKernelNs = firstKernel != std::numeric_limits<int64_t>::max()
                        ? firstKernel
                        : (firstSlice != std::numeric_limits<int64_t>::max() ? firstSlice : m_startNs);
  m_lastKernelEndNs = lastKernelEnd != std::numeric_limits<int64_t>::min()
                          ? lastKernelEnd
                          : (lastSliceEnd != std::numeric_limits<int64_t>::min() ? lastSliceEnd : m_endNs);

  // Display order: processes by (sort index, pid), their threads by (sort index, tid), then async and counters.
  std::map<TrackId, int> processSeen;
  auto noteProcess = [&](const TrackId& pid) { processSeen.emplace(pid, 0); };
  for (const auto& [key, list] : threadSlices) noteProcess(key.first);
  for (const auto& [key, list] : threadInstants) noteProcess(key.first);
  for (const auto& [key, list] : counters) noteProcess(key.first);
  for (const auto& [key, list] : processAsync) noteProcess(key);
  auto processSort = [&](const TrackId& pid) {
    auto it = m_trace.processes.find(pid);
    return it != m_trace.processes.end() && it->second.sortIndex ? *it->second.sortIndex
                                                                 : std::numeric_limits<int64_t>::max();
  };
  std::vector<TrackId> processes;
  for (const auto& [pid, unused] : processSeen) processes.push_back(pid);
  std::stable_sort(processes.begin(), processes.end(),
                   [&](const TrackId& a, const TrackId& b) { return processSort(a) < processSort(b); });

  auto processTitleOf = [&](const TrackId& pid) {
    auto it = m_trace.processes.find(pid);
    return trackTitle(it != m_trace.processes.end() ? it->second.name : std::string(), pid);
  };

  for (const TrackId& pid : processes) {
    const std::string processTitle = processTitleOf(pid);
    std::vector<TrackId> tids;
    for (auto it = threadSlices.lower_bound({pid, TrackId{std::numeric_limits<int64_t>::min(), {}, false}});
         it != threadSlices.end() && it->first.first == pid; ++it)
      tids.push_back(it->first.second);
    for (auto it = threadInstants.lower_bound({pid, TrackId{std::numeric_limits<int64_t>::min(), {}, false}});
         it != threadInstants.end() && it->first.first == pid; ++it)
      if (!threadSlices.count(it->first)) tids.push_back(it->first.second);
    auto threadSort = [&](const TrackId& tid) {
      auto it = m_trace.threads.find({pid, tid});
      return it != m_trace.threads.end() && it->second.sortIndex ? *it->second.sortIndex
                                                                 : std::numeric_limits<int64_t>::max();
    };
    std::sort(tids.begin(), tids.end(), [&](const TrackId& a, const TrackId& b) {
      const int64_t sa = threadSort(a), sb = threadSort(b);
      return sa != sb ? sa < sb : a < b;
    });

    for (const TrackId& tid : tids) {
      TimelineLane lane;
      lane.kind = LaneKind::kSlices;
      lane.pid = pid;
      lane.tid = tid;
      lane.processTitle = processTitle;
      auto info = m_trace.threads.find({pid, tid});
      lane.title = trackTitle(info != m_trace.threads.end() ? info->second.name : std::string(), tid);
      const int laneIndex = static_cast<int>(m_lanes.size());

      auto slices = threadSlices.find({pid, tid});
      if (slices != threadSlices.end()) {
        std::vector<uint32_t>& list = slices->second;
        std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
          const auto& ea = events[a];
          const auto& eb = events[b];
          if (ea.tsNs != eb.tsNs) return ea.tsNs < eb.tsNs;
          if (ea.durNs != eb.durNs) return ea.durNs > eb.durNs;  // the enclosing slice first
          return a < b;
        });
        const std::vector<uint16_t> depths = assignDepths(
            list, [&](uint32_t i) { return events[i].tsNs; }, [&](uint32_t i) { return events[i].endNs(); });
        for (size_t k = 0; k < list.size(); ++k) {
          const uint16_t depth = depths[k];
          if (lane.rows.size() <= depth) lane.rows.resize(depth + 1);
          appendToRow(lane.rows[depth], list[k], events[list[k]].tsNs, events[list[k]].endNs());
          m_eventLane[list[k]] = laneIndex;
          m_eventDepth[list[k]] = depth;
        }
      }
      if (lane.rows.empty()) lane.rows.resize(1);
      auto instants = threadInstants.find({pid, tid});
      if (instants != threadInstants.end()) {
        std::vector<uint32_t>& list = instants->second;
        std::stable_sort(list.begin(), list.end(),
                         [&](uint32_t a, uint32_t b) { return events[a].tsNs < events[b].tsNs; });
        lane.instants = list;
        for (uint32_t i : list) {
          lane.instantTs.push_back(events[i].tsNs);
          m_eventLane[i] = laneIndex;
        }
      }
      m_lanes.push_back(std::move(lane));
    }

    auto async = processAsync.find(pid);
    if (async != processAsync.end()) {
      TimelineLane lane;
      lane.kind = LaneKind::kAsync;
      lane.pid = pid;
      lane.processTitle = processTitle;
      lane.title = "async";
      std::vector<uint32_t>& list = async->second;
      std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
        if (m_async[a].startNs != m_async[b].startNs) return m_async[a].startNs < m_async[b].startNs;
        return m_async[a].endNs > m_async[b].endNs;
      });
      const std::vector<uint16_t> depths = assignDepths(
          list, [&](uint32_t i) { return m_async[i].startNs; }, [&](uint32_t i) { return m_async[i].endNs; });
      for (size_t k = 0; k < list.size(); ++k) {
        if (lane.rows.size() <= depths[k]) lane.rows.resize(depths[k] + 1);
        appendToRow(lane.rows[depths[k]], list[k], m_async[list[k]].startNs, m_async[list[k]].endNs);
      }
      m_lanes.push_back(std::move(lane));
    }

    for (auto it = counters.lower_bound({pid, std::string_view{}}); it != counters.end() && it->first.first == pid;
         ++it) {
      TimelineLane lane;
      lane.kind = LaneKind::kCounter;
      lane.pid = pid;
      lane.processTitle = processTitle;
      lane.title = std::string(it->first.second);
      std::vector<uint32_t>& list = it->second;
      std::stable_sort(list.begin(), list.end(),
                       [&](uint32_t a, uint32_t b) { return events[a].tsNs < events[b].tsNs; });
      std::map<std::string, size_t> seriesIndex;
      for (uint32_t i : list) {
        CounterSample sample;
        sample.tsNs = events[i].tsNs;
        sample.values.assign(lane.series.size(), 0.0);
        for (auto& [key, value] : profiler::counterValues(events[i].args)) {
          auto [pos, added] = seriesIndex.emplace(key, lane.series.size());
          if (added) {
            lane.series.push_back(key);
            sample.values.push_back(0.0);
          }
          sample.values[pos->second] = value;
        }
        double stacked = 0;
        for (double v : sample.values) stacked += std::max(0.0, v);
        lane.counterMax = std::max(lane.counterMax, stacked);
        lane.samples.push_back(std::move(sample));
      }
      for (CounterSample& s : lane.samples) s.values.resize(lane.series.size(), 0.0);
      m_lanes.push_back(std::move(lane));
    }
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
  return lane.kind == LaneKind::kAsync ? m_async[item].begin : item;
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
