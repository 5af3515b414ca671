#pragma once

// XLA's own rng-bit-generator numbers (tests/data/rng/vectors.json, written by make_vectors.py there through
// JAX and TensorFlow): each case as a one-instruction module, its state argument and what XLA returned.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/eval/value.h"
#include "tests/common/source_paths.h"

namespace fusionscope::testing {

struct RngVector {
  std::string algorithm;  // as HLO spells it
  std::vector<uint64_t> state;
  std::vector<int64_t> dims;
  std::string type;  // u8, u16, u32, u64
  std::vector<uint64_t> newState;
  std::vector<uint64_t> bits;

  std::string stateShape() const { return fmt::format("u64[{}]", state.size()); }
  std::string bitsShape() const { return fmt::format("{}[{}]", type, fmt::join(dims, ",")); }
  std::string label() const {
    return fmt::format("{} state={{{}}} {}", algorithm, fmt::join(state, ","), bitsShape());
  }
  // The generator alone: `ROOT r = (u64[N], T[dims]) rng-bit-generator(s), algorithm=...`.
  std::string module() const {
    return fmt::format("HloModule rng\n\nENTRY e {{\n  s = {0} parameter(0)\n  ROOT r = ({0}, {1}) "
                       "rng-bit-generator(s), algorithm={2}\n}}\n",
                       stateShape(), bitsShape(), algorithm);
  }
  core::Value stateValue() const {
    std::vector<int64_t> words(state.begin(), state.end());
    return core::Value::integers(core::Shape(core::PrimitiveType::kU64, {static_cast<int64_t>(state.size())}),
                                 std::move(words));
  }
  // "" when `result` (the generator's (state, bits) tuple) is what XLA returned, else the first difference.
  std::string mismatch(const core::Value& result) const {
    if (!result.isTuple() || result.tupleSize() != 2) return "not a (state, bits) tuple: " + result.toString();
    auto compare = [](const char* what, const core::Value& got, const std::vector<uint64_t>& want) -> std::string {
      std::span<const int64_t> data = got.intData();
      if (data.size() != want.size()) return fmt::format("{}: {} elements, want {}", what, data.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        // Values hold narrow unsigned types zero-extended and u64 as its bit pattern.
        if (static_cast<uint64_t>(data[i]) != want[i]) {
          return fmt::format("{}[{}] = {}, XLA: {}", what, i, static_cast<uint64_t>(data[i]), want[i]);
        }
      }
      return "";
    };
    std::string state = compare("state", result.tupleElement(0), newState);
    return state.empty() ? compare("bits", result.tupleElement(1), bits) : state;
  }
};

inline std::vector<RngVector> loadRngVectors() {
  std::ifstream in(std::string(FS_SOURCE_DIR) + "/tests/data/rng/vectors.json");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str());
  auto numbers = [](const nlohmann::json& list) {
    std::vector<uint64_t> out;
    for (const auto& v : list) out.push_back(std::stoull(v.get<std::string>()));
    return out;
  };
  std::vector<RngVector> vectors;
  for (const auto& c : json.at("cases")) {
    RngVector v;
    v.algorithm = c.at("algorithm").get<std::string>();
    v.state = numbers(c.at("state"));
    v.dims = c.at("shape").get<std::vector<int64_t>>();
    v.type = c.at("type").get<std::string>();
    v.newState = numbers(c.at("new_state"));
    v.bits = numbers(c.at("bits"));
    vectors.push_back(std::move(v));
  }
  return vectors;
}

}  // namespace fusionscope::testing
