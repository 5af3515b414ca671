#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/trace/kernel_events.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

// Durations of one group of events, in ns. Percentiles are nearest-rank.
struct DurationStats {
  int64_t count = 0;
  int64_t totalNs = 0;
  int64_t minNs = 0;
  int64_t maxNs = 0;
  int64_t p50Ns = 0;
  int64_t p90Ns = 0;
  int64_t p99Ns = 0;
  double meanNs() const { return count ? static_cast<double>(totalNs) / static_cast<double>(count) : 0.0; }
};

// Builds DurationStats from durations (sorted in place).
DurationStats durationStats(std::vector<int64_t>& durations);

struct NameStats {
  std::string name;
  std::string cat;
  DurationStats durations;
  int64_t bytes = 0;  // bytes moved according to the events' args (see TraceStats::bytes)
};

// Busy/idle time of one device track (pid, tid): busy is the union of its device events, idle the rest of the span
// from its first start to its last end.
struct TrackUtilisation {
  TrackId pid;
  TrackId tid;
  int64_t busyNs = 0;
  int64_t idleNs = 0;
  int64_t events = 0;
};

// What `fusionscope-cli stats` reports. When the trace has kernels, `names` covers kernels only (the device view);
// otherwise every complete event, so that CPU-only traces still get a useful table.
struct TraceStats {
  bool kernelsOnly = false;
  int64_t completeEvents = 0;
  int64_t kernelCount = 0;
  int64_t kernelTimeNs = 0;
  int64_t deviceTimeNs = 0;
  std::vector<NameStats> names;               // by total time, longest first
  std::map<std::string, int64_t> categoryNs;  // device time per category
  std::vector<TrackUtilisation> tracks;
  int64_t busyNs = 0;  // summed over device tracks
  int64_t idleNs = 0;
  // Gaps between consecutive device events on one track (end of one to start of the next; overlaps count as 0).
  DurationStats gaps;
  // Bytes moved by device events, from args: "bytes" (Kineto copies/memsets), or "bytes_read" + "bytes_written"
  // (the CPU runner and our GPU runner's kernels; also spelt "bytes read"/"bytes written", as
  // `fusionscope-cli run --trace` writes them). Events without these count 0.
  int64_t bytes = 0;
  int64_t eventsWithBytes = 0;
  int64_t spanNs = 0;  // first device (or any complete) event start to last end
  // Device time inside each iteration of a repeated run, in time order: the complete events of category
  // "iteration" (`fusionscope-cli run --trace` writes one per iteration) each sum the device work that starts and
  // ends within them. Empty when the trace marks no iterations.
  std::vector<int64_t> iterationDeviceNs;
};

// How much one run's device time per iteration differs: the median and the range of the ratios of the `before`
// run's iterations to the `after` run's, paired in order (iteration i with iteration i); count 0 when either has
// fewer than two iterations.
struct IterationSpread {
  int count = 0;
  double median = 0;
  double min = 0;
  double max = 0;
};
IterationSpread iterationSpeedups(const TraceStats& before, const TraceStats& after);

TraceStats computeStats(const Trace& trace);

// Human-readable report; `top` limits the per-name table.
std::string statsText(const TraceStats& stats, size_t top = 20);
// The same as one JSON object (all times in ns).
std::string statsJson(const TraceStats& stats);

// "1.234 ms" style formatting shared by the reports.
std::string formatNs(int64_t ns);
std::string formatBytes(int64_t bytes);

}  // namespace fusionscope::profiler
