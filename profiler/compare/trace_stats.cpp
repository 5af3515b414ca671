#include "profiler/compare/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "profiler/compare/report_json.h"

namespace fusionscope::profiler {

DurationStats durationStats(std::vector<int64_t>& durations) {
  DurationStats stats;
  if (durations.empty()) return stats;
  std::sort(durations.begin(), durations.end());
  auto rank = [&](double p) {
    size_t index = static_cast<size_t>(std::max(1.0, std::ceil(p * static_cast<double>(durations.size())))) - 1;
    return durations[std::min(index, durations.size() - 1)];
  };
  stats.count = static_cast<int64_t>(durations.size());
  for (int64_t d : durations) stats.totalNs += d;
  stats.minNs = durations.front();
  stats.maxNs = durations.back();
  stats.p50Ns = rank(0.50);
  stats.p90Ns = rank(0.90);
  stats.p99Ns = rank(0.99);
  return stats;
}

TraceStats computeStats(const Trace& trace) {
  TraceStats stats;
  const KernelClassifier kernels(trace);
  for (const TraceEvent& event : trace.events) stats.completeEvents += event.phase == 'X' ? 1 : 0;
  stats.kernelCount = kernels.kernelCount();
  stats.kernelsOnly = stats.kernelCount > 0;

  struct Group {
    std::vector<int64_t> durations;
    int64_t bytes = 0;
  };
  std::map<std::pair<std::string_view, std::string_view>, Group> groups;
  std::map<std::pair<TrackId, TrackId>, std::vector<std::pair<int64_t, int64_t>>> deviceIntervals;
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  bool anyDevice = false;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (event.phase != 'X') continue;
    bool kernel = kernels.isKernel(i);
    bool device = kernels.isDeviceWork(i);
    anyDevice = anyDevice || device;
    int64_t bytes = device ? argsBytes(event.args) : 0;
    if (!stats.kernelsOnly || kernel) {
      Group& group = groups[{event.name, event.cat}];
      group.durations.push_back(event.durNs);
      group.bytes += bytes;
    }
    if (kernel) stats.kernelTimeNs += event.durNs;
    if (device) {
      stats.deviceTimeNs += event.durNs;
      // XLA's kernels have no category; what makes them kernels is their hlo_op.
      stats.categoryNs[event.cat.empty() ? std::string("(xla op)") : std::string(event.cat)] += event.durNs;
      deviceIntervals[{event.pid, event.tid}].emplace_back(event.tsNs, event.endNs());
      stats.bytes += bytes;
      if (bytes > 0) ++stats.eventsWithBytes;
    }
  }
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (event.phase != 'X' || (anyDevice && !kernels.isDeviceWork(i))) continue;
    first = std::min(first, event.tsNs);
    last = std::max(last, event.endNs());
  }
  stats.spanNs = first <= last ? last - first : 0;

  for (auto& [key, group] : groups) {
    NameStats named{std::string(key.first), std::string(key.second), durationStats(group.durations), group.bytes};
    stats.names.push_back(std::move(named));
  }
  std::sort(stats.names.begin(), stats.names.end(), [](const NameStats& a, const NameStats& b) {
    return std::tie(b.durations.totalNs, a.name) < std::tie(a.durations.totalNs, b.name);
  });

  std::vector<int64_t> gaps;
  for (auto& [key, intervals] : deviceIntervals) {
    std::sort(intervals.begin(), intervals.end());
    TrackUtilisation track{key.first, key.second, 0, 0, static_cast<int64_t>(intervals.size())};
    int64_t start = intervals.front().first;
    int64_t end = intervals.front().second;
    int64_t coveredEnd = intervals.front().second;
    for (size_t i = 1; i < intervals.size(); ++i) {
      auto [s, e] = intervals[i];
      gaps.push_back(std::max<int64_t>(0, s - coveredEnd));
      if (s > end) {
        track.busyNs += end - start;
        start = s;
        end = e;
      } else {
        end = std::max(end, e);
      }
      coveredEnd = std::max(coveredEnd, e);
    }
    track.busyNs += end - start;
    track.idleNs = (coveredEnd - intervals.front().first) - track.busyNs;
    stats.busyNs += track.busyNs;
    stats.idleNs += track.idleNs;
    stats.tracks.push_back(track);
  }
  stats.gaps = durationStats(gaps);

  std::vector<std::pair<int64_t, int64_t>> iterations;  // (start, end)
  std::vector<std::tuple<int64_t, int64_t, int64_t>> work;  // (start, end, duration) of device events
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (event.phase != 'X') continue;
    if (event.cat == "iteration") iterations.emplace_back(event.tsNs, event.endNs());
    if (kernels.isDeviceWork(i)) work.emplace_back(event.tsNs, event.endNs(), event.durNs);
  }
  std::sort(iterations.begin(), iterations.end());
  std::sort(work.begin(), work.end());
  for (const auto& [start, end] : iterations) {
    int64_t ns = 0;
    auto it = std::lower_bound(work.begin(), work.end(), std::make_tuple(start, INT64_MIN, INT64_MIN));
    for (; it != work.end() && std::get<0>(*it) < end; ++it) {
      if (std::get<1>(*it) <= end) ns += std::get<2>(*it);
    }
    stats.iterationDeviceNs.push_back(ns);
  }
  return stats;
}

