#include "core/passes/reduce_window_rewriter.h"

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/ir/hlo_clone.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::parseOrFail;

// A scan of `length` elements along dimension 1 of f32[3, length] (jnp.cumsum(x, axis=1) on the CPU), with the
// given padding and reducer.
std::string scanModule(int64_t length, const std::string& pad, const std::string& reducer, const std::string& init,
                       int64_t outLength) {
  return fmt::format(R"(
HloModule m
red {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] {2}(a, b)
}}
ENTRY main {{
  x = f32[3,{0}] parameter(0)
  z = f32[] constant({3})
  ROOT c = f32[3,{4}] reduce-window(x, z), window={{size=1x{0} pad=0_0x{1}}}, to_apply=red
}}
)",
                     length, pad, reducer, init, outLength);
}

void expectRewrittenAndSame(const std::string& text) {
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  auto original = cloneModule(*module);
  ReduceWindowRewriter pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  // Every reduce-window left is short: kBase within a column, or the columns' count.
  for (const auto& inst : module->entry()->instructions()) {
    if (inst->opcode() != HloOpcode::kReduceWindow) continue;
    for (const WindowDim& w : inst->attributes().window->dims) {
      EXPECT_LE(w.size, ReduceWindowRewriter::kBase) << printModule(*module);
    }
  }
  // Sums and products in another order round differently; a maximum is exact.
  testing::expectResultsWithinRounding(*original, *module, 7);
  EXPECT_FALSE(testing::runPass(pass, *module)) << "a second run changed the module again";
}

TEST(ReduceWindowRewriterTest, AForwardCumulativeSumIsTwoShortScans) {
  // 70 elements: padded to 80, five columns of 16.
  expectRewrittenAndSame(scanModule(70, "69_0", "add", "0", 70));
}

TEST(ReduceWindowRewriterTest, AReverseCumulativeMaximumIsTwoShortScans) {
  expectRewrittenAndSame(scanModule(64, "0_63", "maximum", "-inf", 64));
}

TEST(ReduceWindowRewriterTest, AnExclusiveCumulativeProductIsTwoShortScansPadded) {
  // Padded by the whole length: one more output, the init value first.
  expectRewrittenAndSame(scanModule(40, "40_0", "multiply", "1", 41));
}

TEST(ReduceWindowRewriterTest, ShortScansAndOtherWindowsStay) {
  ReduceWindowRewriter pass;
  // 16 elements: short already.
  auto shortScan = parseOrFail(scanModule(16, "15_0", "add", "0", 16));
  ASSERT_NE(shortScan, nullptr);
  EXPECT_FALSE(testing::runPass(pass, *shortScan));
  // A sliding window (size 3 over 64): no scan.
  auto pool = parseOrFail(R"(
HloModule m
red {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  x = f32[3,64] parameter(0)
  z = f32[] constant(0)
  ROOT c = f32[3,62] reduce-window(x, z), window={size=1x3}, to_apply=red
}
)");
  ASSERT_NE(pool, nullptr);
  EXPECT_FALSE(testing::runPass(pass, *pool));
}

}  // namespace
}  // namespace fusionscope::core
