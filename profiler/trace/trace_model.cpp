#include "profiler/trace/trace_model.h"

#include <algorithm>
#include <tuple>

namespace fusionscope::profiler {
namespace {

bool isEmptyObject(std::string_view json) {
  if (json.empty()) return true;
  size_t first = json.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || json[first] != '{') return false;
  size_t second = json.find_first_not_of(" \t\r\n", first + 1);
  return second != std::string_view::npos && json[second] == '}';
}

// Chrome shows the union of B and E args on the slice; doing it textually keeps both verbatim.
void mergeArgs(std::string& begin, const std::string& end) {
  if (isEmptyObject(end)) return;
  if (isEmptyObject(begin)) {
    begin = end;
    return;
  }
  size_t close = begin.find_last_of('}');
  size_t open = end.find_first_of('{');
  if (close == std::string::npos || open == std::string::npos) return;
  begin.erase(close);
  begin += ',';
  begin.append(end, open + 1);
}

}  // namespace

PhaseKind phaseKind(char phase) {
  switch (phase) {
    case 'X': return PhaseKind::kComplete;
    case 'B': return PhaseKind::kBegin;
    case 'E': return PhaseKind::kEnd;
    case 'i':
    case 'I': return PhaseKind::kInstant;
    case 'C': return PhaseKind::kCounter;
    case 'M': return PhaseKind::kMetadata;
    case 's':
    case 't':
    case 'f': return PhaseKind::kFlow;
    case 'b':
    case 'e':
    case 'n': return PhaseKind::kAsync;
    case 'S':
    case 'T':
    case 'F': return PhaseKind::kLegacyAsync;
    default: return PhaseKind::kOther;
  }
}

int64_t ImportStats::skippedTotal() const {
  int64_t total = 0;
  for (const auto& [reason, count] : skipped) total += count;
  return total;
}

void matchBeginEnd(Trace& trace) {
  std::vector<size_t> order;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    char ph = trace.events[i].phase;
    if (ph == 'B' || ph == 'E') order.push_back(i);
  }
  if (order.empty()) return;
  // Traces are usually sorted per thread already, but nothing in the format promises it.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TraceEvent& x = trace.events[a];
    const TraceEvent& y = trace.events[b];
    return std::tie(x.pid, x.tid, x.tsNs) < std::tie(y.pid, y.tid, y.tsNs);
  });

  std::vector<bool> remove(trace.events.size(), false);
  std::vector<size_t> open;
  for (size_t k = 0; k < order.size(); ++k) {
    const TraceEvent& current = trace.events[order[k]];
    if (k > 0) {
      const TraceEvent& previous = trace.events[order[k - 1]];
      if (previous.pid != current.pid || previous.tid != current.tid) {
        trace.stats.unmatchedBegin += static_cast<int64_t>(open.size());
        open.clear();
      }
    }
    if (current.phase == 'B') {
      open.push_back(order[k]);
      continue;
    }
    if (open.empty()) {
      ++trace.stats.unmatchedEnd;
      continue;
    }
    TraceEvent& begin = trace.events[open.back()];
    open.pop_back();
    begin.phase = 'X';
    begin.durNs = current.tsNs - begin.tsNs;
    begin.fromBeginEnd = true;
    mergeArgs(begin.args, current.args);
    remove[order[k]] = true;
    ++trace.stats.matchedBeginEnd;
  }
  trace.stats.unmatchedBegin += static_cast<int64_t>(open.size());

  size_t out = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (remove[i]) continue;
    if (out != i) trace.events[out] = std::move(trace.events[i]);
    ++out;
  }
  trace.events.resize(out);
}

}  // namespace fusionscope::profiler
