// f32 exp, expm1, log, log1p, sin, cos, tanh and erf, which the CPU backend computes as polynomial and rational
// approximations in the generated code (vectorised), against the double-precision functions over every order of
// magnitude of f32, with the edge values; f64 exp and log (also in the IR) and f64 tanh, erf, expm1, log1p and atan2
// (glibc's vector math) likewise.
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/eval/value.h"
#include "core/runtime/cpu_executable.h"
#include "core/text/hlo_parser.h"

namespace fusionscope::core {
namespace {

// Inputs: 0, +-denormals, +-1e-30 .. +-1e3 (16 per decade), a dense sweep of [-10, 10], the approximations'
// clamps and their neighbours, +-inf and NaN.
std::vector<float> inputs() {
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           std::numeric_limits<float>::denorm_min(),
                           -1e-40f,
                           1e-40f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           0.0004f,
                           0.00039999f,
                           7.905311f,
                           7.9053116f,
                           4.0f,
                           3.9999998f,
                           4.0000005f,
                           std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max()};
  for (int decade = -30; decade < 3; ++decade) {
    for (int k = 0; k < 16; ++k) {
      const float x = static_cast<float>(std::pow(10.0, decade + k / 16.0));
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  for (int i = -20000; i <= 20000; ++i) xs.push_back(static_cast<float>(i) / 2000.0f);
  return xs;
}

// Units in the last place of `expected` (as an f32) between the result and the double reference.
double ulps(float actual, double expected) {
  const float rounded = static_cast<float>(expected);
  const float spacing = std::nextafter(std::fabs(rounded), std::numeric_limits<float>::infinity()) - std::fabs(rounded);
  return std::fabs(static_cast<double>(actual) - expected) / static_cast<double>(spacing);
}

std::vector<float> runUnary(const std::string& opcode, const std::vector<float>& xs) {
  const std::string text =
      fmt::format("HloModule m\nENTRY main {{\n  p = f32[{0}]{{0}} parameter(0)\n  ROOT y = f32[{0}]{{0}} {1}(p)\n}}\n",
                  xs.size(), opcode);
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.message();
  if (!module.ok()) return {};
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(**module, CpuCompileOptions{});
  EXPECT_TRUE(executable.ok()) << executable.message();
  if (!executable.ok()) return {};
  std::vector<double> values(xs.begin(), xs.end());
  StatusOr<Value> result =
      (*executable)->run({Value::floats(Shape(PrimitiveType::kF32, {static_cast<int64_t>(xs.size())}), values)});
  EXPECT_TRUE(result.ok()) << result.message();
  if (!result.ok()) return {};
  std::vector<float> out;
  for (double v : result->floatData()) out.push_back(static_cast<float>(v));
  return out;
}

void expectClose(const std::string& opcode, double (*reference)(double), double maxUlps,
                 const std::vector<float>& extra = {}) {
  std::vector<float> xs = inputs();
  xs.insert(xs.end(), extra.begin(), extra.end());
  const std::vector<float> ys = runUnary(opcode, xs);
  ASSERT_EQ(ys.size(), xs.size());
  double worst = 0;
  float worstAt = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double expected = reference(static_cast<double>(xs[i]));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(ys[i])) << opcode << "(" << xs[i] << ") = " << ys[i];
      continue;
    }
    // The function's value at the infinities, signed zero at zero, inf where the result overflows f32.
    if (std::isinf(xs[i]) || expected == 0.0 || std::isinf(static_cast<float>(expected))) {
      EXPECT_EQ(ys[i], static_cast<float>(expected)) << opcode << "(" << xs[i] << ")";
      EXPECT_EQ(std::signbit(ys[i]), std::signbit(expected)) << opcode << "(" << xs[i] << ")";
      continue;
    }
    const double error = ulps(ys[i], expected);
    if (error > worst) {
      worst = error;
      worstAt = xs[i];
    }
  }
  EXPECT_LE(worst, maxUlps) << opcode << ": worst at x = " << worstAt;
  ::testing::Test::RecordProperty(opcode + "_max_ulp", fmt::format("{:.2f}", worst));
}

