#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_module.h"
#include "core/text/hlo_parser.h"

namespace fusionscope::testing {

using core::EvalOptions;
using core::EvalResult;
using core::HloModule;
using core::PrimitiveType;
using core::Shape;
using core::Value;

inline Value f32(std::vector<int64_t> dims, std::vector<double> values) {
  return Value::floats(Shape(PrimitiveType::kF32, std::move(dims)), std::move(values));
}
inline Value f64(std::vector<int64_t> dims, std::vector<double> values) {
  return Value::floats(Shape(PrimitiveType::kF64, std::move(dims)), std::move(values));
}
inline Value s32(std::vector<int64_t> dims, std::vector<int64_t> values) {
  return Value::integers(Shape(PrimitiveType::kS32, std::move(dims)), std::move(values));
}
inline Value typed(PrimitiveType type, std::vector<int64_t> dims, std::vector<double> values) {
  return Value::fromDoubles(Shape(type, std::move(dims)), values);
}

// Parses and evaluates `hlo`. The result prints exactly (floats in shortest round-trip form), so tests
// compare it as text: `f32[2] {1, 2.5}`. Failures come back as `ERROR: message`.
inline std::string evalText(std::string_view hlo, const std::vector<Value>& args = {},
                            const EvalOptions& options = {}) {
  StatusOr<std::unique_ptr<HloModule>> module = core::parseHloModule(hlo);
  if (!module.ok()) return "PARSE ERROR: " + module.message();
  StatusOr<EvalResult> result = core::evaluateModule(**module, args, options);
  if (!result.ok()) return "ERROR: " + result.message();
  return result->result.toString(0);
}

// Like evalText but returns the value; a failure is reported and gives the empty tuple.
inline Value evalValue(std::string_view hlo, const std::vector<Value>& args = {}, const EvalOptions& options = {}) {
  StatusOr<std::unique_ptr<HloModule>> module = core::parseHloModule(hlo);
  if (!module.ok()) {
    ADD_FAILURE() << module.message();
    return Value();
  }
  StatusOr<EvalResult> result = core::evaluateModule(**module, args, options);
  if (!result.ok()) {
    ADD_FAILURE() << result.message();
    return Value();
  }
  return result->result;
}

// Element i of a tuple result as text ("<not a tuple>" when it is not one).
inline std::string element(const Value& v, int i) {
  if (!v.isTuple() || i >= v.tupleSize()) return "<not a tuple>";
  return v.tupleElement(i).toString(0);
}

}  // namespace fusionscope::testing
