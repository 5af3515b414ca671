#pragma once

// JSON building blocks shared by the stats and comparison reports (internal to fs_profiler's compare sources).
#include <string>

#include <nlohmann/json.hpp>

#include "profiler/compare/trace_stats.h"
#include "profiler/trace/trace_tracks.h"

namespace fusionscope::profiler {

nlohmann::json durationsJson(const DurationStats& durations);
nlohmann::json statsToJson(const TraceStats& stats);

}  // namespace fusionscope::profiler
