// The CPU backend against the reference evaluator for the windowed and indexed ops of real programs
// (core/codegen/window_emitter.cpp, serial_emitter.cpp): reduce-window, convolution, select-and-scatter, gather,
// scatter and sort, as written and through both fusion presets. Random inputs are floats in [-1, 1) and
// integers in [0, 8) (randomArguments), so indices both repeat and stay in range.
#include <string>

#include <gtest/gtest.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/runtime/cpu_executable.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/codegen_testing.h"
#include "tests/core/testing/shared_modules.h"

namespace fusionscope::core {
namespace {

// Seed 11: the random inputs these tests were written against.
void expectAllAgree(std::string_view text) {
  testing::expectAllAgree(text, 11);
}

TEST(WindowOpsTest, ReduceWindowPoolsPaddingAndDilation) {
  expectAllAgree(R"(HloModule rw
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
sub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] subtract(a, b)
}
ENTRY e {
  x = f32[2,7,7,3] parameter(0)
  y = f32[100,10] parameter(1)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  pool = f32[2,3,3,3] reduce-window(x, ninf), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
  same = f32[2,4,4,3] reduce-window(x, ninf), window={size=1x2x2x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, to_apply=max
  avg = f32[2,7,7,3] reduce-window(x, zero), window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}, to_apply=add
  dil = f32[2,12,3,3] reduce-window(x, zero), window={size=1x2x2x1 stride=1x1x2x1 lhs_dilate=1x2x1x1 rhs_dilate=1x1x2x1}, to_apply=add
  tf = f32[4,1] reduce-window(y, zero), window={size=32x10 stride=32x10 pad=14_14x0_0}, to_apply=add
  ordered = f32[2,5,5,3] reduce-window(x, zero), window={size=1x3x3x1}, to_apply=sub
  ROOT t = (f32[2,3,3,3], f32[2,4,4,3], f32[2,7,7,3], f32[2,12,3,3], f32[4,1], f32[2,5,5,3]) tuple(pool, same, avg, dil, tf, ordered)
})");
}

TEST(WindowOpsTest, ReduceWindowWithIntegersAndAFusedProducer) {
  expectAllAgree(R"(HloModule rwi
max {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT m = s32[] maximum(a, b)
}
ENTRY e {
  x = s32[6,9] parameter(0)
  one = s32[] constant(1)
  ones = s32[6,9] broadcast(one), dimensions={}
  y = s32[6,9] add(x, ones)
  low = s32[] constant(-100)
  ROOT p = s32[3,5] reduce-window(y, low), window={size=2x3 stride=2x2 pad=0_0x1_1}, to_apply=max
})");
}

