// Complex numbers and fft in the evaluator: hand-computed arithmetic, data movement of both parts, transforms checked
// against a direct DFT written here (every fft_type, 1 to 3 dimensions, batches, sizes that are not powers of two),
// and the ops that stay refused by name.
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/eval/result_check.h"
#include "tests/core/eval/eval_testing.h"

namespace fusionscope::testing {
namespace {

using Complex = std::complex<double>;

std::string module(std::string_view body) {
  return std::string("HloModule complex\nENTRY e {\n") + std::string(body) + "\n}\n";
}

Value c64(std::vector<int64_t> dims, std::vector<double> re, std::vector<double> im) {
  return Value::complex(Shape(PrimitiveType::kC64, std::move(dims)), std::move(re), std::move(im));
}

TEST(ComplexEvalTest, ArithmeticMatchesHandComputedValues) {
  const std::vector<Value> args = {c64({2}, {1, 3}, {2, -1}), c64({2}, {3, 1}, {4, 1})};
  auto binary = [&](std::string_view op) {
    return evalText(module(fmt::format(R"(
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  ROOT r = c64[2] {}(a, b))",
                                       op)),
                    args);
  };
  EXPECT_EQ(binary("add"), "c64[2] {(4, 6), (4, 0)}");
  EXPECT_EQ(binary("subtract"), "c64[2] {(-2, -2), (2, -2)}");
  EXPECT_EQ(binary("multiply"), "c64[2] {(-5, 10), (4, 2)}");  // (1+2i)(3+4i), (3-i)(1+i)
  EXPECT_EQ(binary("divide"), "c64[2] {(0.44, 0.08), (1, -2)}");
  EXPECT_EQ(evalText(module(R"(
  a = c64[2] parameter(0)
  m = f32[2] abs(a)
  re = f32[2] real(a)
  im = f32[2] imag(a)
  n = c64[2] negate(a)
  ROOT r = (f32[2], f32[2], f32[2], c64[2]) tuple(m, re, im, n))"),
                     {c64({2}, {3, -1}, {4, 0})}),
            "(f32[2] {5, 1}, f32[2] {3, -1}, f32[2] {4, 0}, c64[2] {(-3, -4), (1, -0)})");
  EXPECT_EQ(evalText(module(R"(
  x = f32[2] parameter(0)
  y = f32[2] parameter(1)
  ROOT r = c64[2] complex(x, y))"),
                     {f32({2}, {1, 2}), f32({2}, {-3, 4})}),
            "c64[2] {(1, -3), (2, 4)}");
  // exp(i pi) = -1 up to f32 rounding of the imaginary part.
  const Value e = evalValue(module(R"(
  a = c64[] parameter(0)
  ROOT r = c64[] exponential(a))"),
                            {c64({}, {0}, {std::numbers::pi})});
  ASSERT_TRUE(e.holdsComplex());
  EXPECT_EQ(e.floatData()[0], -1.0);
  EXPECT_LT(std::fabs(e.imagData()[0]), 1e-7);
  EXPECT_EQ(evalText(module(R"(
  a = c64[2] parameter(0)
  b = c64[2] parameter(1)
  ROOT r = pred[2] compare(a, b), direction=EQ)"),
                     {c64({2}, {1, 2}, {1, 3}), c64({2}, {1, 2}, {1, -3})}),
            "pred[2] {true, false}");
}

TEST(ComplexEvalTest, ConstantsConvertsAndDataMovementKeepBothParts) {
  EXPECT_EQ(evalText(module(R"(
  c = c64[2] constant({(1, 2), (3, 4)})
  p = c64[] constant((0, -1))
  padded = c64[4] pad(c, p), padding=1_1
  b = c64[2,2] broadcast(c), dimensions={1}
  t = c64[2,2] transpose(b), dimensions={1,0}
  s = c64[1,2] slice(t), slice={[1:2], [0:2]}
  ROOT r = (c64[4], c64[1,2]) tuple(padded, s))")),
            "(c64[4] {(0, -1), (1, 2), (3, 4), (0, -1)}, c64[1,2] {{(3, 4), (3, 4)}})");
  EXPECT_EQ(evalText(module(R"(
  x = f32[2] parameter(0)
  i = s32[2] parameter(1)
  a = c64[2] convert(x)
  b = c128[2] convert(a)
  n = c64[2] convert(i)
  c = c64[4] concatenate(a, n), dimensions={0}
  ROOT r = (c128[2], c64[4]) tuple(b, c))"),
                     {f32({2}, {0.5, -1}), s32({2}, {7, -8})}),
            "(c128[2] {(0.5, 0), (-1, 0)}, c64[4] {(0.5, 0), (-1, 0), (7, 0), (-8, 0)})");
  EXPECT_EQ(evalText(module(R"(
  p = pred[2] parameter(0)
  a = c64[2] parameter(1)
  b = c64[2] parameter(2)
  ROOT r = c64[2] select(p, a, b))"),
                     {Value::integers(Shape(PrimitiveType::kPred, {2}), {1, 0}), c64({2}, {1, 2}, {3, 4}),
                      c64({2}, {5, 6}, {7, 8})}),
            "c64[2] {(1, 3), (6, 8)}");
}

TEST(ComplexEvalTest, SumsAndDotsOfComplexArrays) {
  EXPECT_EQ(evalText(module(R"(
  a = c64[2,2] parameter(0)
  z = c64[] constant((0, 0))
  ROOT r = c64[2] reduce(a, z), dimensions={1}, to_apply=add
}
add {
  x = c64[] parameter(0)
  y = c64[] parameter(1)
  ROOT s = c64[] add(x, y))"),
                     {c64({2, 2}, {1, 2, 3, 4}, {1, -1, 0, 2})}),
            "c64[2] {(3, 0), (7, 2)}");
  // [[1+i, 2], [0, i]] . [[1], [i]] = [[1 + i + 2i], [i * i]] = [[1+3i], [-1]]
  EXPECT_EQ(evalText(module(R"(
  a = c64[2,2] parameter(0)
  b = c64[2,1] parameter(1)
  ROOT r = c64[2,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})"),
                     {c64({2, 2}, {1, 2, 0, 0}, {1, 0, 0, 1}), c64({2, 1}, {1, 0}, {0, 1})}),
            "c64[2,1] {{(1, 3)}, {(-1, 0)}}");
}

// Ops that call a computation per element pass both parts to it: a scatter-add, jnp.sort's lexicographic comparator
// (real parts, then imaginary ones), a reduce-window sum (jnp.cumsum's form on the CPU), a variadic reduce keeping
// the element of largest magnitude with its index, and logistic.
TEST(ComplexEvalTest, ScatterSortWindowsAndReducersHoldBothParts) {
  const std::string computations = R"(
add {
  x = c64[] parameter(0)
  y = c64[] parameter(1)
  ROOT s = c64[] add(x, y)
}
lexicographic {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ar = f32[] real(a)
  br = f32[] real(b)
  ai = f32[] imag(a)
  bi = f32[] imag(b)
  lt = pred[] compare(ar, br), direction=LT
  eq = pred[] compare(ar, br), direction=EQ
  ilt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, ilt)
  ROOT r = pred[] or(lt, tie)
}
largest {
  a = c64[] parameter(0)
  ai = s32[] parameter(1)
  b = c64[] parameter(2)
  bi = s32[] parameter(3)
  am = f32[] abs(a)
  bm = f32[] abs(b)
  keep = pred[] compare(am, bm), direction=GE
  v = c64[] select(keep, a, b)
  i = s32[] select(keep, ai, bi)
  ROOT t = (c64[], s32[]) tuple(v, i)
})";
  const Value z = c64({4}, {2, 1, 2, -3}, {1, 5, -1, 0});
  EXPECT_EQ(evalText(std::string("HloModule m\nENTRY e {\n") + R"(
  z = c64[4] parameter(0)
  zero = c64[] constant((0, 0))
  base = c64[3] broadcast(zero), dimensions={}
  idx = s32[4,1] constant({{0}, {2}, {0}, {1}})
  ROOT s = c64[3] scatter(base, idx, z), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})" + computations,
                     {z}),
            "c64[3] {(4, 0), (-3, 0), (1, 5)}");
  EXPECT_EQ(evalText(std::string("HloModule m\nENTRY e {\n") + R"(
  z = c64[4] parameter(0)
  ROOT s = c64[4] sort(z), dimensions={0}, is_stable=true, to_apply=lexicographic
})" + computations,
                     {z}),
            "c64[4] {(-3, 0), (1, 5), (2, -1), (2, 1)}");
  EXPECT_EQ(evalText(std::string("HloModule m\nENTRY e {\n") + R"(
  z = c64[4] parameter(0)
  zero = c64[] constant((0, 0))
  ROOT c = c64[4] reduce-window(z, zero), window={size=4 pad=3_0}, to_apply=add
})" + computations,
                     {z}),
            "c64[4] {(2, 1), (3, 6), (5, 5), (2, 5)}");
  EXPECT_EQ(evalText(std::string("HloModule m\nENTRY e {\n") + R"(
  z = c64[4] parameter(0)
  i = s32[4] iota(), iota_dimension=0
  zero = c64[] constant((0, 0))
  none = s32[] constant(-1)
  ROOT r = (c64[], s32[]) reduce(z, i, zero, none), dimensions={0}, to_apply=largest
})" + computations,
                     {z}),
            "(c64[] (1, 5), s32[] 1)");
  // logistic(0) = 1/2; logistic(i pi / 2) = 1 / (1 + e^{-i pi / 2}) = 1 / (1 - i) = (1 + i) / 2.
  const Value l = evalValue(module(R"(
  z = c64[2] parameter(0)
  ROOT l = c64[2] logistic(z))"),
                            {c64({2}, {0, 0}, {0, std::numbers::pi / 2})});
  EXPECT_NEAR(l.floatData()[0], 0.5, 1e-7);
  EXPECT_NEAR(l.imagData()[0], 0, 1e-7);
  EXPECT_NEAR(l.floatData()[1], 0.5, 1e-6);
  EXPECT_NEAR(l.imagData()[1], 0.5, 1e-6);
}