// exp over its whole range: results from inf down through the denormals to 0 (x in [-105, 90] densely), with the
// edges of the clamps. A denormal result is held to 1 ulp of the smallest denormal (the test's ulp is that spacing).
TEST(VectorMathTest, ExpIsWithinOneUlpEverywhere) {
  std::vector<float> extra = {88.72283f,  88.72284f,   88.7229f, 89.0f,   89.1f, -87.33654f, -87.4f,
                              -103.2789f, -103.97208f, -104.0f,  -104.1f, -1e9f, 1e9f};
  for (int i = -105000; i <= 90000; i += 3) extra.push_back(static_cast<float>(i) / 1000.0f);
  expectClose(
      "exponential", [](double x) { return std::exp(x); }, 1.0, extra);
}

// log over positive inputs of every exponent, denormals included (each power of two and points between), densely
// around 1 where the result is small, and the specials: 0 and -0 give -inf, negatives NaN, inf itself.
TEST(VectorMathTest, LogIsWithinOneUlpEverywhere) {
  std::vector<float> extra = {std::numeric_limits<float>::min(),
                              1.1754942e-38f,
                              std::numeric_limits<float>::max(),
                              -std::numeric_limits<float>::denorm_min(),
                              0.70710677f,
                              0.7071068f,
                              1.4142135f,
                              1.4142137f};
  for (int exponent = -149; exponent <= 127; ++exponent) {
    for (float m : {1.0f, 1.1f, 1.4142135f, 1.5f, 1.9999999f}) extra.push_back(std::ldexp(m, exponent));
  }
  for (int i = 0; i <= 60000; ++i) extra.push_back(0.5f + static_cast<float>(i) / 40000.0f);
  expectClose(
      "log", [](double x) { return std::log(x); }, 1.0, extra);
}

// expm1 and log1p: near 0 (the test's inputs down to 1e-30) they keep their relative accuracy, where exp - 1 and
// log(1 + x) would lose it all; the dense sweeps cross the points where the reduction's n changes (|x| = ln2/2, 3
// ln2/2).
TEST(VectorMathTest, Expm1IsWithinTwoUlpsEverywhere) {
  std::vector<float> extra = {0.3465735f, 0.3465736f, -0.3465735f, -0.3465736f, 88.7f, 89.0f, -20.0f, -104.5f};
  for (int i = -30000; i <= 30000; ++i) extra.push_back(static_cast<float>(i) / 20000.0f);
  expectClose(
      "exponential-minus-one", [](double x) { return std::expm1(x); }, 2.0, extra);
}

TEST(VectorMathTest, Log1pIsWithinTwoUlpsEverywhere) {
  std::vector<float> extra = {-1.0f, -0.99999994f, -1.0000001f, -0.5f, 1e-8f, -1e-8f, 3.4e38f};
  for (int i = -19999; i <= 40000; ++i) extra.push_back(static_cast<float>(i) / 20000.0f);
  expectClose(
      "log-plus-one", [](double x) { return std::log1p(x); }, 2.0, extra);
}

TEST(VectorMathTest, TanhIsWithinSixUlpsEverywhere) {
  expectClose(
      "tanh", [](double x) { return std::tanh(x); }, 6.0);
}

TEST(VectorMathTest, ErfIsWithinEightUlpsEverywhere) {
  expectClose(
      "erf", [](double x) { return std::erf(x); }, 8.0);
}

