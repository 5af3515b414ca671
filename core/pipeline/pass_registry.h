#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/passes/hlo_pass.h"
#include "core/pipeline/pass_pipeline.h"

namespace fusionscope::core {

// Every pass a user can name (--passes, --disable-passes, --list-passes), with a one-line description.
struct PassInfo {
  std::string name;
  std::string description;
};
const std::vector<PassInfo>& registeredPasses();
// Fails on an unknown name, listing the known ones.
StatusOr<std::unique_ptr<HloPass>> createPass(std::string_view name);

// What to run: a preset ("gpu", "cpu"), or with `passes` set an explicit list in that order; `disabled`
// passes are skipped either way. Names are checked.
struct PipelineSpec {
  std::string preset = "gpu";
  std::vector<std::string> passes;
  std::vector<std::string> disabled;
};
std::vector<std::string> presetNames();
StatusOr<std::unique_ptr<PassPipeline>> buildPipeline(const PipelineSpec& spec);
// The fusion rules a spec runs with: the cpu preset's (its passes, or the ones --passes names) use the cpu
// backend's, everything else the gpu's.
Backend backendFor(const PipelineSpec& spec);

// A copy of `module` after `preset` ("gpu", "cpu"; "none" runs nothing), with the fusion passes (fusion,
// fusion-merger, multi-output-fusion) skipped when `fusion` is false: what `run` and `compile` execute.
StatusOr<std::unique_ptr<HloModule>> optimizedCopy(const HloModule& module, const std::string& preset, bool fusion);

}  // namespace fusionscope::core