TEST(ComplexEvalTest, FftOfKnownSignals) {
  EXPECT_EQ(evalText(module(R"(
  x = c64[4] parameter(0)
  ROOT f = c64[4] fft(x), fft_type=FFT, fft_length={4})"),
                     {c64({4}, {1, 2, 3, 4}, {0, 0, 0, 0})}),
            "c64[4] {(10, 0), (-2, 2), (-2, 0), (-2, -2)}");
  EXPECT_EQ(evalText(module(R"(
  x = c64[4] parameter(0)
  ROOT f = c64[4] fft(x), fft_type=IFFT, fft_length={4})"),
                     {c64({4}, {10, -2, -2, -2}, {0, 2, 0, -2})}),
            "c64[4] {(1, 0), (2, 0), (3, 0), (4, 0)}");
  EXPECT_EQ(evalText(module(R"(
  x = f32[2,4] parameter(0)
  ROOT f = c64[2,3] fft(x), fft_type=RFFT, fft_length={4})"),
                     {f32({2, 4}, {1, 2, 3, 4, 1, 0, 0, 0})}),
            "c64[2,3] {{(10, 0), (-2, 2), (-2, 0)}, {(1, 0), (1, 0), (1, 0)}}");
  EXPECT_EQ(evalText(module(R"(
  x = c64[3] parameter(0)
  ROOT f = f32[4] fft(x), fft_type=IRFFT, fft_length={4})"),
                     {c64({3}, {10, -2, -2}, {0, 2, 0})}),
            "f32[4] {1, 2, 3, 4}");
}