// NHWC / HWIO convolutions take the CPU's per-pixel vector path (rowConvolution), with a bias + ReLU epilogue
// when fused and 40 output features (a full tile of 32 and a tail of 8); an 01oi kernel with 20 input features
// sums 16 of them as a vector and 4 scalar; the others take the elemental loop nest.
TEST(WindowOpsTest, ConvolutionLayoutsStridesAndDilations) {
  expectAllAgree(R"(HloModule conv
ENTRY e {
  x = f32[2,9,9,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  xc = f32[2,3,8,8] parameter(2)
  kc = f32[4,3,3,3] parameter(3)
  g = f32[2,4,4,4] parameter(4)
  kt = f32[3,3,3,4] parameter(5)
  nhwc = f32[2,9,9,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  strided = f32[2,4,4,4] convolution(x, k), window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
  nchw = f32[2,4,6,6] convolution(xc, kc), window={size=3x3}, dim_labels=bf01_oi01->bf01
  atrous = f32[2,5,5,4] convolution(x, k), window={size=3x3 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f
  transposed = f32[2,7,7,3] convolution(g, kt), window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2 rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f
  bias = f32[4] parameter(6)
  bb = f32[2,9,9,4] broadcast(bias), dimensions={3}
  biased = f32[2,9,9,4] add(nhwc, bb)
  zero = f32[] constant(0)
  zb = f32[2,9,9,4] broadcast(zero), dimensions={}
  relu = f32[2,9,9,4] maximum(biased, zb)
  xh = f16[2,6,6,3] parameter(7)
  kh = f16[3,3,3,40] parameter(8)
  half = f16[2,6,6,40] convolution(xh, kh), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  xo = f32[2,6,6,20] parameter(9)
  ko = f32[3,3,5,20] parameter(10)
  oi = f32[2,6,6,5] convolution(xo, ko), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01oi->b01f
  ROOT t = (f32[2,9,9,4], f32[2,4,4,4], f32[2,4,6,6], f32[2,5,5,4], f32[2,7,7,3], f32[2,9,9,4], f16[2,6,6,40], f32[2,6,6,5]) tuple(nhwc, strided, nchw, atrous, transposed, relu, half, oi)
})");
}

TEST(WindowOpsTest, ConvolutionGroupsAndEpilogue) {
  expectAllAgree(R"(HloModule groups
ENTRY e {
  x = f32[2,9,9,3] parameter(0)
  kd = f32[3,3,1,6] parameter(1)
  a = f32[4,5,5,3] parameter(2)
  kb = f32[3,3,3,4] parameter(3)
  bias = f32[6] parameter(4)
  depthwise = f32[2,9,9,6] convolution(x, kd), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=3
  bb = f32[2,9,9,6] broadcast(bias), dimensions={3}
  biased = f32[2,9,9,6] add(depthwise, bb)
  zero = f32[] constant(0)
  zb = f32[2,9,9,6] broadcast(zero), dimensions={}
  relu = f32[2,9,9,6] maximum(biased, zb)
  filterGrad = f32[2,3,3,4] convolution(a, kb), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2
  ROOT t = (f32[2,9,9,6], f32[2,3,3,4]) tuple(relu, filterGrad)
})");
}

TEST(WindowOpsTest, IntegerAndF64Convolutions) {
  expectAllAgree(R"(HloModule intconv
ENTRY e {
  x = s32[1,6,6,2] parameter(0)
  k = s32[2,2,2,3] parameter(1)
  xd = f64[1,5,5,2] parameter(2)
  kd = f64[3,3,2,2] parameter(3)
  ci = s32[1,5,5,3] convolution(x, k), window={size=2x2}, dim_labels=b01f_01io->b01f
  cd = f64[1,5,5,2] convolution(xd, kd), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT t = (s32[1,5,5,3], f64[1,5,5,2]) tuple(ci, cd)
})");
}

TEST(WindowOpsTest, SelectAndScatterRoutesGradientsToTheMaxima) {
  expectAllAgree(R"(HloModule sas
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[2,8,8,3] parameter(0)
  g = f32[2,4,4,3] parameter(1)
  y = f32[7,7] parameter(2)
  h = f32[4,4] parameter(3)
  zero = f32[] constant(0)
  pool = f32[2,8,8,3] select-and-scatter(x, g, zero), window={size=1x2x2x1 stride=1x2x2x1}, select=ge, scatter=add
  overlapping = f32[7,7] select-and-scatter(y, h, zero), window={size=3x3 stride=2x2 pad=1_1x1_1}, select=ge, scatter=add
  ROOT t = (f32[2,8,8,3], f32[7,7]) tuple(pool, overlapping)
})");
}

TEST(WindowOpsTest, GatherAsJaxIndexes) {
  expectAllAgree(R"(HloModule gather
ENTRY e {
  x = f32[10,5] parameter(0)
  idx = s32[4,1] parameter(1)
  flat = s32[3] parameter(2)
  t = f32[6,7,4] parameter(3)
  pairs = s32[5,2] parameter(4)
  rows = f32[4,5] gather(x, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}
  implicit = f32[3,5] gather(x, flat), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}
  points = f32[5,4] gather(t, pairs), offset_dims={1}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1,4}
  windows = f32[4,3,5] gather(x, idx), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={3,5}
  ROOT r = (f32[4,5], f32[3,5], f32[5,4], f32[4,3,5]) tuple(rows, implicit, points, windows)
})");
}

