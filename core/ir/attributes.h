#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fusionscope::core {

// Typed forms of the HLO attributes our passes, verifier and drawing use. Everything else an instruction
// carries is kept as raw `key=value` text (see InstructionAttributes::raw) so printing loses nothing.

struct SliceDim {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDim&) const = default;
};

struct PaddingDim {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PaddingDim&) const = default;
};

// One spatial dimension of a `window={size=3x3 stride=2x2 pad=1_1x1_1 ...}` attribute.
struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padLow = 0;
  int64_t padHigh = 0;
  int64_t windowDilation = 1;
  int64_t baseDilation = 1;
  bool reversal = false;
  bool operator==(const WindowDim&) const = default;
};

struct Window {
  std::vector<WindowDim> dims;
  bool operator==(const Window&) const = default;
};

// "{0,2}": a list of dimension numbers, written as HLO attributes write them (`dimensions={0,2}`).
std::string dimensionListText(const std::vector<int64_t>& dims);

// How many positions a window dimension takes over an input dimension of `size` (after base dilation and
// padding); 0 when the window does not fit.
int64_t windowOutputSize(int64_t size, const WindowDim& w);

struct DotDimensionNumbers {
  std::vector<int64_t> lhsBatch;
  std::vector<int64_t> rhsBatch;
  std::vector<int64_t> lhsContracting;
  std::vector<int64_t> rhsContracting;
  bool operator==(const DotDimensionNumbers&) const = default;
};

enum class ComparisonDirection : uint8_t { kEq, kNe, kGe, kGt, kLe, kLt };
std::string_view comparisonDirectionName(ComparisonDirection direction);  // "EQ", "GT", ...
std::optional<ComparisonDirection> parseComparisonDirection(std::string_view text);

enum class FusionKind : uint8_t { kLoop, kInput, kOutput, kCustom };
std::string_view fusionKindName(FusionKind kind);  // "kLoop", ...
std::optional<FusionKind> parseFusionKind(std::string_view text);

// `metadata={op_type="..." op_name="..." source_file="..." source_line=N ...}`. Fields we do not name are
// kept verbatim in `extra` (space-separated `key=value` text).
struct OpMetadata {
  std::string opType;
  std::string opName;
  std::string sourceFile;
  std::optional<int64_t> sourceLine;
  std::string extra;
  bool empty() const { return opType.empty() && opName.empty() && sourceFile.empty() && !sourceLine && extra.empty(); }
  bool operator==(const OpMetadata&) const = default;
};

struct InstructionAttributes {
  std::optional<std::vector<int64_t>> dimensions;  // broadcast, reduce, transpose, reverse, concatenate, ...
  std::optional<std::vector<SliceDim>> slice;
  std::optional<std::vector<PaddingDim>> padding;
  std::optional<Window> window;
  std::optional<DotDimensionNumbers> dot;
  std::optional<ComparisonDirection> direction;
  std::optional<FusionKind> fusionKind;
  std::optional<std::string> customCallTarget;  // unquoted
  std::optional<int64_t> tupleIndex;            // get-tuple-element `index=`
  std::optional<int64_t> iotaDimension;
  std::optional<std::string> backendConfig;       // verbatim value text (quoted string or braces)
  std::optional<std::string> sharding;            // verbatim value text
  std::optional<std::string> frontendAttributes;  // verbatim value text
  std::optional<OpMetadata> metadata;
  // Every other attribute in source order, value text verbatim.
  std::vector<std::pair<std::string, std::string>> raw;

  const std::string* findRaw(std::string_view key) const;
  // A raw `key={1,2}` attribute as integers; nullopt when absent or not such a list.
  std::optional<std::vector<int64_t>> rawIntegers(std::string_view key) const;
  bool operator==(const InstructionAttributes&) const = default;
};

}  // namespace fusionscope::core
