#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "profiler/compare/trace_stats.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

// Which "before" kernels each fusion stands for, by name: from a dump's stages.json (docs/STAGES_JSON.md:
// stages[].fusion_list[] name + members; a fusion listed by several stages keeps its latest members), or made by
// the caller from XLA's modules (`fusionscope-cli compare --fused-hlo`). Names are matched against the before
// kernels' names and the instructions they ran (hloOp()).
struct FusionMembership {
  std::map<std::string, std::vector<std::string>> members;  // fusion name -> fused instruction names
  std::string source = "stages.json";                       // where the members came from (KernelMapping::via)
};

// Reads only stages[].fusion_list[].{name, members}; a file that is not JSON or has no "stages" array is an error
// naming the file (with the byte offset for JSON errors).
StatusOr<FusionMembership> loadFusionMembership(const std::string& path);
StatusOr<FusionMembership> parseFusionMembership(std::string_view text, const std::string& name);

// One "after" kernel and the "before" kernels whose work it now does.
struct KernelMapping {
  std::string after;
  int64_t afterCount = 0;
  int64_t afterNs = 0;
  std::vector<std::string> before;  // replaced "before" kernel names
  int64_t beforeCount = 0;          // launches of those kernels
  int64_t beforeNs = 0;
  std::string via;  // FusionMembership::source, "args", "same name", or "" when nothing was found
  double speedup() const { return afterNs > 0 && beforeNs > 0 ? static_cast<double>(beforeNs) / afterNs : 0.0; }
};

struct TraceComparison {
  TraceStats before;
  TraceStats after;
  std::vector<KernelMapping> mappings;      // one per after kernel name, by after time, longest first
  std::vector<std::string> unmappedBefore;  // before kernels no after kernel claims
};

// Compares two traces; kernels are what KernelClassifier says, grouped by name. `membership` (optional) maps
// fusions, looked up by an after kernel's name or else its hloOp(), to their members; without an entry, membership
// comes from the "after" kernels' args ("members", "fused_ops" or "hlo_ops": array of names; or "instruction"/"hlo_op":
// one name), and a kernel whose name is unchanged maps to itself.
TraceComparison compareTraces(const Trace& before, const Trace& after, const FusionMembership* membership);

std::string comparisonText(const TraceComparison& comparison, size_t top = 10);
std::string comparisonJson(const TraceComparison& comparison);

}  // namespace fusionscope::profiler
