// The 8-bit float types (f8e5m2, f8e4m3, f8e3m4, f8e4m3fn and the fnuz ones) compiled for the CPU against the
// evaluator: every byte decoded, every tie between neighbouring values rounded to the even byte, random values of
// every magnitude (subnormals, overflow to infinity or NaN) encoded, arithmetic rounded to the type, and an fp8 dot
// accumulating in f32 (jnp.dot(a8, b8, preferred_element_type=jnp.float32)); and the GPU's PTX for them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/codegen/ptx_bundle.h"
#include "tests/core/testing/codegen_testing.h"

namespace fusionscope::core {
namespace {

constexpr const char* kByteFloats[] = {"f8e5m2",     "f8e4m3",     "f8e3m4",       "f8e4m3fn",
                                       "f8e4m3fnuz", "f8e5m2fnuz", "f8e4m3b11fnuz"};

// Decodes every byte, and encodes the midpoint of every pair of neighbouring non-negative bytes (an exact tie:
// round-to-nearest-even keeps the even byte; the last pairs reach the largest finite value, infinity and NaN).
// No parameters: the results are exact and compared byte for byte.
std::string exhaustiveModule(const std::string& type) {
  return fmt::format(R"(HloModule exhaustive_{0}
ENTRY e {{
  codes = u8[256] iota(), iota_dimension=0
  values = {0}[256] bitcast-convert(codes)
  decoded = f32[256] convert(values)
  lo = u8[127] slice(codes), slice={{[0:127]}}
  hi = u8[127] slice(codes), slice={{[1:128]}}
  la = {0}[127] bitcast-convert(lo)
  hb = {0}[127] bitcast-convert(hi)
  a = f32[127] convert(la)
  b = f32[127] convert(hb)
  half = f32[] constant(0.5)
  halves = f32[127] broadcast(half), dimensions={{}}
  ab = f32[127] add(a, b)
  mid = f32[127] multiply(ab, halves)
  tie = {0}[127] convert(mid)
  tieBytes = u8[127] bitcast-convert(tie)
  ROOT t = (f32[256], u8[127]) tuple(decoded, tieBytes)
}}
)",
                     type);
}

TEST(ByteFloatRunTest, EveryByteDecodesAndEveryTieRoundsToEvenAsTheEvaluator) {
  for (const char* type : kByteFloats) {
    SCOPED_TRACE(type);
    std::unique_ptr<HloModule> module = testing::parseOrFail(exhaustiveModule(type));
    ASSERT_NE(module, nullptr);
    StatusOr<EvalResult> expected = evaluateModule(*module, {});
    ASSERT_TRUE(expected.ok()) << expected.message();
    for (int threads : {1, 2}) {
      CpuCompileOptions options;
      options.threads = threads;
      StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module, options);
      ASSERT_TRUE(executable.ok()) << executable.message();
      StatusOr<Value> actual = (*executable)->run({});
      ASSERT_TRUE(actual.ok()) << actual.message();
      // Bytes exactly; decoded values exactly, NaN where the evaluator has NaN.
      EXPECT_EQ(actual->tupleElement(1).toString(-1), expected->result.tupleElement(1).toString(-1));
      EXPECT_EQ(actual->tupleElement(0).toString(-1), expected->result.tupleElement(0).toString(-1));
    }
  }
}

// Random values times scales from 1e-6 to 1e6 (subnormals of every format, overflow of every one) rounded to the
// type and read back as bytes and as f32; sums and products rounded to the type; a dot of two f8 matrices in f32.
TEST(ByteFloatRunTest, RoundingArithmeticAndDotsMatchTheEvaluator) {
  for (const char* type : kByteFloats) {
    SCOPED_TRACE(type);
    testing::expectAllAgree(fmt::format(R"(HloModule byte_float_{0}
ENTRY e {{
  x = f32[9,64] parameter(0)
  y = f32[9,64] parameter(1)
  scales = f32[9] constant({{1e-6, 1e-4, 0.01, 0.3, 1, 7, 100, 3000, 1e6}})
  s = f32[9,64] broadcast(scales), dimensions={{0}}
  xs = f32[9,64] multiply(x, s)
  q = {0}[9,64] convert(xs)
  bytes = u8[9,64] bitcast-convert(q)
  back = f32[9,64] convert(q)
  r = {0}[9,64] convert(y)
  sum = {0}[9,64] add(q, r)
  product = {0}[9,64] multiply(q, r)
  xl = f32[9,32] slice(x), slice={{[0:9], [0:32]}}
  a = {0}[9,32] convert(xl)
  yl = f32[8,32] slice(y), slice={{[0:8], [0:32]}}
  yt = f32[32,8] transpose(yl), dimensions={{1,0}}
  b = {0}[32,8] convert(yt)
  d = f32[9,8] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT t = (u8[9,64], f32[9,64], {0}[9,64], {0}[9,64], f32[9,8]) tuple(bytes, back, sum, product, d)
}}
)",
                                        type));
  }
}

TEST(ByteFloatRunTest, PtxForByteFloatsAssembles) {
  std::unique_ptr<HloModule> module = testing::parseOrFail(exhaustiveModule("f8e4m3fn"));
  ASSERT_NE(module, nullptr);
  StatusOr<PtxBundle> ptx = compilePtxBundle(*module, true);
  ASSERT_TRUE(ptx.ok()) << ptx.message();
}

}  // namespace
}  // namespace fusionscope::core
