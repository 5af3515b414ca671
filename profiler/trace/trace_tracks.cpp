#include "profiler/trace/trace_tracks.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "profiler/trace/event_args.h"

namespace fusionscope::profiler {
namespace {

// Depths of items sorted by start: an item goes one row below the innermost open one. Items at the same depth never
// overlap because a depth is reused only after its previous item ended.
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

// A counter track's series and samples from its C events (sorted by ts).
void readCounterSamples(const Trace& trace, TraceTrack& track) {
  std::map<std::string, size_t> seriesIndex;
  for (uint32_t i : track.items) {
    CounterSample sample;
    sample.tsNs = trace.events[i].tsNs;
    sample.values.assign(track.series.size(), 0.0);
    for (auto& [key, value] : counterValues(trace.events[i].args)) {
      auto [pos, added] = seriesIndex.emplace(key, track.series.size());
      if (added) {
        track.series.push_back(key);
        sample.values.push_back(0.0);
      }
      sample.values[pos->second] = value;
    }
    track.samples.push_back(std::move(sample));
  }
  for (CounterSample& s : track.samples) s.values.resize(track.series.size(), 0.0);
}

}  // namespace

std::string trackText(const TrackId& id) {
  return id.isText ? std::string(id.text) : std::to_string(id.number);
}

std::string trackTitle(const std::string& name, const TrackId& id) {
  const std::string idText = trackText(id);
  if (name.empty() || name == idText) return idText;
  return name + " (" + idText + ")";
}

AsyncSpans pairAsyncSpans(const Trace& trace) {
  const std::vector<TraceEvent>& events = trace.events;
  AsyncSpans result;
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < events.size(); ++i) {
    const PhaseKind kind = phaseKind(events[i].phase);
    if (kind == PhaseKind::kAsync || kind == PhaseKind::kLegacyAsync) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return events[a].tsNs < events[b].tsNs; });

  // Open spans by (pid, cat, name, id); b/e nest, so each key keeps a stack.
  std::map<std::tuple<TrackId, std::string_view, std::string_view, std::string_view>, std::vector<uint32_t>> open;
  std::unordered_map<uint32_t, std::vector<uint32_t>> pendingSteps;  // begin event -> its steps so far
  for (uint32_t i : order) {
    const TraceEvent& e = events[i];
    const char p = e.phase;
    const bool legacy = p == 'S' || p == 'F' || p == 'T' || p == 'p';
    if (!legacy && p != 'b' && p != 'e' && p != 'n') continue;
    auto key = std::make_tuple(e.pid, e.cat, legacy ? e.name : std::string_view{}, e.id);
    if (p == 'S' || p == 'b') {
      open[key].push_back(i);
      continue;
    }
    auto it = open.find(key);
    if (it == open.end() || it->second.empty()) continue;
    if (p == 'T' || p == 'p' || p == 'n') {
      pendingSteps[it->second.back()].push_back(i);
      continue;
    }
    const uint32_t begin = it->second.back();
    it->second.pop_back();
    const int64_t start = events[begin].tsNs;
    const int64_t end = std::max(start, e.tsNs);
    AsyncSpan span{begin, start, end, static_cast<uint32_t>(result.steps.size()), 0};
    if (auto steps = pendingSteps.find(begin); steps != pendingSteps.end()) {
      for (uint32_t step : steps->second) {
        if (events[step].tsNs < start || events[step].tsNs > end) continue;
        result.steps.push_back(step);
        ++span.stepCount;
      }
      pendingSteps.erase(steps);
    }
    result.spans.push_back(span);
    result.pairedEvents += 2 + span.stepCount;
  }
  return result;
}

