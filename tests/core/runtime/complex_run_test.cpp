// Complex numbers and fft compiled for the CPU against the evaluator (complex arithmetic in std::complex<double>, the
// transforms through FFTW in double), unfused and through both fusion presets; what still cannot run, refused by
// name before compiling; and where fft cannot go (the GPU).
#include <gtest/gtest.h>

#include "core/codegen/aot_compiler.h"
#include "core/codegen/execution_plan.h"
#include "core/codegen/ptx_bundle.h"
#include "tests/core/testing/codegen_testing.h"

namespace fusionscope::core {
namespace {

// Every complex op codegen lowers, fed from real parameters through complex(), fused by the presets into one or two
// loop kernels with real results taken off them.
constexpr std::string_view kElementwise = R"(HloModule complex_elementwise
ENTRY e {
  a = f32[6,33] parameter(0)
  b = f32[6,33] parameter(1)
  z = c64[6,33] complex(a, b)
  w = c64[6,33] complex(b, a)
  sum = c64[6,33] add(z, w)
  difference = c64[6,33] subtract(z, w)
  product = c64[6,33] multiply(z, w)
  quotient = c64[6,33] divide(z, w)
  n = c64[6,33] negate(quotient)
  e = c64[6,33] exponential(z)
  em = c64[6,33] exponential-minus-one(w)
  l = c64[6,33] log(product)
  lp = c64[6,33] log-plus-one(z)
  r = c64[6,33] sqrt(difference)
  rr = c64[6,33] rsqrt(sum)
  s = c64[6,33] sign(z)
  si = c64[6,33] sine(z)
  co = c64[6,33] cosine(w)
  th = c64[6,33] tanh(z)
  ta = c64[6,33] tan(w)
  pw = c64[6,33] power(z, w)
  acc1 = c64[6,33] add(n, e)
  acc2 = c64[6,33] add(acc1, em)
  acc3 = c64[6,33] add(acc2, l)
  acc4 = c64[6,33] add(acc3, lp)
  acc5 = c64[6,33] add(acc4, r)
  acc6 = c64[6,33] add(acc5, rr)
  acc7 = c64[6,33] multiply(acc6, s)
  acc8 = c64[6,33] add(acc7, si)
  acc9a = c64[6,33] subtract(acc8, co)
  acc9b = c64[6,33] add(acc9a, th)
  acc9c = c64[6,33] add(acc9b, ta)
  acc9 = c64[6,33] add(acc9c, pw)
  wide = c128[6,33] convert(acc9)
  back = c64[6,33] convert(wide)
  magnitude = f32[6,33] abs(back)
  re = f32[6,33] real(back)
  im = f32[6,33] imag(acc9)
  same = pred[6,33] compare(z, z), direction=EQ
  different = pred[6,33] compare(z, w), direction=NE
  ROOT t = (c64[6,33], f32[6,33], f32[6,33], f32[6,33], pred[6,33], pred[6,33]) tuple(back, magnitude, re, im, same, different)
}
)";

TEST(ComplexRunTest, ElementwiseOpsMatchTheEvaluator) {
  testing::expectAllAgree(kElementwise);
}

// Constants, data movement of complex elements (both parts move as one), select, a complex sum, and c128.
constexpr std::string_view kMovement = R"(HloModule complex_movement
ENTRY e {
  x = c64[4,8] parameter(0)
  y = c128[8] parameter(1)
  p = pred[4,8] parameter(2)
  k = c64[4] constant({(1, 2), (-3, 0.5), (0, 0), (2.5, -1)})
  kb = c64[4,8] broadcast(k), dimensions={0}
  t = c64[8,4] transpose(x), dimensions={1,0}
  tb = c64[4,8] transpose(t), dimensions={1,0}
  s = c64[4,8] select(p, tb, kb)
  pad = c64[] constant((0, -1))
  padded = c64[6,10] pad(s, pad), padding=1_1x1_1
  sl = c64[4,8] slice(padded), slice={[1:5], [2:10]}
  rev = c64[4,8] reverse(sl), dimensions={1}
  cat = c64[8,8] concatenate(rev, x), dimensions={0}
  zero = c64[] constant((0, 0))
  rows = c64[8] reduce(cat, zero), dimensions={1}, to_apply=add
  one = c128[] constant((1, 0))
  prod = c128[] reduce(y, one), dimensions={0}, to_apply=mul128
  ROOT r = (c64[8,8], c64[8], c128[]) tuple(cat, rows, prod)
}
add {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT s = c64[] add(a, b)
}
mul128 {
  a = c128[] parameter(0)
  b = c128[] parameter(1)
  ROOT m = c128[] multiply(a, b)
}
)";

