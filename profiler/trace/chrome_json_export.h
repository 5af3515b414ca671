#pragma once

#include <string>

#include "core/base/status.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

// Serialises `trace` as a Chrome trace object with Kineto's field names: M events for the process/thread records
// first, then every event (ts/dur in µs with ns precision, args and unnamed fields verbatim), then displayTimeUnit
// ("ns" unless the trace had one) and the other top-level keys the import kept.
std::string chromeTraceJson(const Trace& trace);

// Writes chromeTraceJson(trace) to `path` atomically: on error nothing is left at `path`.
Status exportChromeTrace(const Trace& trace, const std::string& path);

}  // namespace fusionscope::profiler
