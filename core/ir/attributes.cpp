#include "core/ir/attributes.h"

#include <array>

namespace fusionscope::core {
namespace {

constexpr std::array<std::string_view, 6> kDirections = {"EQ", "NE", "GE", "GT", "LE", "LT"};
constexpr std::array<std::string_view, 4> kFusionKinds = {"kLoop", "kInput", "kOutput", "kCustom"};

}  // namespace

std::string_view comparisonDirectionName(ComparisonDirection direction) {
  return kDirections[static_cast<size_t>(direction)];
}

std::optional<ComparisonDirection> parseComparisonDirection(std::string_view text) {
  for (size_t i = 0; i < kDirections.size(); ++i) {
    if (kDirections[i] == text) return static_cast<ComparisonDirection>(i);
  }
  return std::nullopt;
}

std::string_view fusionKindName(FusionKind kind) {
  return kFusionKinds[static_cast<size_t>(kind)];
}

std::optional<FusionKind> parseFusionKind(std::string_view text) {
  for (size_t i = 0; i < kFusionKinds.size(); ++i) {
    if (kFusionKinds[i] == text) return static_cast<FusionKind>(i);
  }
  return std::nullopt;
}

const std::string* InstructionAttributes::findRaw(std::string_view key) const {
  for (const auto& [k, v] : raw) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace fusionscope::core