TEST(ComplexRunTest, DataMovementConstantsAndSumsMatchTheEvaluator) {
  testing::expectAllAgree(kMovement);
}

// Every fft_type, 1 to 3 transformed dimensions, batches, sizes that are not powers of two, both precisions; fed and
// read by fusible work (a spectral filter: a real signal's transform times a filter, back to a real signal).
constexpr std::string_view kTransforms = R"(HloModule transforms
ENTRY e {
  x = f32[5,96] parameter(0)
  h = c64[49] parameter(1)
  z = c64[3,6,10] parameter(2)
  d = f64[2,7,9] parameter(3)
  spectrum = c64[5,49] fft(x), fft_type=RFFT, fft_length={96}
  hb = c64[5,49] broadcast(h), dimensions={1}
  filtered = c64[5,49] multiply(spectrum, hb)
  y = f32[5,96] fft(filtered), fft_type=IRFFT, fft_length={96}
  f2 = c64[3,6,10] fft(z), fft_type=FFT, fft_length={6,10}
  scaled = c64[3,6,10] multiply(f2, f2)
  i3 = c64[3,6,10] fft(scaled), fft_type=IFFT, fft_length={3,6,10}
  power = f32[3,6,10] abs(i3)
  r2 = c128[2,7,5] fft(d), fft_type=RFFT, fft_length={7,9}
  back = f64[2,7,9] fft(r2), fft_type=IRFFT, fft_length={7,9}
  ROOT t = (f32[5,96], f32[3,6,10], c128[2,7,5], f64[2,7,9]) tuple(y, power, r2, back)
}
)";

TEST(ComplexRunTest, EveryFftTypeMatchesTheEvaluator) {
  testing::expectAllAgree(kTransforms);
}

// Complex dots (a batched product of complex matrices, and one reading a transposed operand), fed by fusible work.
TEST(ComplexRunTest, DotsMatchTheEvaluator) {
  testing::expectAllAgree(R"(HloModule complex_dots
ENTRY e {
  a = c64[3,5,7] parameter(0)
  b = c64[3,7,4] parameter(1)
  c = c128[6,6] parameter(2)
  n = c64[3,5,7] negate(a)
  d = c64[3,5,4] dot(n, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ct = c128[6,6] transpose(c), dimensions={1,0}
  g = c128[6,6] dot(c, ct), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  m = f64[6,6] abs(g)
  ROOT t = (c64[3,5,4], f64[6,6]) tuple(d, m)
}
)");
}

// Ops that call a computation per element, on complex elements: a scatter-add with repeated indices and a scatter
// that sets (c128), jnp.sort's lexicographic comparator over rows, jnp.cumsum's reduce-window, a variadic reduce
// keeping each row's element of largest magnitude with its index, and logistic; fed by fusible complex arithmetic.
constexpr std::string_view kCalledComputations = R"(HloModule complex_called
ENTRY e {
  z = c64[6,40] parameter(0)
  w = c64[64] parameter(1)
  idx = s32[64,1] parameter(2)
  d = c128[10] parameter(3)
  didx = s32[3,1] constant({{1}, {7}, {4}})
  dv = c128[3] constant({(1, 2), (-3, 0.5), (0, 7)})
  zz = c64[6,40] multiply(z, z)
  zero = c64[] constant((0, 0))
  base = c64[16] broadcast(zero), dimensions={}
  sums = c64[16] scatter(base, idx, w), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  set = c128[10] scatter(d, didx, dv), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=take128
  sorted = c64[6,40] sort(zz), dimensions={1}, is_stable=true, to_apply=lexicographic
  cumsum = c64[6,40] reduce-window(zz, zero), window={size=1x40 pad=0_0x39_0}, to_apply=add
  i = s32[6,40] iota(), iota_dimension=1
  none = s32[] constant(-1)
  best = (c64[6], s32[6]) reduce(zz, i, zero, none), dimensions={1}, to_apply=largest
  bv = c64[6] get-tuple-element(best), index=0
  bi = s32[6] get-tuple-element(best), index=1
  l = c64[6,40] logistic(z)
  ROOT t = (c64[16], c128[10], c64[6,40], c64[6,40], c64[6], s32[6], c64[6,40]) tuple(sums, set, sorted, cumsum, bv, bi, l)
}
add {
  x = c64[] parameter(0)
  y = c64[] parameter(1)
  ROOT s = c64[] add(x, y)
}
take128 {
  x = c128[] parameter(0)
  ROOT y = c128[] parameter(1)
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
}
)";

