#include "core/ir/attributes.h"

#include <array>
#include <charconv>

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

std::string dimensionListText(const std::vector<int64_t>& dims) {
  std::string text = "{";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "}";
}

int64_t windowOutputSize(int64_t size, const WindowDim& w) {
  int64_t dilatedBase = size == 0 ? 0 : (size - 1) * w.baseDilation + 1;
  int64_t padded = dilatedBase + w.padLow + w.padHigh;
  int64_t dilatedWindow = (w.size - 1) * w.windowDilation + 1;
  if (w.stride < 1 || padded < dilatedWindow) return 0;
  return (padded - dilatedWindow) / w.stride + 1;
}

std::optional<std::vector<int64_t>> InstructionAttributes::rawIntegers(std::string_view key) const {
  const std::string* text = findRaw(key);
  if (!text || text->size() < 2 || text->front() != '{' || text->back() != '}') return std::nullopt;
  std::vector<int64_t> values;
  const char* at = text->data() + 1;
  const char* end = text->data() + text->size() - 1;
  while (at < end) {
    while (at < end && *at == ' ') ++at;
    int64_t value = 0;
    auto [next, ec] = std::from_chars(at, end, value);
    if (ec != std::errc()) return std::nullopt;
    values.push_back(value);
    at = next;
    while (at < end && *at == ' ') ++at;
    if (at < end && *at++ != ',') return std::nullopt;
  }
  return values;
}

}  // namespace fusionscope::core