// f32 sin and cos, reduced exactly for any argument (a table of 2/pi's bits per exponent): every exponent of f32
// from the denormals to the largest with pseudo-random mantissas, integers (positions times frequencies), the
// f32 values nearest multiples of pi/2 up to 10^4 pi (where the result is smallest and a reduction that loses bits
// shows most), against the double sin and cos (exact reduction): within 1 ulp, NaN for inf and NaN.
std::vector<float> sinCosInputs() {
  std::vector<float> xs;
  uint32_t state = 12345;
  for (uint32_t exponent = 0; exponent < 255; ++exponent) {
    for (int i = 0; i < 200; ++i) {
      state = state * 1664525u + 1013904223u;
      const uint32_t bits = (exponent << 23) | (state >> 9);
      float x = 0;
      std::memcpy(&x, &bits, sizeof x);
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  for (int i = 0; i <= 200000; i += 7) xs.push_back(static_cast<float>(i));
  for (int k = 1; k <= 20000; ++k) {
    const float near = static_cast<float>(k * 1.5707963267948966);
    xs.push_back(near);
    xs.push_back(std::nextafter(near, 0.0f));
    xs.push_back(std::nextafter(near, 1e30f));
  }
  return xs;
}

TEST(VectorMathTest, SinIsWithinOneUlpForAnyArgument) {
  expectClose(
      "sine", [](double x) { return std::sin(x); }, 1.0, sinCosInputs());
}

TEST(VectorMathTest, CosIsWithinOneUlpForAnyArgument) {
  expectClose(
      "cosine", [](double x) { return std::cos(x); }, 1.0, sinCosInputs());
}

// f32 atan2, a polynomial in the IR: every pair of a grid of y and x over every order of magnitude and sign (zeros,
// denormals, infinities and NaN included) and a dense circle, against the double atan2: within 2 ulp; the specials
// (zeros, infinities, NaN) exactly as IEEE atan2 gives them.
TEST(VectorMathTest, Atan2IsWithinTwoUlpsEverywhere) {
  std::vector<float> axis = {0.0f,
                             -0.0f,
                             std::numeric_limits<float>::denorm_min(),
                             -1e-40f,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::max(),
                             -std::numeric_limits<float>::max(),
                             0.41421354f,
                             0.41421357f,
                             1.0f,
                             -1.0f};
  for (int decade = -30; decade < 30; decade += 3) {
    for (int k = 0; k < 4; ++k) {
      const float v = static_cast<float>(std::pow(10.0, decade + k / 4.0));
      axis.push_back(v);
      axis.push_back(-v);
    }
  }
  std::vector<float> ys;
  std::vector<float> xs;
  for (float y : axis) {
    for (float x : axis) {
      ys.push_back(y);
      xs.push_back(x);
    }
  }
  for (int i = 0; i < 20000; ++i) {
    const double angle = -3.2 + 6.4 * i / 20000.0;
    ys.push_back(static_cast<float>(std::sin(angle) * 3.0));
    xs.push_back(static_cast<float>(std::cos(angle) * 3.0));
  }
  const std::string text = fmt::format(
      "HloModule m\nENTRY main {{\n  y = f32[{0}]{{0}} parameter(0)\n  x = f32[{0}]{{0}} parameter(1)\n"
      "  ROOT a = f32[{0}]{{0}} atan2(y, x)\n}}\n",
      xs.size());
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(**module, CpuCompileOptions{});
  ASSERT_TRUE(executable.ok()) << executable.message();
  const Shape shape(PrimitiveType::kF32, {static_cast<int64_t>(xs.size())});
  StatusOr<Value> result = (*executable)
                               ->run({Value::floats(shape, std::vector<double>(ys.begin(), ys.end())),
                                      Value::floats(shape, std::vector<double>(xs.begin(), xs.end()))});
  ASSERT_TRUE(result.ok()) << result.message();
  const std::vector<double> out(result->floatData().begin(), result->floatData().end());
  ASSERT_EQ(out.size(), xs.size());
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double expected = std::atan2(static_cast<double>(ys[i]), static_cast<double>(xs[i]));
    const float actual = static_cast<float>(out[i]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(actual)) << "atan2(" << ys[i] << ", " << xs[i] << ") = " << actual;
      continue;
    }
    if (expected == 0.0 || std::isinf(xs[i]) || std::isinf(ys[i])) {
      EXPECT_LE(ulps(actual, expected), 1.0) << "atan2(" << ys[i] << ", " << xs[i] << ") = " << actual;
      EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << "atan2(" << ys[i] << ", " << xs[i] << ")";
      continue;
    }
    const double error = ulps(actual, expected);
    EXPECT_LE(error, 2.0) << "atan2(" << ys[i] << ", " << xs[i] << ") = " << actual << ", not " << expected;
    worst = std::max(worst, error);
  }
  ::testing::Test::RecordProperty("atan2_max_ulp", fmt::format("{:.2f}", worst));
}