// The DFT by its definition, in double, over the last `lengths.size()` dimensions of a row-major array of `batch`
// transforms; `sign` -1 forward, +1 inverse (then scaled by 1/N).
std::vector<Complex> directDft(const std::vector<Complex>& x, const std::vector<int64_t>& lengths, int64_t batch,
                               int sign) {
  int64_t points = 1;
  for (int64_t n : lengths) points *= n;
  std::vector<Complex> out(x.size());
  const int rank = static_cast<int>(lengths.size());
  std::vector<int64_t> k(static_cast<size_t>(rank));
  std::vector<int64_t> j(static_cast<size_t>(rank));
  auto unflatten = [&](int64_t linear, std::vector<int64_t>& index) {
    for (int d = rank - 1; d >= 0; --d) {
      index[static_cast<size_t>(d)] = linear % lengths[static_cast<size_t>(d)];
      linear /= lengths[static_cast<size_t>(d)];
    }
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t kk = 0; kk < points; ++kk) {
      unflatten(kk, k);
      long double re = 0;
      long double im = 0;
      for (int64_t jj = 0; jj < points; ++jj) {
        unflatten(jj, j);
        long double phase = 0;
        for (int d = 0; d < rank; ++d) {
          const auto n = static_cast<long double>(lengths[static_cast<size_t>(d)]);
          // The product reduced modulo n first keeps the angle exact.
          phase += static_cast<long double>((k[static_cast<size_t>(d)] * j[static_cast<size_t>(d)]) %
                                            lengths[static_cast<size_t>(d)]) /
                   n;
        }
        const long double angle = sign * 2 * std::numbers::pi_v<long double> * phase;
        const Complex v = x[static_cast<size_t>(b * points + jj)];
        re += v.real() * std::cos(angle) - v.imag() * std::sin(angle);
        im += v.real() * std::sin(angle) + v.imag() * std::cos(angle);
      }
      const long double scale = sign > 0 ? 1.0L / static_cast<long double>(points) : 1.0L;
      out[static_cast<size_t>(b * points + kk)] = {static_cast<double>(re * scale), static_cast<double>(im * scale)};
    }
  }
  return out;
}

