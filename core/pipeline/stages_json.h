#pragma once

#include <string>
#include <vector>

#include "core/pipeline/stage.h"

namespace fusionscope::core {

// The files written for one stage, relative to the dump directory; empty when not written.
struct StageFiles {
  std::string dot;
  std::string module;
  std::string png;
  std::string svg;
};

struct StagesJsonInfo {
  std::string source;   // the module file the pipeline ran on
  std::string backend;  // "cpu" or "gpu"
  // Indexed like PipelineRun::stages; a stage without files was not dumped (filtered by --dump-pass-re or
  // identical to the stage before).
  std::vector<StageFiles> files;
};

// `stages.json`, the index of a dump directory the viewer reads. Schema: docs/STAGES_JSON.md
// ("fusionscope.stages/1").
std::string stagesToJson(const PipelineRun& run, const StagesJsonInfo& info);

}  // namespace fusionscope::core
