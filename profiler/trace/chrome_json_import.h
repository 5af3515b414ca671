#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

// Reads a Chrome trace (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU): either a
// bare event array or an object with "traceEvents", plain or gzip-compressed (detected by the gzip magic, so
// `.json.gz` and misnamed files both work). A malformed event is counted in Trace::stats with a reason and skipped;
// only a file that cannot be read or is not JSON is an error, and that error names the file and the byte offset.
StatusOr<Trace> importChromeTrace(const std::string& path);

// How importChromeTrace reads a file. A plain (not gzip) file of at least `streamThreshold` bytes is parsed in
// windows of about `windowBytes` cut between events, so that neither the whole file nor simdjson's index over it is
// held (peak memory ~ the Trace plus two windows); event text is then copied into the Trace's store instead of
// pointing into the file. Anything the windows cannot handle falls back to the whole-document parse, which gives
// the same events. ImportStats::windows says which path ran.
struct ImportOptions {
  size_t streamThreshold = size_t{32} << 20;
  size_t windowBytes = size_t{8} << 20;
};
StatusOr<Trace> importChromeTrace(const std::string& path, const ImportOptions& options);

// The same for text already in memory; `name` is used in error messages and as Trace::name.
StatusOr<Trace> importChromeTraceText(std::string_view text, std::string_view name);

}  // namespace fusionscope::profiler
