#include "core/pipeline/fusion_correspondence.h"

#include <algorithm>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

// The ops an instruction that runs as one kernel computes: a fusion's fused instructions (nested fusions opened),
// else the instruction itself. Parameters and constants compute nothing.
void collectOpKeys(const HloInstruction& inst, std::vector<std::string>& out) {
  if (inst.opcode() == HloOpcode::kParameter || inst.opcode() == HloOpcode::kConstant) return;
  if (!inst.isFusion() || !inst.fusedComputation()) {
    out.push_back(opKey(inst));
    return;
  }
  for (const HloInstruction* member : fusedInstructions(inst)) collectOpKeys(*member, out);
}

}  // namespace

std::string opKey(const HloInstruction& inst) {
  std::string key = std::string(inst.opcodeString()) + " " + inst.shape().toString(false);
  if (const OpMetadata* metadata = inst.metadata()) {
    key += " op_name=" + metadata->opName + " source=" + metadata->sourceFile;
    if (metadata->sourceLine) key += ":" + std::to_string(*metadata->sourceLine);
    key += " " + metadata->extra;
  }
  return key;
}

std::map<std::string, std::vector<std::string>> replacedInstructions(const HloModule& fused, const HloModule& unfused) {
  std::map<std::string, std::vector<std::string>> unfusedByKey;
  for (const auto& computation : unfused.computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) {
      std::vector<std::string> keys;
      collectOpKeys(*inst, keys);
      for (const std::string& key : keys) {
        std::vector<std::string>& names = unfusedByKey[key];
        if (names.empty() || names.back() != inst->name()) names.push_back(inst->name());
      }
    }
  }
  std::map<std::string, std::vector<std::string>> replaced;
  for (const auto& computation : fused.computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) {
      if (!inst->isFusion() || !inst->fusedComputation()) continue;
      std::vector<std::string> keys;
      collectOpKeys(*inst, keys);
      std::vector<std::string>& names = replaced[inst->name()];
      for (const std::string& key : keys) {
        auto found = unfusedByKey.find(key);
        if (found == unfusedByKey.end()) continue;
        for (const std::string& name : found->second) {
          if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
        }
      }
    }
  }
  return replaced;
}

}  // namespace fusionscope::core
