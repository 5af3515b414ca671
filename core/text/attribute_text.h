#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/attributes.h"

namespace fusionscope::core {

// Text forms of the typed HLO attribute values, both directions. Parsers take the value text exactly as it
// stands in the HLO buffer (a view into it) and on failure say where in that view the problem starts, so
// the caller can report FILE:LINE:COL.
struct AttributeError {
  const char* at = nullptr;
  std::string message;
};
using AttributeResult = std::optional<AttributeError>;  // nullopt = parsed

AttributeResult parseIntList(std::string_view text, std::vector<int64_t>& out);     // `{1,0}` or `{}`
AttributeResult parseSlice(std::string_view text, std::vector<SliceDim>& out);      // `{[0:4], [1:9:2]}`
AttributeResult parsePadding(std::string_view text, std::vector<PaddingDim>& out);  // `0_0x1_1_0`
AttributeResult parseWindow(std::string_view text, Window& out);        // `{size=3x3 stride=1x1 pad=1_1x1_1}`
AttributeResult parseMetadata(std::string_view text, OpMetadata& out);  // `{op_type="Add" source_line=3}`
AttributeResult parseQuoted(std::string_view text, std::string& out);   // `"a\"b"` -> a"b
AttributeResult parseInt(std::string_view text, int64_t& out);
// `%a` or `{%a, %b}` (names without '%'); `braced` tells which form was used.
AttributeResult parseNameList(std::string_view text, std::vector<std::string_view>& out, bool& braced);

std::string intListText(const std::vector<int64_t>& values);  // `{1,0}`
std::string sliceText(const std::vector<SliceDim>& dims);
std::string paddingText(const std::vector<PaddingDim>& dims);
std::string windowText(const Window& window);
std::string metadataText(const OpMetadata& metadata);
std::string quoted(std::string_view text);  // escapes `"` and `\`

}  // namespace fusionscope::core
