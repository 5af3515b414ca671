#pragma once

#include <cstdint>
#include <vector>

#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

// Which slice a flow event (s/t/f) attaches to, following the Chrome trace format: a flow start or step binds to
// the enclosing slice on its thread (the innermost complete slice whose [ts, ts+dur] contains the flow's ts); a
// flow end binds to the enclosing slice when it has "bp":"e", otherwise to the next slice that begins at or after
// its ts on the same thread. `slice` is an index into Trace::events, or -1 when nothing qualifies.
struct FlowBinding {
  size_t flow = 0;
  int64_t slice = -1;
};

// One binding per flow event of `trace`, in event order.
std::vector<FlowBinding> bindFlows(const Trace& trace);

// A flow chain: all s/t/f events sharing (cat, name, id), in timestamp order, with the slices they bind to.
struct FlowChain {
  std::string_view cat;
  std::string_view name;
  std::string_view id;
  std::vector<FlowBinding> steps;
};

// Groups bindFlows(trace) into chains, in order of each chain's first event.
std::vector<FlowChain> flowChains(const Trace& trace);

}  // namespace fusionscope::profiler
