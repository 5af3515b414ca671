#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/eval/value.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

class HloModule;

// The reference evaluator: an interpreter for HLO modules that follows XLA's operation semantics, used to
// check that a pass pipeline leaves a module's results unchanged. Every floating-point result is rounded to
// its element type after each operation (f16/bf16 to nearest-even), integers wrap to their width, and
// evaluation is deterministic. Dot and convolution accumulate in double and round once (see evaluator.cpp).
// Errors never abort: they come back as a Status naming the instruction, e.g. `reduce.3: ...`.
//
// Before:  ENTRY e { p = f32[2] parameter(0)  ROOT n = f32[2] negate(p) }   with p = {1, -2}
// After:   evaluateModule(...)->result is f32[2] {-1, 2}

// What running one instruction costs the evaluator besides its elements, in elementwise operations (~200 ns).
inline constexpr double kInstructionOverheadWork = 20;

struct EvalOptions {
  // A while loop that runs more iterations than this fails (protects against loops that never end).
  int64_t maxWhileIterations = 100000;
  // The evaluation fails once the work it has done passes this budget: a loop that never ends, or one that runs a
  // large dot 1e5 times, stops with the figure instead of running for hours. Work: estimateInstructionWork of every
  // instruction run, each time it runs, plus kInstructionOverheadWork for running it at all (loops of tiny bodies).
  // Measured here: about 1e8 a second for elementwise ops, 1.5e9 for dots, so the default is 10-100 s.
  double maxWork = 1e10;
  // Record the value of every instruction (see EvalResult::values).
  bool recordValues = false;
  // Nonzero: every op's result is moved by a random error as large as compiled code's may be (the rounding-noise
  // model, core/eval/rounding_noise.h), drawn from this seed. The result check (result_check.h) runs a few such
  // evaluations to learn how far rounding can move each output.
  uint64_t roundingNoiseSeed = 0;
};

struct EvalResult {
  Value result;
  // When EvalOptions::recordValues: the value of every instruction of the entry computation and of the
  // instructions inside fusion computations called from it (their last invocation), keyed by instruction
  // name. Where a fused instruction has the name of an entry instruction, the entry value is kept.
  std::unordered_map<std::string, Value> values;
};

// Evaluates the entry computation on `arguments` (one per entry parameter, shapes compatible with the
// parameters'). Fails first with checkEvaluable()'s message when the module uses something unsupported.
StatusOr<EvalResult> evaluateModule(const HloModule& module, const std::vector<Value>& arguments,
                                    const EvalOptions& options = {});

// One instruction on the values of its operands (in operand order), as evaluateModule computes it; the computations
// it calls (a reducer, a fusion's body) run as there. For values known before running (compare-fusions folds what
// both compilers could compute at compile time).
StatusOr<Value> evaluateInstruction(const HloInstruction& inst, const std::vector<Value>& operands);

// Deterministic pseudo-random arguments for the entry parameters (SplitMix64 seeded by `seed`, elements
// drawn in parameter order, row-major): floats uniform in [-1, 1) rounded to the element type, integers in
// [0, 8), pred 0 or 1. Tuple parameters get tuples of such arrays.
std::vector<Value> randomArguments(const HloModule& module, uint64_t seed);

// OK when every instruction of every computation reachable from the entry can be evaluated. Otherwise an
// error listing what cannot, with counts: `cannot evaluate: unsupported opcode(s) cholesky (2),
// custom-call AwsNeuronGelu (1)`, followed where relevant by `; unsupported element type(s) c64 (1)` and
// `; elided constant(s) (3)`.
Status checkEvaluable(const HloModule& module);

// Whether `inst` is run with the complex operands or results it has (true when it has none): data movement, select,
// elementwise arithmetic and transcendentals, converts, compare EQ/NE, add/multiply reductions, dots, fft and the
// LAPACK calls. The one list of complex support: the evaluator refuses the rest by opcode, and codegen lowers the
// same ops (core/codegen/complex_emitter.cpp).
bool supportsComplexForm(const HloInstruction& inst);

// Bytes the evaluator would hold at once, at most: every value of the entry computation plus the largest value of
// any called computation (doubles, so that impossible shapes do not overflow).
double estimateEvaluationBytes(const HloModule& module);

// OK when estimateEvaluationBytes() fits in `limitBytes` (a share of memoryLimitBytes(), core/base); otherwise
// `cannot evaluate: its values need 8.0 PB (largest: n f32[100000,100000,100000], 4.0 PB), more than the 23.5 GB
// allowed`, instead of an allocation failure or the kernel's OOM killer halfway through.
Status checkEvaluationMemory(const HloModule& module, double limitBytes);

// The trip count of a while loop of the counted form XLA's own analysis recognises: a counter element of the loop
// state starts at an integer constant, the body adds (or subtracts) a constant to it, and the condition compares it
// with a constant (LT, LE, GT, GE, NE; either operand order). nullopt for any other loop, for one whose counter
// would wrap around, and for EQ loops that never end.
std::optional<int64_t> whileTripCount(const HloInstruction& loop);

// Rough count of scalar operations evaluateModule would perform: output elements for elementwise and data
// movement, times the reduction, window, contraction or kernel size where there is one, times the
// instruction count of the called computation for reducers and comparators. A while loop counts its
// condition and body whileTripCount() times, else `known_trip_count` times (from backend_config), else 10 times.
// Saturates at INT64_MAX. Tests use it to skip modules too expensive to interpret.
int64_t estimateEvaluationWork(const HloModule& module);
// The same estimate for one instruction alone, control flow counting 1 (the evaluator's work budget adds it up as
// instructions run, loops and calls included).
double estimateInstructionWork(const HloInstruction& instruction);

// Allowed difference between an expected and an actual element: |e - a| <= absolute + relative * |e|.
struct Tolerance {
  double relative;
  double absolute;
};
// Exact (0, 0) for integers and pred. Floating-point types allow some tens of ulps so that a rewrite that
// reorders or re-rounds arithmetic (a dot turned into multiply + reduce, a reduction split in two, an
// intermediate kept in f32) does not fail a comparison, while a wrong element still does: f32 1e-5 (~84 ulps
// of 2^-23), f16 1e-2 (~10 ulps of 2^-10), bf16 5e-2 (~6 ulps of 2^-7), f64 1e-10, 8-bit floats 0.25 (XLA's
// own tests use similar ErrorSpecs). The absolute part, equal to the relative one, covers results that
// cancel to near zero.
Tolerance toleranceFor(PrimitiveType type);

// Compares two values elementwise with toleranceFor(expected's element type). Returns an empty string when
// they match, else a message naming the first difference, e.g. `element {1,3}: 0.5 vs 0.75 (tolerance
// 1e-05 relative, 1e-05 absolute)`; tuple elements are prefixed `tuple element 2: `. NaN equals NaN,
// infinities must match exactly; the shapes must be compatible (element type and dimensions).
std::string compareValues(const Value& expected, const Value& actual);

}  // namespace fusionscope::core
