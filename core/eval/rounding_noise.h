#pragma once

#include <cstdint>
#include <functional>

#include "core/base/status.h"
#include "core/eval/eval_internal.h"
#include "core/eval/value.h"
#include "core/ir/hlo_instruction.h"

// The rounding-noise model of the result check (docs/CODEGEN.md, "Result check"). The evaluator computes each op
// exactly (in double) and rounds it once to the element type; compiled code rounds at the same ops but in another
// order inside sums and with its own vector math. To learn how far that can move each output, the check evaluates
// the module a few more times with every op's result moved by a random error as large as the compiled code's may
// be, and takes the spread of the outputs (result_check.h). The error per op:
//   - exact ops (data movement, negate, abs, max, min, select, compare, floor, ...): none;
//   - a correctly rounded op (+ - * / sqrt, ...): up to 1 ulp of its type, random sign, never past its largest
//     finite value (a rounding difference does not overflow);
//   - a convert or reduce-precision: none of its own (one correctly rounded step in both, so it differs only where its
//     operand does: the noisy runs carry that through), except where compiled code rounds twice (from f64 or a wide
//     integer, through f32, to a narrower float): up to 1 ulp. One ulp of f8e4m3fn is an eighth of the value; applied
//     to every convert it made an fp8 program's bounds as large as its values;
//   - a vector-math function (exp, log, tanh, logistic, pow, sin, ...): up to 4 ulps random plus 2 ulps of one
//     sign for the whole instruction (an approximation's bias adds up coherently over a sum);
//   - a sum (dot, convolution, reduce and reduce-window whose reducer does not just pick an operand): up to
//     sqrt(K + 1) * 2^-24 * S per element, random sign, where K is the number of terms and S the same op evaluated
//     on the operands' magnitudes (sum |a*b|, or |product|): at most K roundings along a term's path, added up as a
//     random walk (docs/CODEGEN.md, "Dot accumulation"); narrower types accumulate in f32, then round to their type
//     (1 ulp more);
//   - a LAPACK call (Cholesky, LU, QR, triangular solve, symmetric eigensolver): backward stable, so its result is
//     the exact result for operands moved by a little; the op is evaluated again on its floating-point operands, each
//     element moved by up to sqrt(n + 1) * u * S, random sign, n the matrix order (the sums inside it, as a random
//     walk; (n + 1) * u for the eigensolver and the SVD, LAPACK's own p(n) * u bound, which their vectors reach), S =
//     max(|x|, the operand's root mean square) for Cholesky, LU and triangular solves, a row's norm (rms * sqrt(n)) for
//     QR, the eigensolver and the SVD (normwise backward errors); how far that moves the result is the problem's
//     conditioning, which the spread then shows; eigenvalues and singular values also move by up to sqrt(n + 1) * u *
//     their largest magnitude (a backward error of that 2-norm moves them by as much; a random one by less);
//   - batch norm (one op here, a mean, a variance and a scaling when compiled): per output array, up to
//     sqrt(N + 1) * 2^-24 * its largest magnitude, N the elements per feature;
//   - fft: FFTW's error grows as O(log N) u times the transform's root mean square (Cooley-Tukey's bound; measured
//     errors are near sqrt(log N) u rms): each part moved by up to (log2 N + 1) * u * the output's root mean square
//     magnitude, N the points of one transform;
//   - complex elementwise results: each part moved by as much as the class asks of a real result, in ulps of the
//     element's magnitude |z| (a complex product's parts are sums that may cancel: their error is relative to |z|,
//     not to themselves), 2 ulps for a rounded op, 8 for vector math; a complex sum's parts by the sum's rule with
//     S the same sum over the operands' magnitudes.
namespace fusionscope::core::eval {

enum class NoiseClass { kExact, kRounded, kVectorMath, kSum, kNormalization, kBackwardStable, kFft };

// The spacing of `type`'s numbers at `x` (one ulp, subnormals included); 0 for integer types and non-finite x.
double ulpOf(PrimitiveType type, double x);

// How an op's result may differ between the evaluator and compiled code.
NoiseClass noiseClassOf(const HloInstruction& inst);

// A SplitMix64 stream for the noise.
class NoiseStream {
 public:
  explicit NoiseStream(uint64_t seed) : m_state(seed) {}
  uint64_t next();
  double uniform();  // in [-1, 1)
 private:
  uint64_t m_state;
};

// Adds the noise of `inst`'s class to `value` (its result; operands as evaluated). `evaluateOn` evaluates `inst`
// on other operands (the magnitudes, for a sum's S).
Status addRoundingNoise(const HloInstruction& inst, Operands operands, Value& value, NoiseStream& noise,
                        const std::function<StatusOr<Value>(Operands)>& evaluateOn);

}  // namespace fusionscope::core::eval