TraceTracks traceTracks(const Trace& trace) {
  const std::vector<TraceEvent>& events = trace.events;
  TraceTracks result;
  result.async = pairAsyncSpans(trace);
  const std::vector<AsyncSpan>& spans = result.async.spans;

  // Group events into tracks first; tracks are created in display order afterwards.
  std::map<std::pair<TrackId, TrackId>, std::vector<uint32_t>> threadSlices;
  std::map<std::pair<TrackId, TrackId>, std::vector<uint32_t>> threadInstants;
  std::map<std::pair<TrackId, std::string_view>, std::vector<uint32_t>> counters;
  std::map<TrackId, std::vector<uint32_t>> processAsync;  // span indices
  for (uint32_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    switch (phaseKind(e.phase)) {
      case PhaseKind::kComplete: threadSlices[{e.pid, e.tid}].push_back(i); break;
      case PhaseKind::kInstant: threadInstants[{e.pid, e.tid}].push_back(i); break;
      case PhaseKind::kCounter: counters[{e.pid, e.name}].push_back(i); break;
      default: break;
    }
  }
  for (uint32_t s = 0; s < spans.size(); ++s) processAsync[events[spans[s].begin].pid].push_back(s);

  // Display order: processes by (sort index, pid), their threads by (sort index, tid), then async and counters.
  std::map<TrackId, int> processSeen;
  auto noteProcess = [&](const TrackId& pid) { processSeen.emplace(pid, 0); };
  for (const auto& [key, list] : threadSlices) noteProcess(key.first);
  for (const auto& [key, list] : threadInstants) noteProcess(key.first);
  for (const auto& [key, list] : counters) noteProcess(key.first);
  for (const auto& [key, list] : processAsync) noteProcess(key);
  auto processSort = [&](const TrackId& pid) {
    auto it = trace.processes.find(pid);
    return it != trace.processes.end() && it->second.sortIndex ? *it->second.sortIndex
                                                               : std::numeric_limits<int64_t>::max();
  };
  std::vector<TrackId> processes;
  for (const auto& [pid, unused] : processSeen) processes.push_back(pid);
  std::stable_sort(processes.begin(), processes.end(),
                   [&](const TrackId& a, const TrackId& b) { return processSort(a) < processSort(b); });

  const TrackId lowestTid{std::numeric_limits<int64_t>::min(), {}, false};
  for (const TrackId& pid : processes) {
    auto process = trace.processes.find(pid);
    const std::string processTitle =
        trackTitle(process != trace.processes.end() ? process->second.name : std::string(), pid);
    std::vector<TrackId> tids;
    for (auto it = threadSlices.lower_bound({pid, lowestTid}); it != threadSlices.end() && it->first.first == pid; ++it)
      tids.push_back(it->first.second);
    for (auto it = threadInstants.lower_bound({pid, lowestTid}); it != threadInstants.end() && it->first.first == pid;
         ++it)
      if (!threadSlices.count(it->first)) tids.push_back(it->first.second);
    auto threadSort = [&](const TrackId& tid) {
      auto it = trace.threads.find({pid, tid});
      return it != trace.threads.end() && it->second.sortIndex ? *it->second.sortIndex
                                                               : std::numeric_limits<int64_t>::max();
    };
    std::sort(tids.begin(), tids.end(), [&](const TrackId& a, const TrackId& b) {
      const int64_t sa = threadSort(a), sb = threadSort(b);
      return sa != sb ? sa < sb : a < b;
    });

    for (const TrackId& tid : tids) {
      TraceTrack track;
      track.kind = TrackKind::kThread;
      track.pid = pid;
      track.tid = tid;
      track.processTitle = processTitle;
      auto info = trace.threads.find({pid, tid});
      track.title = trackTitle(info != trace.threads.end() ? info->second.name : std::string(), tid);
      if (auto slices = threadSlices.find({pid, tid}); slices != threadSlices.end()) {
        track.items = std::move(slices->second);
        std::sort(track.items.begin(), track.items.end(), [&](uint32_t a, uint32_t b) {
          const TraceEvent& ea = events[a];
          const TraceEvent& eb = events[b];
          if (ea.tsNs != eb.tsNs) return ea.tsNs < eb.tsNs;
          if (ea.durNs != eb.durNs) return ea.durNs > eb.durNs;  // the enclosing slice first
          return a < b;
        });
        track.depths = assignDepths(
            track.items, [&](uint32_t i) { return events[i].tsNs; }, [&](uint32_t i) { return events[i].endNs(); });
      }
      if (auto instants = threadInstants.find({pid, tid}); instants != threadInstants.end()) {
        track.instants = std::move(instants->second);
        std::stable_sort(track.instants.begin(), track.instants.end(),
                         [&](uint32_t a, uint32_t b) { return events[a].tsNs < events[b].tsNs; });
      }
      result.tracks.push_back(std::move(track));
    }

    if (auto async = processAsync.find(pid); async != processAsync.end()) {
      TraceTrack track;
      track.kind = TrackKind::kAsync;
      track.pid = pid;
      track.processTitle = processTitle;
      track.title = "async";
      track.items = std::move(async->second);
      std::sort(track.items.begin(), track.items.end(), [&](uint32_t a, uint32_t b) {
        if (spans[a].startNs != spans[b].startNs) return spans[a].startNs < spans[b].startNs;
        return spans[a].endNs > spans[b].endNs;
      });
      track.depths = assignDepths(
          track.items, [&](uint32_t i) { return spans[i].startNs; }, [&](uint32_t i) { return spans[i].endNs; });
      result.tracks.push_back(std::move(track));
    }

    for (auto it = counters.lower_bound({pid, std::string_view{}}); it != counters.end() && it->first.first == pid;
         ++it) {
      TraceTrack track;
      track.kind = TrackKind::kCounter;
      track.pid = pid;
      track.processTitle = processTitle;
      track.title = std::string(it->first.second);
      track.items = std::move(it->second);
      std::stable_sort(track.items.begin(), track.items.end(),
                       [&](uint32_t a, uint32_t b) { return events[a].tsNs < events[b].tsNs; });
      readCounterSamples(trace, track);
      result.tracks.push_back(std::move(track));
    }
  }
  return result;
}

}  // namespace fusionscope::profiler
