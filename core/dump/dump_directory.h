#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

struct DumpOptions {
  bool png = false;
  bool svg = false;
};

// Where one stage went: the DOT path always, PNG/SVG paths when requested (else empty).
struct DumpedStage {
  int index = 0;
  std::string dotPath;
  std::string modulePath;  // module_N.txt, when written
  std::string pngPath;
  std::string svgPath;
  std::string consoleLine;  // `computation NAME [LABEL]: DIR/hlo_graph_N.dot`
};

// Writes stage `index` of `module` into `directory` as hlo_graph_N.dot (plus .png/.svg rendered in-process
// by Graphviz). Everything is produced in memory first and the files are written atomically together,
// so a failure (bad directory, render error) leaves no new file behind. `label` describes the stage in the
// console line, e.g. "pipeline start" or "CPU: after fusion".
StatusOr<DumpedStage> dumpStage(const HloModule& module, int index, std::string_view label,
                                const std::string& directory, const DumpOptions& options);

// One stage of a pipeline run to write with dumpStages.
struct StageDumpRequest {
  const HloModule* module = nullptr;
  int index = 0;
  std::string label;  // for the console line
};

struct StagesDumpOptions {
  bool png = false;
  bool svg = false;
  bool moduleText = true;  // module_N.txt, the HLO text of each stage
  int processes = 0;       // render workers; 0 = one per core
  // hlo_graph_N.dot grouped by scope (core/dot/scope_groups.h) as the viewer opens a big module: the groups of the
  // first stage's entry (op_name scopes, else stretches of the program, kept at every stage), opened down to the
  // deepest level that draws at most kFirstViewNodes nodes, the others collapsed into one node each.
  bool groupScopes = false;
};

// Writes every requested stage (hlo_graph_N.dot, module_N.txt, images rendered in parallel worker processes)
// plus `extraFiles` (name relative to the directory → content, e.g. stages.json) as one atomic group:
// on any failure nothing new is left behind and files that were replaced are restored.
StatusOr<std::vector<DumpedStage>> dumpStages(const std::vector<StageDumpRequest>& stages, const std::string& directory,
                                              const StagesDumpOptions& options,
                                              const std::vector<std::pair<std::string, std::string>>& extraFiles);

}  // namespace fusionscope::core