IterationSpread iterationSpeedups(const TraceStats& before, const TraceStats& after) {
  IterationSpread spread;
  const size_t n = std::min(before.iterationDeviceNs.size(), after.iterationDeviceNs.size());
  if (n < 2) return spread;
  std::vector<double> ratios;
  for (size_t i = 0; i < n; ++i) {
    if (after.iterationDeviceNs[i] <= 0 || before.iterationDeviceNs[i] <= 0) continue;
    ratios.push_back(static_cast<double>(before.iterationDeviceNs[i]) / static_cast<double>(after.iterationDeviceNs[i]));
  }
  if (ratios.size() < 2) return spread;
  std::sort(ratios.begin(), ratios.end());
  spread.count = static_cast<int>(ratios.size());
  spread.min = ratios.front();
  spread.max = ratios.back();
  const size_t mid = ratios.size() / 2;
  spread.median = ratios.size() % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
  return spread;
}

std::string formatNs(int64_t ns) {
  char buffer[64];
  double value = static_cast<double>(ns);
  if (ns < 0) value = -value;
  const char* sign = ns < 0 ? "-" : "";
  if (value >= 1e9) {
    std::snprintf(buffer, sizeof buffer, "%s%.3f s", sign, value / 1e9);
  } else if (value >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%s%.3f ms", sign, value / 1e6);
  } else if (value >= 1e3) {
    std::snprintf(buffer, sizeof buffer, "%s%.3f us", sign, value / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%s%lld ns", sign, static_cast<long long>(value));
  }
  return buffer;
}

std::string formatBytes(int64_t bytes) {
  char buffer[64];
  double value = static_cast<double>(bytes);
  if (value >= 1e9) {
    std::snprintf(buffer, sizeof buffer, "%.2f GB", value / 1e9);
  } else if (value >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.2f MB", value / 1e6);
  } else if (value >= 1e3) {
    std::snprintf(buffer, sizeof buffer, "%.2f kB", value / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
  }
  return buffer;
}

std::string statsText(const TraceStats& stats, size_t top) {
  std::string out;
  char line[512];
  auto add = [&](const std::string& text) { out += text + "\n"; };
  add("complete events: " + std::to_string(stats.completeEvents) + ", kernels: " + std::to_string(stats.kernelCount));
  if (stats.kernelCount > 0) add("kernel time: " + formatNs(stats.kernelTimeNs));
  if (stats.deviceTimeNs > 0) {
    add("device time: " + formatNs(stats.deviceTimeNs) + " over a span of " + formatNs(stats.spanNs));
    for (const auto& [cat, ns] : stats.categoryNs) add("  " + cat + ": " + formatNs(ns));
    int64_t total = stats.busyNs + stats.idleNs;
    std::snprintf(line, sizeof line, "busy %s, idle %s (%.1f %% busy) over %zu device track(s)",
                  formatNs(stats.busyNs).c_str(), formatNs(stats.idleNs).c_str(),
                  total > 0 ? 100.0 * static_cast<double>(stats.busyNs) / static_cast<double>(total) : 0.0,
                  stats.tracks.size());
    add(line);
    if (stats.gaps.count > 0) {
      add("launch gaps: " + std::to_string(stats.gaps.count) + ", total " + formatNs(stats.gaps.totalNs) + ", p50 " +
          formatNs(stats.gaps.p50Ns) + ", p90 " + formatNs(stats.gaps.p90Ns) + ", max " + formatNs(stats.gaps.maxNs));
    }
    add("bytes moved: " + formatBytes(stats.bytes) + " (from " + std::to_string(stats.eventsWithBytes) +
        " events with byte counts)");
  } else {
    add("span: " + formatNs(stats.spanNs) + " (no device events)");
  }
  add(stats.kernelsOnly ? "kernels by total time:" : "complete events by total time:");
  std::snprintf(line, sizeof line, "  %8s %12s %12s %12s %12s %12s  %s", "count", "total", "mean", "p50", "p90", "p99",
                "name");
  add(line);
  for (size_t i = 0; i < stats.names.size() && i < top; ++i) {
    const NameStats& n = stats.names[i];
    std::snprintf(line, sizeof line, "  %8lld %12s %12s %12s %12s %12s  %s", static_cast<long long>(n.durations.count),
                  formatNs(n.durations.totalNs).c_str(), formatNs(static_cast<int64_t>(n.durations.meanNs())).c_str(),
                  formatNs(n.durations.p50Ns).c_str(), formatNs(n.durations.p90Ns).c_str(),
                  formatNs(n.durations.p99Ns).c_str(), n.name.substr(0, 160).c_str());
    add(line);
  }
  if (stats.names.size() > top) add("  ... " + std::to_string(stats.names.size() - top) + " more");
  return out;
}

nlohmann::json durationsJson(const DurationStats& d) {
  return {{"count", d.count},  {"total_ns", d.totalNs}, {"mean_ns", d.meanNs()}, {"min_ns", d.minNs},
          {"max_ns", d.maxNs}, {"p50_ns", d.p50Ns},     {"p90_ns", d.p90Ns},     {"p99_ns", d.p99Ns}};
}

nlohmann::json statsToJson(const TraceStats& stats) {
  nlohmann::json names = nlohmann::json::array();
  for (const NameStats& n : stats.names) {
    names.push_back({{"name", n.name}, {"cat", n.cat}, {"bytes", n.bytes}, {"durations", durationsJson(n.durations)}});
  }
  nlohmann::json tracks = nlohmann::json::array();
  for (const TrackUtilisation& t : stats.tracks) {
    tracks.push_back({{"pid", trackText(t.pid)},
                      {"tid", trackText(t.tid)},
                      {"busy_ns", t.busyNs},
                      {"idle_ns", t.idleNs},
                      {"events", t.events}});
  }
  return {{"complete_events", stats.completeEvents},
          {"kernel_count", stats.kernelCount},
          {"kernel_time_ns", stats.kernelTimeNs},
          {"device_time_ns", stats.deviceTimeNs},
          {"category_ns", stats.categoryNs},
          {"busy_ns", stats.busyNs},
          {"idle_ns", stats.idleNs},
          {"span_ns", stats.spanNs},
          {"gaps", durationsJson(stats.gaps)},
          {"bytes", stats.bytes},
          {"events_with_bytes", stats.eventsWithBytes},
          {"names_are_kernels", stats.kernelsOnly},
          {"names", names},
          {"tracks", tracks}};
}

std::string statsJson(const TraceStats& stats) {
  return statsToJson(stats).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace fusionscope::profiler