TEST(ComplexEvalTest, EveryFftTypeMatchesADirectDft) {
  struct Case {
    std::vector<int64_t> batchDims;
    std::vector<int64_t> lengths;
  };
  const std::vector<Case> cases = {{{3}, {12}},         {{}, {7}},  {{2}, {5, 6}},
                                   {{2, 1}, {3, 4, 5}}, {{4}, {1}}, {{}, {2, 9}}};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (const Case& c : cases) {
    int64_t batch = 1;
    for (int64_t d : c.batchDims) batch *= d;
    int64_t points = 1;
    for (int64_t n : c.lengths) points *= n;
    std::vector<int64_t> dims = c.batchDims;
    dims.insert(dims.end(), c.lengths.begin(), c.lengths.end());
    std::vector<int64_t> half = dims;
    half.back() = c.lengths.back() / 2 + 1;
    std::vector<double> re(static_cast<size_t>(batch * points));
    std::vector<double> im(re.size());
    for (double& v : re) v = uniform(rng);
    for (double& v : im) v = uniform(rng);
    std::vector<Complex> x(re.size());
    std::vector<Complex> realX(re.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = {re[i], im[i]};
      realX[i] = {re[i], 0};
    }
    auto text = [](const std::vector<int64_t>& d) {
      std::string s;
      for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
      return s;
    };
    const std::string full = text(dims);
    const std::string halved = text(half);
    const std::string lengths = text(c.lengths);
    auto run = [&](std::string_view type, std::string_view in, std::string_view out, const Value& arg) {
      return evalValue(module(fmt::format("  x = {} parameter(0)\n  ROOT f = {} fft(x), fft_type={}, fft_length={{{}}}",
                                          in, out, type, lengths)),
                       {arg});
    };
    const Value complexArg = Value::complex(Shape(PrimitiveType::kC128, dims), re, im);
    const Value realArg = Value::floats(Shape(PrimitiveType::kF64, dims), re);
    const std::vector<Complex> forward = directDft(x, c.lengths, batch, -1);
    const std::vector<Complex> inverse = directDft(x, c.lengths, batch, +1);
    const std::vector<Complex> realForward = directDft(realX, c.lengths, batch, -1);
    SCOPED_TRACE(fmt::format("fft_length={{{}}} over {}", lengths, full));
    const Value fft = run("FFT", "c128[" + full + "]", "c128[" + full + "]", complexArg);
    const Value ifft = run("IFFT", "c128[" + full + "]", "c128[" + full + "]", complexArg);
    const Value rfft = run("RFFT", "f64[" + full + "]", "c128[" + halved + "]", realArg);
    ASSERT_TRUE(fft.holdsComplex() && ifft.holdsComplex() && rfft.holdsComplex());
    const double tolerance = 1e-12 * static_cast<double>(points);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(fft.floatData()[i], forward[i].real(), tolerance) << i;
      EXPECT_NEAR(fft.imagData()[i], forward[i].imag(), tolerance) << i;
      EXPECT_NEAR(ifft.floatData()[i], inverse[i].real(), tolerance) << i;
      EXPECT_NEAR(ifft.imagData()[i], inverse[i].imag(), tolerance) << i;
    }
    // RFFT is the first n/2+1 of the last dimension of the real input's DFT.
    const int64_t n = c.lengths.back();
    const int64_t h = n / 2 + 1;
    for (int64_t row = 0; row < batch * points / n; ++row) {
      for (int64_t col = 0; col < h; ++col) {
        const auto at = static_cast<size_t>(row * h + col);
        const auto from = static_cast<size_t>(row * n + col);
        EXPECT_NEAR(rfft.floatData()[at], realForward[from].real(), tolerance);
        EXPECT_NEAR(rfft.imagData()[at], realForward[from].imag(), tolerance);
      }
    }
    // IRFFT of RFFT's output gives the real input back.
    const Value back = run("IRFFT", "c128[" + halved + "]", "f64[" + full + "]", rfft);
    ASSERT_EQ(back.floatData().size(), re.size());
    for (size_t i = 0; i < re.size(); ++i) EXPECT_NEAR(back.floatData()[i], re[i], tolerance) << i;
  }
}

