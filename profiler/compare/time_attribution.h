#pragma once

// Where a trace's kernel time goes in the program's own terms: each kernel -> the instruction it ran -> the
// operations inside it (a fusion's members) -> their source line, scope (op_name path) and framework op. The profiler
// knows no HLO: the caller describes each instruction's operations (OpAttribution, built from an HLO module by the
// CLI) and this splits the time and writes the reports (text, JSON, pprof).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

struct SourceFrame {
  std::string file;
  std::string function;
  int64_t line = 0;
};

// One operation a kernel performs: an HLO instruction (a fusion's member, or the kernel's instruction itself).
struct AttributedOp {
  std::string name;                // the instruction
  std::string kernel;              // the instruction the kernel ran (the fusion), as the module names it
  std::string scope;               // op_name without its last component: "jit(step)/jvp(mlp)"
  std::string op;                  // the framework op: op_name's last component ("dot_general"), else the opcode
  std::vector<SourceFrame> stack;  // innermost first; empty when the module records none
  double weight = 0;               // estimated cost: the kernel's time is shared in proportion to it
};

// Kernel instruction (normalizeKernelName) -> its operations.
using OpAttribution = std::unordered_map<std::string, std::vector<AttributedOp>>;

enum class AttributionKey { kSource, kScope, kOp, kFusion };

struct AttributionRow {
  std::string key;
  double ns = 0;
  double share = 0;        // of the matched kernel time
  int64_t kernels = 0;     // kernel launches that contributed
  bool estimated = false;  // part of a multi-op kernel's time, shared by the weight model
  std::vector<std::string> operations;    // the instructions whose time it holds (sorted): graph nodes to select
  std::vector<std::string> kernelsRun;    // the kernels' instructions they ran in (sorted): timeline events
};

struct TimeAttribution {
  AttributionKey key = AttributionKey::kSource;
  int64_t kernelCount = 0;    // kernel launches in the trace (KernelClassifier)
  int64_t kernelTotalNs = 0;  // their summed duration
  int64_t matchedKernels = 0;
  int64_t matchedNs = 0;  // what the rows share out, exactly (rows sum to it up to rounding)
  int64_t unmatchedKernels = 0;
  std::vector<std::string> unmatchedNames;  // up to 10, most time first
  std::vector<AttributionRow> rows;         // most time first
  std::string model;                        // how multi-op kernels are split, in words
};

// Splits every kernel's duration among its instruction's operations by weight (equally when all weights are 0).
TimeAttribution attributeTime(const Trace& trace, const OpAttribution& ops, AttributionKey key,
                              const std::string& model);
std::string attributionText(const TimeAttribution& attribution, size_t top);
std::string attributionJson(const TimeAttribution& attribution);
// A gzipped pprof profile (profile.proto): sample type time/nanoseconds, one sample per (kernel instruction,
// operation) with its time, the stack from the operation's source frames (function = the frame's function, location
// line = its file and line) or, without frames, from its op_name path.
StatusOr<std::string> attributionPprof(const Trace& trace, const OpAttribution& ops);

// Before and after, rows joined by key: each key's time in both runs, the difference and the ratio (which source
// lines fusion made faster or slower), most time saved first.
std::string attributionComparisonText(const TimeAttribution& before, const TimeAttribution& after, size_t top);
std::string attributionComparisonJson(const TimeAttribution& before, const TimeAttribution& after);

std::string attributionKeyName(AttributionKey key);

}  // namespace fusionscope::profiler
