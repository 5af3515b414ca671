#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/eval/evaluator.h"
#include "core/eval/value.h"
#include "core/ir/hlo_module.h"

// The result check: does a result computed by compiled code (the CPU JIT, a GPU bundle) agree with the evaluator's,
// up to what rounding can explain? One implementation, used by `run`, `run --save-reference` (and through
// reference.json by scripts/gpu-check) and the tests. Derivation and limits: docs/CODEGEN.md, "Result check".
//
// The bound is per element and comes from how that element is computed: the evaluator runs the module `samples`
// more times with every op's result moved by a random error as large as compiled code's may be (the rounding-noise
// model, core/eval/rounding_noise.h: 1 ulp for a correctly rounded op, 4 ulps plus a coherent 2 for vector math,
// sqrt(32 + K/32) * 2^-24 * sum|terms| for a sum of K terms); the element's bound is 3 x the larger of the largest
// distance any of those runs put between it and the reference and the output's typical distance (the root mean
// square over its elements and runs: three samples of one element can all fall near its centre), plus one ulp. Loops,
// cancellation, saturation and the lengths of sums all enter through the runs themselves; no rule looks at what kind of
// op a module contains. An integer or pred element is exact unless a noisy run changed it (an argmax between near-equal
// values).
namespace fusionscope::core {

struct ResultBounds {
  std::vector<std::string> names;  // one per output array: the root tuple's operands, else the root
  std::vector<Value> bounds;       // per output array, f64 of its dimensions: each element's bound
  int samples = 0;                 // noisy evaluations the bounds come from
};

// The bounds for `expected`, the evaluator's result for `arguments`. Fails when the evaluator fails.
StatusOr<ResultBounds> resultBounds(const HloModule& module, const std::vector<Value>& arguments, const Value& expected,
                                    int samples = 3, double maxWork = EvalOptions{}.maxWork);

// One output array's outcome.
struct OutputCheck {
  std::string name;
  std::string type;  // element type, "f32"
  int64_t elements = 0;
  double maxError = 0;       // max |actual - expected| over the elements where both are finite
  double bound = 0;          // the largest per-element bound
  double maxAbs = 0;         // max |expected| over its finite elements
  int64_t failures = 0;      // elements outside their bound (or NaN/infinity where the reference has none)
  // Elements without a finite bound (a noisy run made them NaN or infinite, where the reference is finite): they accept
  // any value, so the check does not cover them; reports name how many. (Where the reference itself is NaN or
  // infinite, the result must be NaN or infinite too, bound or not.)
  int64_t unbounded = 0;
  std::string firstFailure;  // "element 12 (linear): 0.5 vs 0.75, bound 1.2e-07"
  bool passed() const { return failures == 0; }
};

// Checks `actual` against `expected` element by element within `bounds`. Shapes that differ fail with a message.
std::vector<OutputCheck> checkResult(const ResultBounds& bounds, const Value& expected, const Value& actual);

// "" when every output passed, else "OUTPUT: FIRST FAILURE (N elements outside their bounds)" for the first.
std::string resultCheckFailure(const std::vector<OutputCheck>& checks);

// The flattened output arrays of a result (tuple elements in order, nested tuples flattened).
std::vector<const Value*> outputArrays(const Value& value);

}  // namespace fusionscope::core