TEST(ComplexEvalTest, MalformedFftsAndUnsupportedComplexOpsAreRefusedByName) {
  EXPECT_EQ(evalText(module(R"(
  x = c64[8] parameter(0)
  ROOT f = c64[8] fft(x), fft_type=FFT, fft_length={4})"),
                     {c64({8}, std::vector<double>(8, 0), std::vector<double>(8, 0))}),
            "ERROR: f: fft: FFT with fft_length={4} needs dimension 0 of 4 in and 4 out, has c64[8] -> c64[8]");
  EXPECT_EQ(evalText(module(R"(
  x = f32[8] parameter(0)
  ROOT f = c64[4] fft(x), fft_type=RFFT, fft_length={8})"),
                     {f32({8}, std::vector<double>(8, 0))})
                .substr(0, 30),
            "ERROR: f: fft: RFFT with fft_l");
  EXPECT_EQ(evalText(module(R"(
  a = c64[2] parameter(0)
  ROOT m = c64[2] maximum(a, a))"),
                     {c64({2}, {1, 2}, {0, 0})}),
            "ERROR: cannot evaluate: unsupported opcode(s) maximum (complex) (1)");
  EXPECT_EQ(evalText(module(R"(
  a = c64[2] parameter(0)
  ROOT c = f32[2] convert(a))"),
                     {c64({2}, {1, 2}, {0, 0})}),
            "ERROR: c: convert from a complex type to a real one is not defined (take real() or abs())");
}

TEST(ComplexEvalTest, TheResultCheckMeasuresComplexOutputsByTheirDistance) {
  StatusOr<std::unique_ptr<HloModule>> m = core::parseHloModule(module(R"(
  x = f32[4,64] parameter(0)
  f = c64[4,33] fft(x), fft_type=RFFT, fft_length={64}
  ROOT g = c64[4,33] multiply(f, f))"));
  ASSERT_TRUE(m.ok()) << m.message();
  std::vector<Value> args = core::randomArguments(**m, 3);
  StatusOr<EvalResult> reference = core::evaluateModule(**m, args);
  ASSERT_TRUE(reference.ok()) << reference.message();
  StatusOr<core::ResultBounds> bounds = core::resultBounds(**m, args, reference->result);
  ASSERT_TRUE(bounds.ok()) << bounds.message();
  const Value& expected = reference->result;
  EXPECT_TRUE(core::checkResult(*bounds, expected, expected)[0].passed());
  const double bound = core::checkResult(*bounds, expected, expected)[0].bound;
  EXPECT_GT(bound, 0);
  // An error in the imaginary part alone, four times the largest bound, fails.
  std::vector<double> im(expected.imagData().begin(), expected.imagData().end());
  im[5] += 4 * bound;
  const Value wrong =
      Value::complex(expected.shape(), {expected.floatData().begin(), expected.floatData().end()}, std::move(im));
  const std::vector<core::OutputCheck> checks = core::checkResult(*bounds, expected, wrong);
  EXPECT_EQ(checks[0].failures, 1);
  EXPECT_NE(checks[0].firstFailure.find("element 5 (linear): ("), std::string::npos) << checks[0].firstFailure;
}

}  // namespace
}  // namespace fusionscope::testing