TEST(WindowOpsTest, ScatterAddAsJaxAtAdd) {
  // Eight updates into ten rows at indices in [0, 8): rows collide, and the sum must apply them in order.
  expectAllAgree(R"(HloModule scatter
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
second {
  a = s32[] parameter(0)
  ROOT b = s32[] parameter(1)
}
ENTRY e {
  x = f32[10,5] parameter(0)
  idx = s32[8,1] parameter(1)
  upd = f32[8,5] parameter(2)
  xi = s32[9] parameter(3)
  ii = s32[6] parameter(4)
  ui = s32[6] parameter(5)
  two = f32[] constant(2)
  twos = f32[10,5] broadcast(two), dimensions={}
  scaled = f32[10,5] multiply(x, twos)
  added = f32[10,5] scatter(scaled, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  set = s32[9] scatter(xi, ii, ui), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, indices_are_sorted=false, unique_indices=false, to_apply=second
  ROOT t = (f32[10,5], s32[9]) tuple(added, set)
})");
}

TEST(WindowOpsTest, VariadicReduceWindowPoolsValuesWithTheirIndices) {
  // Max pooling that also returns where each maximum was (an argmax pool: values with an iota of positions, ties
  // to the lower position) and a two-input sum; the reducer takes both accumulators, then both elements.
  expectAllAgree(R"(HloModule vrw
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(bv, av), direction=GT
  eq = pred[] compare(bv, av), direction=EQ
  lt = pred[] compare(bi, ai), direction=LT
  tie = pred[] and(eq, lt)
  take = pred[] or(gt, tie)
  v = f32[] select(take, bv, av)
  i = s32[] select(take, bi, ai)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
sums {
  a = f32[] parameter(0)
  b = f64[] parameter(1)
  c = f32[] parameter(2)
  d = f64[] parameter(3)
  s = f32[] add(a, c)
  t = f64[] add(b, d)
  ROOT r = (f32[], f64[]) tuple(s, t)
}
ENTRY e {
  x = f32[2,7,7,3] parameter(0)
  y = f64[2,7,7,3] parameter(1)
  pos = s32[2,7,7,3] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  none = s32[] constant(-1)
  zero = f32[] constant(0)
  zero64 = f64[] constant(0)
  pool = (f32[2,4,4,3], s32[2,4,4,3]) reduce-window(x, pos, ninf, none), window={size=1x2x2x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, to_apply=argmax
  sum = (f32[2,7,7,3], f64[2,7,7,3]) reduce-window(x, y, zero, zero64), window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}, to_apply=sums
  pv = f32[2,4,4,3] get-tuple-element(pool), index=0
  pi = s32[2,4,4,3] get-tuple-element(pool), index=1
  sx = f32[2,7,7,3] get-tuple-element(sum), index=0
  sy = f64[2,7,7,3] get-tuple-element(sum), index=1
  ROOT t = (f32[2,4,4,3], s32[2,4,4,3], f32[2,7,7,3], f64[2,7,7,3]) tuple(pv, pi, sx, sy)
})");
}

TEST(WindowOpsTest, FusionsWhoseRootIsAVariadicReduction) {
  expectAllAgree(testing::kVariadicReductionFusions);
}

TEST(WindowOpsTest, VariadicScatterCombinesEveryOperandInOrder) {
  // Two operands updated together: a sum and a count of the updates landing on each row (indices collide), and a
  // combiner whose second result depends on both inputs (the update's value where it beats the current one).
  expectAllAgree(R"(HloModule vscatter
sumcount {
  a = f32[] parameter(0)
  n = s32[] parameter(1)
  b = f32[] parameter(2)
  m = s32[] parameter(3)
  s = f32[] add(a, b)
  c = s32[] add(n, m)
  ROOT r = (f32[], s32[]) tuple(s, c)
}
keepmax {
  a = f32[] parameter(0)
  ai = f32[] parameter(1)
  b = f32[] parameter(2)
  bi = f32[] parameter(3)
  gt = pred[] compare(b, a), direction=GT
  v = f32[] select(gt, b, a)
  w = f32[] select(gt, bi, ai)
  ROOT r = (f32[], f32[]) tuple(v, w)
}
ENTRY e {
  x = f32[10,5] parameter(0)
  idx = s32[8,1] parameter(1)
  upd = f32[8,5] parameter(2)
  other = f32[10,5] parameter(3)
  upd2 = f32[8,5] parameter(4)
  zero = s32[] constant(0)
  counts = s32[10,5] broadcast(zero), dimensions={}
  one = s32[] constant(1)
  ones = s32[8,5] broadcast(one), dimensions={}
  summed = (f32[10,5], s32[10,5]) scatter(x, counts, idx, upd, ones), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sumcount
  best = (f32[10,5], f32[10,5]) scatter(x, other, idx, upd, upd2), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=keepmax
  s = f32[10,5] get-tuple-element(summed), index=0
  c = s32[10,5] get-tuple-element(summed), index=1
  bv = f32[10,5] get-tuple-element(best), index=0
  bw = f32[10,5] get-tuple-element(best), index=1
  ROOT t = (f32[10,5], s32[10,5], f32[10,5], f32[10,5]) tuple(s, c, bv, bw)
})");
}

TEST(WindowOpsTest, SortOneAndTwoOperandsStably) {
  // Keys floor(x) in {-1, 0} repeat, so a sort that is not stable puts the values in another order.
  expectAllAgree(R"(HloModule sort
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
lt2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[5,16] parameter(0)
  y = f32[16,6] parameter(1)
  v = s32[16,6] parameter(2)
  sorted = f32[5,16] sort(x), dimensions={1}, to_apply=lt
  keys = f32[16,6] floor(y)
  pairs = (f32[16,6], s32[16,6]) sort(keys, v), dimensions={0}, is_stable=true, to_apply=lt2
  k = f32[16,6] get-tuple-element(pairs), index=0
  w = s32[16,6] get-tuple-element(pairs), index=1
  ROOT t = (f32[5,16], f32[16,6], s32[16,6]) tuple(sorted, k, w)
})");
}

