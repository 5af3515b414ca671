#include "core/pipeline/stages_json.h"
#include "core/base/json_output.h"

#include <nlohmann/json.hpp>

namespace fusionscope::core {
namespace {

using nlohmann::ordered_json;

ordered_json decisionJson(const FusionDecision& d) {
  ordered_json j;
  j["pass"] = d.pass;
  j["computation"] = d.computation;
  j["producer"] = d.producer;
  j["consumer"] = d.consumer;
  j["fused"] = d.fused;
  j["fusion"] = d.fusion.empty() ? ordered_json(nullptr) : ordered_json(d.fusion);
  j["kind"] = d.kind ? ordered_json(std::string(fusionKindName(*d.kind))) : ordered_json(nullptr);
  j["bytes_saved"] = d.bytesSaved;
  j["reason"] = d.reason;
  return j;
}

ordered_json decisionsJson(const std::vector<FusionDecision>& decisions) {
  ordered_json list = ordered_json::array();
  for (const FusionDecision& d : decisions) list.push_back(decisionJson(d));
  return list;
}

ordered_json nullable(const std::string& text) {
  return text.empty() ? ordered_json(nullptr) : ordered_json(text);
}

}  // namespace

std::string stagesToJson(const PipelineRun& run, const StagesJsonInfo& info) {
  ordered_json root;
  root["schema"] = "fusionscope.stages/1";
  const HloModule* first = run.stages.empty() ? nullptr : run.stages.front().module.get();
  root["module"] = first ? first->name() : "";
  root["entry"] = first && first->entry() ? first->entry()->name() : "";
  root["source"] = info.source;
  root["pipeline"] = run.pipeline;
  root["backend"] = info.backend;
  root["total_ms"] = run.totalMilliseconds;

  ordered_json stages = ordered_json::array();
  for (size_t i = 0; i < run.stages.size(); ++i) {
    const Stage& stage = run.stages[i];
    ordered_json s;
    s["index"] = stage.index;
    s["pass"] = nullable(stage.pass);
    s["pass_path"] = nullable(stage.passPath);
    s["next_pass"] = nullable(stage.nextPass);
    s["label"] = stage.label();
    const StageFiles* files = i < info.files.size() ? &info.files[i] : nullptr;
    bool dumped = files && !files->dot.empty();
    s["dumped"] = dumped;
    ordered_json f = ordered_json::object();
    if (files) {
      if (!files->dot.empty()) f["dot"] = files->dot;
      if (!files->module.empty()) f["module"] = files->module;
      if (!files->png.empty()) f["png"] = files->png;
      if (!files->svg.empty()) f["svg"] = files->svg;
    }
    s["files"] = std::move(f);
    s["pass_ms"] = stage.passMilliseconds;
    s["instructions"] = stage.instructionCount;
    s["fusions"] = stage.fusionCount;
    s["computations"] = stage.computationCount;

    ordered_json changes;
    changes["instruction_delta"] = stage.changes.instructionDelta;
    changes["added"] = stage.changes.added;
    changes["removed"] = stage.changes.removed;
    ordered_json fused = ordered_json::array();
    for (const auto& entry : stage.changes.fused) {
      fused.push_back(ordered_json{{"instruction", entry.instruction}, {"fusion", entry.fusion}});
    }
    changes["fused"] = std::move(fused);
    s["changes"] = std::move(changes);

    ordered_json fusionList = ordered_json::array();
    for (const FusionSummary& fusion : stage.fusions) {
      ordered_json j;
      j["name"] = fusion.name;
      j["computation"] = fusion.computation;
      j["fused_computation"] = fusion.fusedComputation;
      j["kind"] = std::string(fusionKindName(fusion.kind));
      j["members"] = fusion.members;
      j["operands"] = fusion.operandCount;
      j["outputs"] = fusion.outputCount;
      fusionList.push_back(std::move(j));
    }
    s["fusion_list"] = std::move(fusionList);
    s["decisions"] = decisionsJson(stage.decisions);
    stages.push_back(std::move(s));
  }
  root["stages"] = std::move(stages);

  ordered_json passes = ordered_json::array();
  for (const PassRun& pass : run.passes) {
    ordered_json p;
    p["pass"] = pass.pass;
    p["pass_path"] = pass.passPath;
    p["changed"] = pass.changed;
    p["ms"] = pass.milliseconds;
    p["stage"] = pass.stage >= 0 ? ordered_json(pass.stage) : ordered_json(nullptr);
    // A pass that produced a stage has its decisions listed with the stage; the others keep theirs here.
    p["decisions"] = pass.stage >= 0 ? ordered_json::array() : decisionsJson(pass.decisions);
    passes.push_back(std::move(p));
  }
  root["passes"] = std::move(passes);
  return jsonOutputText(root, 1) + "\n";
}

}  // namespace fusionscope::core
