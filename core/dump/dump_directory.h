#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

struct DumpOptions {
  bool png = false;
  bool svg = false;
};

// Where one stage went: the DOT path always, PNG/SVG paths when requested (else empty).
struct DumpedStage {
  std::string dotPath;
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

}  // namespace fusionscope::core