TEST(ComplexRunTest, ScatterSortWindowsAndReducersMatchTheEvaluator) {
  testing::expectAllAgree(kCalledComputations);
  std::unique_ptr<HloModule> module = testing::parseOrFail(kCalledComputations);
  StatusOr<PtxBundle> ptx = compilePtxBundle(*module, true);
  ASSERT_TRUE(ptx.ok()) << ptx.message();
}

TEST(ComplexRunTest, OpsCodegenCannotLowerForComplexAreNamedBeforeCompiling) {
  std::unique_ptr<HloModule> module = testing::parseOrFail(R"(HloModule cannot
ENTRY e {
  a = c64[4,4] parameter(0)
  m = c64[4,4] maximum(a, a)
  ROOT r = c64[4,4] remainder(m, a)
}
)");
  StatusOr<ExecutionPlan> plan = planExecution(*module);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("c64 (2 instructions: maximum m, remainder r)"), std::string::npos) << plan.message();
}

TEST(ComplexRunTest, FftHasNoGpuKernelButComplexArithmeticDoes) {
  std::unique_ptr<HloModule> transforms = testing::parseOrFail(kTransforms);
  StatusOr<PtxBundle> bundle = compilePtxBundle(*transforms, false);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.message().find("fft has no GPU kernel here"), std::string::npos) << bundle.message();
  std::unique_ptr<HloModule> elementwise = testing::parseOrFail(kElementwise);
  StatusOr<PtxBundle> ptx = compilePtxBundle(*elementwise, true);
  ASSERT_TRUE(ptx.ok()) << ptx.message();
}

// Ahead-of-time objects run fft through fusionscope_fft_run and say so on their link line (programs linked and run
// against the evaluator: aot_compiler_test.cpp).
TEST(ComplexRunTest, AheadOfTimeObjectsCallTheFftRuntime) {
  std::unique_ptr<HloModule> transforms = testing::parseOrFail(kTransforms);
  for (const char* target : {"x86-64", "aarch64"}) {
    AotOptions options;
    options.target = target;
    options.className = "spectral::Filter";
    StatusOr<AotArtifact> artifact = compileAot(*transforms, options);
    ASSERT_TRUE(artifact.ok()) << target << ": " << artifact.message();
    EXPECT_TRUE(artifact->callsFft()) << target;
    EXPECT_FALSE(artifact->callsLapack()) << target;
    EXPECT_NE(artifact->header.find("libfusionscope_linalg.a -lfftw3f -lfftw3 -lm"), std::string::npos)
        << artifact->header.substr(0, 300);
  }
}

}  // namespace
}  // namespace fusionscope::core