// The largest error, in ulps of the result (of the smallest denormal for a denormal result), of the generated f64
// `opcode` against `reference` in long double over `xs`; specials, zeros and infinities exactly.
double f64WorstUlps(const std::string& opcode, const std::vector<double>& xs, long double (*reference)(long double)) {
  const std::string text =
      fmt::format("HloModule m\nENTRY main {{\n  p = f64[{0}]{{0}} parameter(0)\n  ROOT y = f64[{0}]{{0}} {1}(p)\n}}\n",
                  xs.size(), opcode);
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.message();
  if (!module.ok()) return -1;
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(**module, CpuCompileOptions{});
  EXPECT_TRUE(executable.ok()) << executable.message();
  if (!executable.ok()) return -1;
  StatusOr<Value> result =
      (*executable)->run({Value::floats(Shape(PrimitiveType::kF64, {static_cast<int64_t>(xs.size())}), xs)});
  EXPECT_TRUE(result.ok()) << result.message();
  if (!result.ok()) return -1;
  const std::vector<double> ys(result->floatData().begin(), result->floatData().end());
  EXPECT_EQ(ys.size(), xs.size());
  double worst = 0;
  double worstAt = 0;
  for (size_t i = 0; i < xs.size() && i < ys.size(); ++i) {
    const long double expected = reference(static_cast<long double>(xs[i]));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(ys[i])) << opcode << "(" << xs[i] << ") = " << ys[i];
      continue;
    }
    const double rounded = static_cast<double>(expected);
    if (std::isinf(xs[i]) || rounded == 0.0 || std::isinf(rounded)) {
      EXPECT_EQ(ys[i], rounded) << opcode << "(" << xs[i] << ")";
      continue;
    }
    const double magnitude = std::fabs(rounded);
    const double spacing = std::nextafter(magnitude, std::numeric_limits<double>::infinity()) - magnitude;
    const double error = static_cast<double>(std::fabs(static_cast<long double>(ys[i]) - expected) / spacing);
    if (error > worst) {
      worst = error;
      worstAt = xs[i];
    }
  }
  ::testing::Test::RecordProperty("f64_" + opcode + "_max_ulp", fmt::format("{:.2f}", worst));
  ::testing::Test::RecordProperty("f64_" + opcode + "_worst_at", fmt::format("{}", worstAt));
  return worst;
}

// f64 exp, also a polynomial in the IR: over its whole range, results from inf down through the denormals to 0
// (x in [-750, 712], every 1/64, and a dense sweep of [-2, 2]), the clamps' edges and the specials, within 1 ulp.
TEST(VectorMathTest, F64ExpIsWithinOneUlpEverywhere) {
  std::vector<double> xs = {0.0,
                            -0.0,
                            std::numeric_limits<double>::denorm_min(),
                            -std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(),
                            709.782712893384,
                            709.7827128933841,
                            710.0,
                            -708.3964185322641,
                            -744.4400719213812,
                            -745.1332191019411,
                            -745.2,
                            -746.0,
                            -1e300,
                            1e300};
  for (int i = -750 * 64; i <= 712 * 64; ++i) xs.push_back(i / 64.0 + 1.0 / 7.0);
  for (int i = -20000; i <= 20000; ++i) xs.push_back(i / 10000.0);
  EXPECT_LE(f64WorstUlps("exponential", xs, [](long double x) { return std::exp(x); }), 1.0);
}