// jnp.sort / argsort compare floats with type=TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN. "cannot
// lower" before. The sorted bits go out through bitcast-convert, so -0 against +0 and the NaNs' signs are compared
// exactly; random keys with indices check the order and its stability.
TEST(WindowOpsTest, SortWithATotalOrderComparator) {
  expectAllAgree(R"(HloModule total_order
total {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
total2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  special = f32[8] constant({nan, 1, -0, 0, -inf, inf, -nan, -1})
  sorted = f32[8] sort(special), dimensions={0}, to_apply=total
  bits = s32[8] bitcast-convert(sorted)
  x = f32[6,40] parameter(0)
  keys = f32[6,40] round-nearest-even(x)
  io = s32[6,40] iota(), iota_dimension=1
  pairs = (f32[6,40], s32[6,40]) sort(keys, io), dimensions={1}, is_stable=true, to_apply=total2
  order = s32[6,40] get-tuple-element(pairs), index=1
  ROOT t = (s32[8], s32[6,40]) tuple(bits, order)
})");
}

// topk (jax.lax.top_k) and XLA CPU's TopK custom-call: codegen decomposes both into a stable sort of (value,
// index) pairs and two slices (topk-decomposer); the evaluator computes them directly. Rounded random keys give
// ties (the lower index first), the constant row NaNs and -0; the custom-call's comparator is XLA's own total order
// written with f32 -> s32 bitcasts, which codegen lowers as bitcast-converts.
TEST(WindowOpsTest, TopKOpAndCustomCall) {
  expectAllAgree(R"(HloModule topk
greater {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  zero = s32[] constant(0)
  max = s32[] constant(2147483647)
  ba = s32[] bitcast(a)
  bb = s32[] bitcast(b)
  fa = s32[] xor(max, ba)
  fb = s32[] xor(max, bb)
  na = pred[] compare(ba, zero), direction=LT
  nb = pred[] compare(bb, zero), direction=LT
  ka = s32[] select(na, fa, ba)
  kb = s32[] select(nb, fb, bb)
  ROOT gt = pred[] compare(ka, kb), direction=GT
}
ENTRY e {
  x = f32[6,40] parameter(0)
  keys = f32[6,40] round-nearest-even(x)
  special = f32[1,8] constant({ {nan, 1, -0, 0, -inf, inf, -nan, -1} })
  big = (f32[6,5], s32[6,5]) topk(keys), k=5, largest=true
  small = (f32[6,3], s32[6,3]) topk(keys), k=3, largest=false
  odd = (f32[1,8], s32[1,8]) topk(special), k=8
  oddi = s32[1,8] get-tuple-element(odd), index=1
  xla = (f32[6,4], s32[6,4]) custom-call(keys), custom_call_target="TopK", called_computations={greater}
  bv = f32[6,5] get-tuple-element(big), index=0
  bi = s32[6,5] get-tuple-element(big), index=1
  sv = f32[6,3] get-tuple-element(small), index=0
  si = s32[6,3] get-tuple-element(small), index=1
  xv = f32[6,4] get-tuple-element(xla), index=0
  xi = s32[6,4] get-tuple-element(xla), index=1
  ROOT t = (f32[6,5], s32[6,5], f32[6,3], s32[6,3], s32[1,8], f32[6,4], s32[6,4]) tuple(bv, bi, sv, si, oddi, xv, xi)
})");
}

