#include "profiler/trace/flow_binding.h"

#include <algorithm>
#include <climits>
#include <map>
#include <tuple>

namespace fusionscope::profiler {
namespace {

using ThreadKey = std::pair<TrackId, TrackId>;

// The complete slices of one thread sorted by start (longer first on ties, so outer slices precede inner ones).
// prefixMaxEnd[k] is the latest end among byStart[0..k], which bounds the backwards search for an enclosing slice.
struct ThreadSlices {
  std::vector<size_t> byStart;
  std::vector<int64_t> prefixMaxEnd;
};

int64_t enclosingSlice(const Trace& trace, const ThreadSlices& slices, int64_t ts) {
  // Candidates start at or before ts; the innermost enclosing one is the latest-starting one that still covers ts.
  // Slices on one thread nest, so walking back from the last start <= ts finds it quickly in practice.
  auto last = std::upper_bound(slices.byStart.begin(), slices.byStart.end(), ts,
                               [&](int64_t value, size_t index) { return value < trace.events[index].tsNs; });
  int64_t best = -1;
  int64_t bestDur = 0;
  for (auto it = last; it != slices.byStart.begin();) {
    --it;
    if (slices.prefixMaxEnd[static_cast<size_t>(it - slices.byStart.begin())] < ts) break;  // nothing earlier covers ts
    const TraceEvent& slice = trace.events[*it];
    if (slice.tsNs <= ts && ts <= slice.tsNs + slice.durNs) {
      if (best < 0 || slice.durNs < bestDur) {
        best = static_cast<int64_t>(*it);
        bestDur = slice.durNs;
      }
      // Anything that starts earlier and encloses ts also encloses this slice (nesting), so it is not innermost.
      break;
    }
  }
  return best;
}

int64_t nextSlice(const Trace& trace, const ThreadSlices& slices, int64_t ts) {
  auto first = std::lower_bound(slices.byStart.begin(), slices.byStart.end(), ts,
                                [&](size_t index, int64_t value) { return trace.events[index].tsNs < value; });
  return first == slices.byStart.end() ? -1 : static_cast<int64_t>(*first);
}

}  // namespace

std::vector<FlowBinding> bindFlows(const Trace& trace) {
  std::map<ThreadKey, ThreadSlices> threads;
  bool anyFlow = false;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (event.phase == 'X') threads[{event.pid, event.tid}].byStart.push_back(i);
    anyFlow = anyFlow || phaseKind(event.phase) == PhaseKind::kFlow;
  }
  std::vector<FlowBinding> bindings;
  if (!anyFlow) return bindings;
  for (auto& [key, slices] : threads) {
    std::stable_sort(slices.byStart.begin(), slices.byStart.end(), [&](size_t a, size_t b) {
      const TraceEvent& x = trace.events[a];
      const TraceEvent& y = trace.events[b];
      return x.tsNs != y.tsNs ? x.tsNs < y.tsNs : x.durNs > y.durNs;
    });
    int64_t maxEnd = INT64_MIN;
    slices.prefixMaxEnd.reserve(slices.byStart.size());
    for (size_t index : slices.byStart) {
      maxEnd = std::max(maxEnd, trace.events[index].tsNs + trace.events[index].durNs);
      slices.prefixMaxEnd.push_back(maxEnd);
    }
  }
  static const ThreadSlices kNone;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (phaseKind(event.phase) != PhaseKind::kFlow) continue;
    auto found = threads.find({event.pid, event.tid});
    const ThreadSlices& slices = found == threads.end() ? kNone : found->second;
    bool enclosing = event.phase != 'f' || event.bp == "e";
    FlowBinding binding{i,
                        enclosing ? enclosingSlice(trace, slices, event.tsNs) : nextSlice(trace, slices, event.tsNs)};
    bindings.push_back(binding);
  }
  return bindings;
}

std::vector<FlowChain> flowChains(const Trace& trace) {
  std::vector<FlowChain> chains;
  std::map<std::tuple<std::string_view, std::string_view, std::string_view>, size_t> index;
  for (const FlowBinding& binding : bindFlows(trace)) {
    const TraceEvent& event = trace.events[binding.flow];
    auto [it, inserted] = index.try_emplace({event.cat, event.name, event.id}, chains.size());
    if (inserted) chains.push_back(FlowChain{event.cat, event.name, event.id, {}});
    chains[it->second].steps.push_back(binding);
  }
  for (FlowChain& chain : chains) {
    std::stable_sort(chain.steps.begin(), chain.steps.end(), [&](const FlowBinding& a, const FlowBinding& b) {
      return trace.events[a.flow].tsNs < trace.events[b.flow].tsNs;
    });
  }
  return chains;
}

}  // namespace fusionscope::profiler