// f64 log over positive inputs of every exponent, denormals included (each power of two and points between), densely
// around 1, and the specials: 0 and -0 give -inf, negatives NaN, inf itself; within 1 ulp.
TEST(VectorMathTest, F64LogIsWithinOneUlpEverywhere) {
  std::vector<double> xs = {0.0,
                            -0.0,
                            -1.0,
                            -std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::min(),
                            std::numeric_limits<double>::max(),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(),
                            1.0,
                            std::nextafter(1.0, 2.0),
                            std::nextafter(1.0, 0.0)};
  for (int e = -1074; e <= 1023; ++e) {
    for (double m : {1.0, 1.1, 1.41421356, 1.5, 1.9999}) xs.push_back(std::ldexp(m, e));
  }
  for (int i = 1; i <= 40000; ++i) xs.push_back(0.5 + i / 40000.0);
  for (int i = 1; i <= 2000; ++i) xs.push_back(1.0 + i * 1e-12);
  EXPECT_LE(f64WorstUlps("log", xs, [](long double x) { return std::log(x); }), 1.0);
}

// f64 tanh, erf, expm1 and log1p, which the CPU backend hands to glibc's vector math (libmvec) where it is loaded,
// else to libm one element at a time: within 4 ulps (libmvec's documented bound) over zeros, denormals, every
// decade from 1e-300 to 1e300 of both signs, a dense sweep of [-20, 20] and the specials (log1p of -1 is -inf, of
// less than -1 NaN).
TEST(VectorMathTest, F64TanhErfExpm1Log1pAreWithinFourUlpsEverywhere) {
  std::vector<double> xs = {0.0,
                            -0.0,
                            std::numeric_limits<double>::denorm_min(),
                            -std::numeric_limits<double>::denorm_min(),
                            1e-310,
                            -1e-310,
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(),
                            -1.0,
                            -2.0,
                            709.0,
                            710.0,
                            -750.0};
  for (int decade = -300; decade < 300; ++decade) {
    for (int k = 0; k < 4; ++k) {
      const double x = std::pow(10.0, decade + k / 4.0);
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  for (int i = -40000; i <= 40000; ++i) xs.push_back(i / 2000.0);
  EXPECT_LE(f64WorstUlps("tanh", xs, [](long double x) { return std::tanh(x); }), 4.0);
  EXPECT_LE(f64WorstUlps("erf", xs, [](long double x) { return std::erf(x); }), 4.0);
  EXPECT_LE(f64WorstUlps("exponential-minus-one", xs, [](long double x) { return std::expm1(x); }), 4.0);
  EXPECT_LE(f64WorstUlps("log-plus-one", xs, [](long double x) { return std::log1p(x); }), 4.0);
}

// With libmvec loaded, a loop over f64 tanh or atan2 calls its vector variants (`_ZGV..._tanh`), not libm once per
// element (2.0 ms for 65,536 tanh before, 0.23 ms with them).
TEST(VectorMathTest, F64TanhAndAtan2LoopsCallLibmvecsVectorVariants) {
  void* libmvec = dlopen("libmvec.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (libmvec == nullptr || dlsym(libmvec, "_ZGVbN2v_tanh") == nullptr) {
    GTEST_SKIP() << "no libmvec with f64 tanh (glibc 2.35 or later) here";
  }
  auto module = parseHloModule(R"(HloModule m
ENTRY main {
  x = f64[4096]{0} parameter(0)
  y = f64[4096]{0} parameter(1)
  t = f64[4096]{0} tanh(x)
  a = f64[4096]{0} atan2(x, y)
  ROOT r = (f64[4096]{0}, f64[4096]{0}) tuple(t, a)
}
)");
  ASSERT_TRUE(module.ok()) << module.message();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("fs_vector_math_ir_{}", static_cast<long>(getpid()));
  std::filesystem::create_directories(dir);
  CpuCompileOptions options;
  options.dumpIrDirectory = dir.string();
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(**module, options);
  ASSERT_TRUE(executable.ok()) << executable.message();
  std::string ir;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    ir += std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(std::regex_search(ir, std::regex(R"(call .*@_ZGV[bd]N[24]v_tanh\()"))) << ir.substr(0, 4000);
  EXPECT_TRUE(std::regex_search(ir, std::regex(R"(call .*@_ZGV[bd]N[24]vv_atan2\()"))) << ir.substr(0, 4000);
}

// A loop that reads one operand through computed indices (a gather: spectral's frames of a signal, windowed by a
// cos) still calls the vector cos: the kernel's buffers carry alias scopes, without which LLVM could not prove the
// gathered loads independent of the output's stores and left the loop scalar (32 µs for 1,536 elements, 7 µs now).
TEST(VectorMathTest, GatheringLoopsStillCallTheVectorVariants) {
  auto module = parseHloModule(R"(HloModule m

%windowed (s: f32[832], i: s32[1536,1], x: f32[1536]) -> f32[1536] {
  %s = f32[832]{0} parameter(0)
  %i = s32[1536,1]{1,0} parameter(1)
  %x = f32[1536]{0} parameter(2)
  %g = f32[1536]{0} gather(%s, %i), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
  %c = f32[1536]{0} cosine(%x)
  ROOT %m = f32[1536]{0} multiply(%g, %c)
}

ENTRY main {
  s = f32[832]{0} parameter(0)
  i = s32[1536,1]{1,0} parameter(1)
  x = f32[1536]{0} parameter(2)
  ROOT f = f32[1536]{0} fusion(s, i, x), kind=kLoop, calls=%windowed
}
)");
  ASSERT_TRUE(module.ok()) << module.message();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("fs_gather_cos_ir_{}", static_cast<long>(getpid()));
  std::filesystem::create_directories(dir);
  CpuCompileOptions options;
  options.dumpIrDirectory = dir.string();
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(**module, options);
  ASSERT_TRUE(executable.ok()) << executable.message();
  std::string ir;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    ir += std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(std::regex_search(ir, std::regex(R"(call[^\n]* <\d+ x float> @fusionscope_cosf_v\d+\()")))
      << ir.substr(0, 4000);

  std::vector<double> signal, indices, xs;
  for (int k = 0; k < 832; ++k) signal.push_back(std::sin(0.3 * k) + 0.01 * k);
  for (int k = 0; k < 1536; ++k) {
    indices.push_back(static_cast<double>((k * 37 + 11) % 832));
    xs.push_back(static_cast<float>(0.049087387 * (k % 128)) + static_cast<float>(k / 128) * 100.0f);
  }
  std::vector<int64_t> at(indices.begin(), indices.end());
  StatusOr<Value> result = (*executable)
                               ->run({Value::floats(Shape(PrimitiveType::kF32, {832}), signal),
                                      Value::integers(Shape(PrimitiveType::kS32, {1536, 1}), at),
                                      Value::floats(Shape(PrimitiveType::kF32, {1536}), xs)});
  ASSERT_TRUE(result.ok()) << result.message();
  const auto ys = result->floatData();
  ASSERT_EQ(ys.size(), 1536u);
  for (size_t k = 0; k < ys.size(); ++k) {
    const double expected = static_cast<double>(static_cast<float>(signal[static_cast<size_t>(at[k])])) *
                            std::cos(static_cast<double>(static_cast<float>(xs[k])));
    EXPECT_NEAR(ys[k], expected, 1e-6 * (1.0 + std::fabs(expected))) << "element " << k;
  }
}

}  // namespace
}  // namespace fusionscope::core
