#pragma once

// Runs a module through a preset pipeline as the CLI does (`--pipeline cpu|gpu`), for tests.
#include <memory>
#include <string>

#include "core/passes/fusion_config.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"

namespace fusionscope::testing {

inline StatusOr<core::PipelineRun> runPreset(core::HloModule& module, const std::string& preset) {
  core::PipelineSpec spec;
  spec.preset = preset;
  StatusOr<std::unique_ptr<core::PassPipeline>> pipeline = core::buildPipeline(spec);
  if (!pipeline.ok()) return pipeline.status();
  core::PassContext context(core::fusionConfigFor(core::backendFor(spec)));
  return core::runPipeline(**pipeline, module, context);
}

}  // namespace fusionscope::testing
