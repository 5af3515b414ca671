#include "core/ir/opcode.h"

#include <array>
#include <string>
#include <unordered_map>

namespace fusionscope::core {
namespace {

struct OpcodeInfo {
  std::string_view name;
  OpCategory category;
};

constexpr std::array kOpcodes = {
#define FS_OPCODE_INFO(e, s, c) OpcodeInfo{s, OpCategory::c},
    FS_HLO_OPCODE_LIST(FS_OPCODE_INFO)
#undef FS_OPCODE_INFO
};

}  // namespace

std::string_view opcodeName(HloOpcode opcode) {
  auto index = static_cast<size_t>(opcode);
  return index < kOpcodes.size() ? kOpcodes[index].name : std::string_view("unknown");
}

HloOpcode parseOpcode(std::string_view name) {
  static const auto* kByName = [] {
    auto* map = new std::unordered_map<std::string_view, HloOpcode>();
    for (size_t i = 0; i < kOpcodes.size(); ++i) map->emplace(kOpcodes[i].name, static_cast<HloOpcode>(i));
    // Older XLA versions spell the optimization barrier in full.
    map->emplace("optimization-barrier", HloOpcode::kOptimizationBarrier);
    return map;
  }();
  auto it = kByName->find(name);
  return it == kByName->end() ? HloOpcode::kUnknown : it->second;
}

OpCategory opcodeCategory(HloOpcode opcode) {
  auto index = static_cast<size_t>(opcode);
  return index < kOpcodes.size() ? kOpcodes[index].category : OpCategory::kOther;
}

std::string_view categoryName(OpCategory category) {
  switch (category) {
    case OpCategory::kElementwise: return "elementwise";
    case OpCategory::kDataMovement: return "data-movement";
    case OpCategory::kReduction: return "reduction";
    case OpCategory::kContraction: return "contraction";
    case OpCategory::kNormalization: return "normalization";
    case OpCategory::kParameter: return "parameter";
    case OpCategory::kConstant: return "constant";
    case OpCategory::kControlFlow: return "control-flow";
    case OpCategory::kFusion: return "fusion";
    case OpCategory::kCollective: return "collective";
    case OpCategory::kCustomCall: return "custom-call";
    case OpCategory::kRandom: return "random";
    case OpCategory::kTuple: return "tuple";
    case OpCategory::kOther: return "other";
  }
  return "other";
}

}  // namespace fusionscope::core
