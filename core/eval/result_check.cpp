#include "core/eval/result_check.h"

#include <cmath>
#include <complex>
#include <limits>

#include <fmt/format.h>

#include "core/eval/evaluator.h"
#include "core/eval/rounding_noise.h"
#include "core/ir/hlo_computation.h"

namespace fusionscope::core {
namespace {

void flatten(const Value& value, std::vector<const Value*>& out) {
  if (value.isTuple()) {
    for (int i = 0; i < value.tupleSize(); ++i) flatten(value.tupleElement(i), out);
  } else {
    out.push_back(&value);
  }
}

void outputNames(const HloInstruction& root, const std::string& prefix, std::vector<std::string>& out) {
  if (root.shape().isTuple() && root.opcode() == HloOpcode::kTuple) {
    for (int i = 0; i < root.operandCount(); ++i) outputNames(*root.operand(i), "", out);
  } else if (root.shape().isTuple()) {
    for (int i = 0; i < root.shape().tupleSize(); ++i) {
      out.push_back(fmt::format("{}{}.{}", prefix, root.name(), i));
    }
  } else {
    out.push_back(prefix + root.name());
  }
}

// Element i of an array as a complex number (the imaginary part 0 for real arrays): complex outputs are checked by
// the distance between the two complex numbers.
std::complex<double> elementAt(const Value& v, int64_t i) {
  if (v.holdsComplex()) {
    if (i < 0 || i >= v.elementCount()) return 0;
    return {v.floatData()[static_cast<size_t>(i)], v.imagData()[static_cast<size_t>(i)]};
  }
  return v.doubleAt(i);
}

bool isNan(std::complex<double> z) {
  return std::isnan(z.real()) || std::isnan(z.imag());
}

bool isFinite(std::complex<double> z) {
  return std::isfinite(z.real()) && std::isfinite(z.imag());
}

// Bound = kSpreadFactor x the larger of the element's largest distance over the samples and its output's typical
// distance (plus one ulp).
constexpr double kSpreadFactor = 3;

}  // namespace

std::vector<const Value*> outputArrays(const Value& value) {
  std::vector<const Value*> out;
  flatten(value, out);
  return out;
}

StatusOr<ResultBounds> resultBounds(const HloModule& module, const std::vector<Value>& arguments, const Value& expected,
                                    int samples, double maxWork) {
  ResultBounds result;
  result.samples = samples;
  std::vector<const Value*> reference = outputArrays(expected);
  if (module.entry() != nullptr && module.entry()->root() != nullptr) {
    outputNames(*module.entry()->root(), "", result.names);
  }
  if (result.names.size() != reference.size()) {
    result.names.clear();
    for (size_t i = 0; i < reference.size(); ++i) result.names.push_back(fmt::format("output {}", i));
  }
  std::vector<std::vector<double>> spread(reference.size());
  std::vector<double> squares(reference.size(), 0.0);  // sum of squared finite distances, every sample and element
  std::vector<double> counted(reference.size(), 0.0);
  for (size_t o = 0; o < reference.size(); ++o)
    spread[o].assign(static_cast<size_t>(reference[o]->elementCount()), 0.0);
  for (int k = 0; k < samples; ++k) {
    EvalOptions options;
    options.maxWork = maxWork;
    options.roundingNoiseSeed = 0x5eed0000u + static_cast<uint64_t>(k) * 0x9e3779b9u + 1;
    StatusOr<EvalResult> noisy = evaluateModule(module, arguments, options);
    if (!noisy.ok()) return noisy.status();
    std::vector<const Value*> outputs = outputArrays(noisy->result);
    if (outputs.size() != reference.size()) return Status::error("the noisy evaluation changed the result's form");
    for (size_t o = 0; o < reference.size(); ++o) {
      if (static_cast<size_t>(outputs[o]->elementCount()) != spread[o].size()) {
        return Status::error("the noisy evaluation changed an output's size");
      }
      for (size_t i = 0; i < spread[o].size(); ++i) {
        const std::complex<double> e = elementAt(*reference[o], static_cast<int64_t>(i));
        const std::complex<double> n = elementAt(*outputs[o], static_cast<int64_t>(i));
        counted[o] += 1;
        if (e == n || (isNan(e) && isNan(n))) continue;
        const double distance = isFinite(e) && isFinite(n) ? std::abs(e - n) : std::numeric_limits<double>::infinity();
        spread[o][i] = std::max(spread[o][i], distance);
        if (std::isfinite(distance)) squares[o] += distance * distance;
      }
    }
  }
  for (size_t o = 0; o < reference.size(); ++o) {
    const PrimitiveType type = complexPartType(reference[o]->elementType());
    // Three samples say little about one element's spread (all three can fall near its centre), so no element's
    // bound is below the output's typical one: the root mean square distance over all its elements and samples.
    const double typical = counted[o] > 0 ? std::sqrt(squares[o] / counted[o]) : 0.0;
    std::vector<double> bound(spread[o].size());
    for (size_t i = 0; i < bound.size(); ++i) {
      bound[i] = kSpreadFactor * std::max(spread[o][i], typical) +
                 eval::ulpOf(type, std::abs(elementAt(*reference[o], static_cast<int64_t>(i))));
    }
    result.bounds.push_back(
        Value::floats(Shape(PrimitiveType::kF64, reference[o]->shape().dimensions()), std::move(bound)));
  }
  return result;
}

std::vector<OutputCheck> checkResult(const ResultBounds& bounds, const Value& expected, const Value& actual) {
  std::vector<const Value*> e = outputArrays(expected);
  std::vector<const Value*> a = outputArrays(actual);
  std::vector<OutputCheck> checks;
  for (size_t o = 0; o < e.size(); ++o) {
    OutputCheck check;
    check.name = o < bounds.names.size() ? bounds.names[o] : fmt::format("output {}", o);
    check.type = std::string(primitiveTypeName(e[o]->elementType()));
    check.elements = e[o]->elementCount();
    if (o >= a.size() || !e[o]->shape().compatible(a[o]->shape()) || a[o]->elementCount() != e[o]->elementCount() ||
        o >= bounds.bounds.size() || bounds.bounds[o].floatData().size() != static_cast<size_t>(e[o]->elementCount())) {
      check.failures = check.elements > 0 ? check.elements : 1;
      check.firstFailure = fmt::format("shape {} vs {}", e[o]->shape().toString(false),
                                       o < a.size() ? a[o]->shape().toString(false) : std::string("none"));
      checks.push_back(std::move(check));
      continue;
    }
    std::span<const double> bound = bounds.bounds[o].floatData();
    for (size_t i = 0; i < bound.size(); ++i) {
      const std::complex<double> x = elementAt(*e[o], static_cast<int64_t>(i));
      const std::complex<double> y = elementAt(*a[o], static_cast<int64_t>(i));
      const bool referenceFinite = isFinite(x);
      if (referenceFinite) check.maxAbs = std::max(check.maxAbs, std::abs(x));
      if (std::isfinite(bound[i])) {
        check.bound = std::max(check.bound, bound[i]);
      } else if (referenceFinite) {
        ++check.unbounded;
      }
      if (x == y || (isNan(x) && isNan(y))) continue;
      // Where the reference is NaN or infinite, so must the result be (which of them, rounding order may change:
      // inf - inf one way, inf another); no bound applies there.
      if (!referenceFinite) {
        if (!isFinite(y)) continue;
      } else {
        const bool finite = isFinite(y);
        const double error = finite ? std::abs(x - y) : std::numeric_limits<double>::infinity();
        if (finite) check.maxError = std::max(check.maxError, error);
        if (error <= bound[i]) continue;
      }
      if (check.failures++ == 0) {
        check.firstFailure =
            a[o]->holdsComplex()
                ? fmt::format("element {} (linear): ({}, {}) vs ({}, {}), bound {:.3g}", i, x.real(), x.imag(),
                              y.real(), y.imag(), bound[i])
                : fmt::format("element {} (linear): {} vs {}, bound {:.3g}", i, x.real(), y.real(), bound[i]);
      }
    }
    checks.push_back(std::move(check));
  }
  if (a.size() > e.size()) {
    OutputCheck extra;
    extra.name = "outputs";
    extra.failures = 1;
    extra.firstFailure = fmt::format("{} outputs, the reference has {}", a.size(), e.size());
    checks.push_back(std::move(extra));
  }
  return checks;
}

std::string resultCheckFailure(const std::vector<OutputCheck>& checks) {
  for (const OutputCheck& check : checks) {
    if (check.passed()) continue;
    return fmt::format("{}: {} ({} of {} element(s) outside their bounds)", check.name, check.firstFailure,
                       check.failures, check.elements);
  }
  return "";
}

}  // namespace fusionscope::core
