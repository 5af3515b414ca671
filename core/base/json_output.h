#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fusionscope {

// JSON text for a file or stdout. Names and metadata come from input as bytes (an HLO `source_file`, a module or
// output path) and need not be UTF-8; nlohmann::json::dump throws on such bytes by default, which took down
// `info --json`, `dump` and `compare-fusions --json`. Here each invalid byte becomes U+FFFD instead: the output is
// valid JSON and says where the input was not text. Every JSON sink of the CLI and the core goes through this.
inline std::string jsonOutputText(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace fusionscope
