// rng-bit-generator compiled for the CPU (expanded by codegen preparation, or by the presets): XLA's numbers bit
// for bit on every vector of tests/data/rng/vectors.json, and a generator fused into dropout agrees with the
// evaluator.
#include <gtest/gtest.h>

#include "core/runtime/cpu_executable.h"
#include "tests/core/testing/codegen_testing.h"
#include "tests/core/testing/rng_vectors.h"

namespace fusionscope::core {
namespace {

// Every vector through the cpu preset (the expansion fused: a kernel for the bits, one for the state), and one
// ThreeFry vector also as written, one kernel per op of the expansion (about 300; Philox runs unfused in the
// dropout test below). Compiling all ~120 vectors unfused took 12 minutes, 28 under AddressSanitizer, for nothing
// the fused runs and the expander's own test against the evaluator do not already cover.
TEST(RngBitGeneratorRunTest, CompiledGeneratorsReturnXlasNumbers) {
  CpuCompileOptions options;
  options.threads = 2;
  options.minParallelRange = 16;
  bool unfusedDone = false;
#if defined(__SANITIZE_ADDRESS__)
  // Each vector's pipeline + JIT takes ~4 s under AddressSanitizer (over 8 min for all ~120); there every 8th
  // vector runs (all three algorithms, every output width), the dev suite runs all of them.
  constexpr size_t kStride = 8;
#else
  constexpr size_t kStride = 1;
#endif
  const std::vector<testing::RngVector> vectors = testing::loadRngVectors();
  ASSERT_FALSE(vectors.empty());
  for (size_t i = 0; i < vectors.size(); ++i) {
    const testing::RngVector& v = vectors[i];
    const bool unfusedCandidate = !unfusedDone && v.algorithm == "rng_three_fry" && v.dims.size() > 1;
    if (i % kStride != 0 && !unfusedCandidate) {
      continue;
    }
    std::unique_ptr<HloModule> module = testing::parseOrFail(v.module());
    ASSERT_NE(module, nullptr);
    std::vector<std::unique_ptr<HloModule>> variants;
    variants.push_back(testing::runPipelineOn(*module, "cpu"));
    if (unfusedCandidate) {
      unfusedDone = true;
      variants.push_back(std::move(module));
    }
    for (const std::unique_ptr<HloModule>& variant : variants) {
      StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*variant, options);
      ASSERT_TRUE(executable.ok()) << v.label() << ": " << executable.message();
      StatusOr<Value> result = (*executable)->run({v.stateValue()});
      ASSERT_TRUE(result.ok()) << v.label() << ": " << result.message();
      EXPECT_EQ(v.mismatch(*result), "") << v.label() << (variant == variants.front() ? " (cpu preset)" : " (unfused)");
    }
  }
  EXPECT_TRUE(unfusedDone) << "a ThreeFry vector ran unfused";
}

// Dropout as jax.random's rbg generator writes it (the key as u32[4] data), unfused and through both presets.
TEST(RngBitGeneratorRunTest, DropoutMatchesTheEvaluator) {
  testing::expectAllAgree(R"(HloModule dropout
ENTRY e {
  key = u32[4] parameter(0)
  x = f32[33,70] parameter(1)
  k2 = u32[2,2] reshape(key)
  state = u64[2] bitcast-convert(k2)
  rng = (u64[2], u32[33,70]) rng-bit-generator(state), algorithm=rng_default
  bits = u32[33,70] get-tuple-element(rng), index=1
  nine = u32[] constant(9)
  nines = u32[33,70] broadcast(nine), dimensions={}
  mantissa = u32[33,70] shift-right-logical(bits, nines)
  one_bits = u32[] constant(1065353216)
  ones_bits = u32[33,70] broadcast(one_bits), dimensions={}
  float_bits = u32[33,70] or(mantissa, ones_bits)
  f = f32[33,70] bitcast-convert(float_bits)
  one = f32[] constant(1)
  ones = f32[33,70] broadcast(one), dimensions={}
  u = f32[33,70] subtract(f, ones)
  p = f32[] constant(0.9)
  ps = f32[33,70] broadcast(p), dimensions={}
  keep = pred[33,70] compare(u, ps), direction=LT
  zero = f32[] constant(0)
  zeros = f32[33,70] broadcast(zero), dimensions={}
  y = f32[33,70] select(keep, x, zeros)
  next = u64[2] get-tuple-element(rng), index=0
  three = (u64[2], u64[3]) rng-bit-generator(next), algorithm=rng_three_fry
  last = u64[2] get-tuple-element(three), index=0
  wide = u64[3] get-tuple-element(three), index=1
  ROOT out = (u64[2], u64[3], f32[33,70]) tuple(last, wide, y)
})");
}

}  // namespace
}  // namespace fusionscope::core