// Slices up to 4096 merge-sort as the evaluator does step for step, so even a comparator that is not a strict
// weak order (a < b - 1 on small integers: 0 ~ 1 and 1 ~ 2 but 0 < 2) gives its result, which another sorting
// algorithm would not; a longer slice takes the insertion sort, stable.
TEST(WindowOpsTest, SortMatchesTheEvaluatorForAnyComparatorAndLongSlices) {
  expectAllAgree(R"(HloModule sortlong
apart {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  one = f32[] constant(1)
  b1 = f32[] subtract(b, one)
  ROOT l = pred[] compare(a, b1), direction=LT
}
gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[3,40] parameter(0)
  v = s32[3,40] parameter(1)
  y = f32[2,5000] parameter(2)
  w = s32[2,5000] parameter(3)
  four = f32[] constant(4)
  fours = f32[3,40] broadcast(four), dimensions={}
  scaled = f32[3,40] multiply(x, fours)
  keys = f32[3,40] floor(scaled)
  short = (f32[3,40], s32[3,40]) sort(keys, v), dimensions={1}, to_apply=apart
  sk = f32[3,40] get-tuple-element(short), index=0
  sv = s32[3,40] get-tuple-element(short), index=1
  fy = f32[2,5000] floor(y)
  long = (f32[2,5000], s32[2,5000]) sort(fy, w), dimensions={1}, is_stable=true, to_apply=gt
  lk = f32[2,5000] get-tuple-element(long), index=0
  lv = s32[2,5000] get-tuple-element(long), index=1
  ROOT t = (f32[3,40], s32[3,40], f32[2,5000], s32[2,5000]) tuple(sk, sv, lk, lv)
})");
}

TEST(WindowOpsTest, SameWidthBitcastConvertKeepsTheBits) {
  expectAllAgree(R"(HloModule bc
ENTRY e {
  x = f32[4,6] parameter(0)
  h = f16[4,6] parameter(1)
  b = bf16[4,6] parameter(2)
  u = u32[4,6] parameter(3)
  bits = s32[4,6] bitcast-convert(x)
  one = s32[] constant(1)
  ones = s32[4,6] broadcast(one), dimensions={}
  next = s32[4,6] add(bits, ones)
  back = f32[4,6] bitcast-convert(next)
  hb = u16[4,6] bitcast-convert(h)
  bb = s16[4,6] bitcast-convert(b)
  bh = f16[4,6] bitcast-convert(bb)
  uf = f32[4,6] bitcast-convert(u)
  ROOT t = (f32[4,6], u16[4,6], f16[4,6], f32[4,6]) tuple(back, hb, bh, uf)
})");
}

// Width changes (jax.random's rbg keys: u32[4] data as the generator's u64[2] state), unfused and fused with
// their neighbours: a narrower type adds a last dimension of parts, a wider one consumes it.
TEST(WindowOpsTest, WidthChangingBitcastConvertSplitsAndJoinsParts) {
  expectAllAgree(R"(HloModule bc
ENTRY e {
  k = u32[3,2] parameter(0)
  one = u32[] constant(1)
  ones = u32[3,2] broadcast(one), dimensions={}
  k1 = u32[3,2] add(k, ones)
  wide = u64[3] bitcast-convert(k1)
  x = f32[5] parameter(1)
  halves = u16[5,2] bitcast-convert(x)
  bytes = s8[3,8] bitcast-convert(wide)
  h = f16[6,2] parameter(2)
  f = f32[6] bitcast-convert(h)
  d = f64[4] parameter(3)
  words = s32[4,2] bitcast-convert(d)
  ROOT t = (u64[3], u16[5,2], s8[3,8], f32[6], s32[4,2]) tuple(wide, halves, bytes, f, words)
})");
}

}  // namespace
}  // namespace fusionscope::core
