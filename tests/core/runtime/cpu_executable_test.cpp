// The CPU backend against the reference evaluator: hand-written modules for each opcode family, then every
// sample and corpus module we can lower, unfused and through the gpu and cpu fusion pipelines.
#include "core/runtime/cpu_executable.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/codegen/codegen_preparation.h"
#include "core/codegen/element_types.h"
#include "core/eval/evaluator.h"
#include "core/eval/result_check.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/common/source_paths.h"
#include "tests/core/testing/codegen_testing.h"
#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

using testing::compareWithEvaluator;
using testing::expectAllAgree;
using testing::runPipelineOn;

std::unique_ptr<HloModule> parse(std::string_view text) {
  return testing::parseOrFail(text);
}

// exp and logistic past the vector exp's fast range (a masked softmax's -1e9, -inf, 1e9, the bands where f32 and f64
// results are 0, denormal or inf, NaN): the out-of-range lanes are chosen after the call (14x faster), the values
// must stay the evaluator's.
TEST(CpuExecutableTest, ExpOutsideItsFastRange) {
  expectAllAgree(R"(HloModule exps
ENTRY e {
  c = f32[16] constant({-1e9, -inf, -200, -104.5, -103.5, -100, -90, -87.5, 0, 1, 88.5, 89.5, 1e9, inf, nan, -nan})
  x = f32[64] parameter(0)
  big = f32[] constant(-1e9)
  b = f32[64] broadcast(big), dimensions={}
  masked = f32[64] add(x, b)
  d = f64[8] constant({-1e300, -800, -746.5, -745, -700, 0, 709, 711})
  e1 = f32[16] exponential(c)
  e2 = f32[64] exponential(masked)
  e3 = f64[8] exponential(d)
  n = f32[16] negate(c)
  l = f32[16] logistic(n)
  b1 = s32[16] bitcast-convert(e1)
  b2 = s32[16] bitcast-convert(l)
  ROOT t = (s32[16], f32[64], f64[8], s32[16]) tuple(b1, e2, e3, b2)
})");
}

// Integer dots take the blocked row-dot kernel (s8 x s8 -> s32 of 128x256x256: 10.5 ms element by element, 0.43
// blocked): int8 quantised matmuls, s32 sums that wrap as the evaluator's do, u8, s64, batch dimensions, a
// transposed rhs, a bias epilogue.
TEST(CpuExecutableTest, IntegerDotsTakeTheRowDotKernel) {
  expectAllAgree(R"(HloModule intdots
ENTRY e {
  a = s8[24,64] parameter(0)
  b = s8[64,40] parameter(1)
  q = s32[24,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bias = s32[40] parameter(2)
  bb = s32[24,40] broadcast(bias), dimensions={1}
  qb = s32[24,40] add(q, bb)
  x = s32[9,300] parameter(3)
  y = s32[300,7] parameter(4)
  big = s32[] constant(1000003)
  bx = s32[9,300] broadcast(big), dimensions={}
  xs = s32[9,300] multiply(x, bx)
  w = s32[9,7] dot(xs, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  u = u8[5,33] parameter(5)
  v = u8[33,6] parameter(6)
  uu = u32[5,33] convert(u)
  vv = u32[33,6] convert(v)
  uv = u32[5,6] dot(uu, vv), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  l = s64[3,4,20] parameter(7)
  r = s64[3,20,8] parameter(8)
  lr = s64[3,4,8] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  t = s32[40,64] parameter(9)
  at = s32[24,64] convert(a)
  tr = s32[24,40] dot(at, t), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT out = (s32[24,40], s32[9,7], u32[5,6], s64[3,4,8], s32[24,40]) tuple(qb, w, uv, lr, tr)
})");
}

// Narrow integer dots (s8, u8, s16 into s32) multiply two k terms per lane (x86's pmaddwd, vpdpwssd with VNNI): an
// odd k, the extremes (-128 * -128 summed 64 times; s16 pairs whose sum wraps in s32), u8 against s8, a quantised
// lhs computed in the kernel, a batch, a dot of fewer rows than one register block (no packing), a transposed rhs
// and a bias epilogue. On any other target the same dots take the s32 path; both must agree with the evaluator.
TEST(CpuExecutableTest, NarrowIntegerDotsMultiplyInPairs) {
  expectAllAgree(R"(HloModule narrowdots
ENTRY e {
  a = s8[24,65] parameter(0)
  b = s8[65,40] parameter(1)
  odd = s32[24,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  lowest = s8[] constant(-128)
  la = s8[9,64] broadcast(lowest), dimensions={}
  lb = s8[64,33] broadcast(lowest), dimensions={}
  extreme = s32[9,33] dot(la, lb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = s16[7,30] parameter(2)
  g = s16[30,20] parameter(3)
  big = s16[] constant(-32768)
  hb = s16[7,30] broadcast(big), dimensions={}
  hh = s16[7,30] add(h, hb)
  hb2 = s16[30,20] broadcast(big), dimensions={}
  gg = s16[30,20] add(g, hb2)
  wide = s32[7,20] dot(hh, gg), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  u = u8[16,48] parameter(4)
  b2 = s8[48,40] parameter(5)
  mixed = s32[16,40] dot(u, b2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = f32[12,32] parameter(6)
  scale = f32[] constant(40)
  sx = f32[12,32] broadcast(scale), dimensions={}
  xs = f32[12,32] multiply(x, sx)
  lo = f32[] constant(-127)
  hi = f32[] constant(127)
  xc = f32[12,32] clamp(lo, xs, hi)
  xr = f32[12,32] round-nearest-even(xc)
  xq = s8[12,32] convert(xr)
  wq = s8[32,24] parameter(7)
  quantised = s32[12,24] dot(xq, wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  l = s8[3,4,21] parameter(8)
  r = s8[3,21,8] parameter(9)
  batched = s32[3,4,8] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  v = s8[2,50] parameter(10)
  w50 = s8[50,40] parameter(11)
  few = s32[2,40] dot(v, w50), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = s8[40,65] parameter(12)
  transposed = s32[24,40] dot(a, t), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  bias = s32[40] parameter(13)
  bb = s32[24,40] broadcast(bias), dimensions={1}
  biased = s32[24,40] add(transposed, bb)
  ROOT out = (s32[24,40], s32[9,33], s32[7,20], s32[16,40], s32[12,24], s32[3,4,8], s32[2,40], s32[24,40]) tuple(odd, extreme, wide, mixed, quantised, batched, few, biased)
})");
}

TEST(CpuExecutableTest, FloatElementwise) {
  expectAllAgree(R"(HloModule fe
ENTRY e {
  x = f32[33,17] parameter(0)
  y = f32[33,17] parameter(1)
  a = f32[33,17] add(x, y)
  s = f32[33,17] subtract(a, y)
  m = f32[33,17] multiply(s, x)
  d = f32[33,17] divide(m, y)
  mx = f32[33,17] maximum(d, x)
  mn = f32[33,17] minimum(mx, y)
  p = f32[33,17] power(mn, x)
  r = f32[33,17] remainder(x, y)
  at = f32[33,17] atan2(r, p)
  ab = f32[33,17] abs(at)
  ex = f32[33,17] exponential(ab)
  em = f32[33,17] exponential-minus-one(x)
  l = f32[33,17] log(ex)
  lp = f32[33,17] log-plus-one(ab)
  t = f32[33,17] tanh(em)
  lg = f32[33,17] logistic(lp)
  sq = f32[33,17] sqrt(ab)
  rs = f32[33,17] rsqrt(ex)
  cb = f32[33,17] cbrt(x)
  sn = f32[33,17] sine(y)
  cs = f32[33,17] cosine(y)
  fl = f32[33,17] floor(sn)
  ce = f32[33,17] ceil(cs)
  ra = f32[33,17] round-nearest-afz(m)
  re = f32[33,17] round-nearest-even(d)
  sg = f32[33,17] sign(x)
  ng = f32[33,17] negate(sg)
  s1 = f32[33,17] add(l, t)
  s2 = f32[33,17] add(lg, sq)
  s3 = f32[33,17] add(rs, cb)
  s4 = f32[33,17] add(fl, ce)
  s5 = f32[33,17] add(ra, re)
  s6 = f32[33,17] add(ng, s5)
  s7 = f32[33,17] add(s1, s2)
  s8 = f32[33,17] add(s3, s4)
  s9 = f32[33,17] add(s7, s8)
  ROOT out = f32[33,17] add(s9, s6)
})");
}

TEST(CpuExecutableTest, CompareSelectClampConvert) {
  expectAllAgree(R"(HloModule csc
ENTRY e {
  x = f32[40] parameter(0)
  y = f32[40] parameter(1)
  i = s32[40] parameter(2)
  gt = pred[40] compare(x, y), direction=GT
  le = pred[40] compare(x, y), direction=LE
  nt = pred[40] not(le)
  eq = pred[40] compare(gt, nt), direction=EQ
  sel = f32[40] select(eq, x, y)
  lo = f32[] constant(-0.5)
  hi = f32[] constant(0.25)
  cl = f32[40] clamp(lo, sel, hi)
  fin = pred[40] is-finite(cl)
  ci = s32[40] convert(cl)
  cf = f32[40] convert(i)
  h = f16[40] convert(cl)
  hb = bf16[40] convert(x)
  h2 = f16[40] multiply(h, h)
  hb2 = bf16[40] add(hb, hb)
  back = f32[40] convert(h2)
  back2 = f32[40] convert(hb2)
  d = f64[40] convert(x)
  d2 = f64[40] multiply(d, d)
  back3 = f32[40] convert(d2)
  fi = f32[40] convert(fin)
  s = f32[40] add(back, back2)
  s2 = f32[40] add(s, back3)
  s3 = f32[40] add(s2, cf)
  s4 = f32[40] add(s3, fi)
  ROOT t = (f32[40], s32[40]) tuple(s4, ci)
})");
}

// Float to integer converts toward zero and saturates, NaN to 0, for every width and signedness: the ends the float
// type holds exactly (127, -128, 255, -2^31), the ones it does not (2^31 - 1 from f32, 2^63 - 1, u64's top from
// f64), infinities, NaN, just past each end and values that truncate. Clamped and patched in the emitter (not
// llvm.fptosi.sat, which x86 converts lane by lane).
TEST(CpuExecutableTest, FloatToIntegerSaturatesAtEveryEnd) {
  expectAllAgree(R"(HloModule f2i
ENTRY e {
  c = f32[24] constant({nan, -nan, inf, -inf, 0, -0, 0.99, -0.99, 127.9, 128, -128.9, -129, 255.5, 256, -1, 32767.5, 32768, -32769, 65535.9, 2147483520, 2147483648, -2147483648, -2147483904, 1e30})
  d = f64[12] constant({nan, inf, -inf, 2147483647.9, 2147483648, -2147483648.9, -2147483649, 4294967295.5, 4294967296, 9223372036854775807, -9223372036854775808, 1.8446744073709552e19})
  x = f32[64] parameter(0)
  k = f32[] constant(3e9)
  kb = f32[64] broadcast(k), dimensions={}
  wide = f32[64] multiply(x, kb)
  s8 = s8[24] convert(c)
  u8 = u8[24] convert(c)
  s16 = s16[24] convert(c)
  u16 = u16[24] convert(c)
  s32 = s32[24] convert(c)
  u32 = u32[24] convert(c)
  s64 = s64[24] convert(c)
  u64 = u64[24] convert(c)
  ds32 = s32[12] convert(d)
  du32 = u32[12] convert(d)
  ds64 = s64[12] convert(d)
  du64 = u64[12] convert(d)
  h = f16[24] convert(c)
  hs32 = s32[24] convert(h)
  hu8 = u8[24] convert(h)
  b = bf16[24] convert(c)
  bs32 = s32[24] convert(b)
  bs64 = s64[24] convert(b)
  ws32 = s32[64] convert(wide)
  wu32 = u32[64] convert(wide)
  ws8 = s8[64] convert(wide)
  ROOT t = (s8[24], u8[24], s16[24], u16[24], s32[24], u32[24], s64[24], u64[24], s32[12], u32[12], s64[12], u64[12], s32[24], u8[24], s32[24], s64[24], s32[64], u32[64], s8[64]) tuple(s8, u8, s16, u16, s32, u32, s64, u64, ds32, du32, ds64, du64, hs32, hu8, bs32, bs64, ws32, wu32, ws8)
})");
}

TEST(CpuExecutableTest, IntegerOps) {
  expectAllAgree(R"(HloModule ints
ENTRY e {
  a = s32[64] parameter(0)
  b = s32[64] parameter(1)
  u = u8[64] parameter(2)
  one = s32[] constant(1)
  ones = s32[64] broadcast(one), dimensions={}
  b1 = s32[64] subtract(b, ones)
  add = s32[64] add(a, b1)
  mul = s32[64] multiply(add, b1)
  div = s32[64] divide(mul, b1)
  rem = s32[64] remainder(mul, b1)
  mx = s32[64] maximum(div, rem)
  mn = s32[64] minimum(mx, a)
  an = s32[64] and(mn, b)
  o = s32[64] or(an, a)
  x = s32[64] xor(o, b)
  sl = s32[64] shift-left(x, b)
  sra = s32[64] shift-right-arithmetic(sl, b1)
  srl = s32[64] shift-right-logical(sra, a)
  ab = s32[64] abs(srl)
  ng = s32[64] negate(ab)
  sg = s32[64] sign(ng)
  pc = s32[64] popcnt(x)
  us = u8[64] subtract(u, u)
  ud = u8[64] divide(u, us)
  uc = s32[64] convert(ud)
  r1 = s32[64] add(sg, pc)
  ROOT r = s32[64] add(r1, uc)
})");
}

TEST(CpuExecutableTest, DataMovement) {
  expectAllAgree(R"(HloModule dm
ENTRY e {
  x = f32[6,5] parameter(0)
  v = f32[5] parameter(1)
  i = s32[] parameter(2)
  t = f32[5,6] transpose(x), dimensions={1,0}
  b = f32[5,6] broadcast(v), dimensions={0}
  a = f32[5,6] add(t, b)
  r = f32[30] reshape(a)
  rv = f32[30] reverse(r), dimensions={0}
  sl = f32[10] slice(rv), slice={[3:23:2]}
  io = f32[10] iota(), iota_dimension=0
  c = f32[25] concatenate(sl, io, v), dimensions={0}
  z = f32[] constant(-3)
  p = f32[54] pad(c, z), padding=2_3_1
  p2 = f32[19] pad(sl, z), padding=-1_1_1
  ds = f32[7] dynamic-slice(p, i), dynamic_slice_sizes={7}
  ct = f32[3] constant({1.5, -2, 4})
  cc = f32[10] concatenate(ds, ct), dimensions={0}
  ROOT out = (f32[54], f32[10], f32[19]) tuple(p, cc, p2)
})");
}

TEST(CpuExecutableTest, Reductions) {
  expectAllAgree(R"(HloModule red
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[12,9,7] parameter(0)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  e1 = f32[12,9,7] exponential(x)
  row = f32[12,9] reduce(e1, zero), dimensions={2}, to_apply=add
  col = f32[9,7] reduce(x, ninf), dimensions={0}, to_apply=max
  full = f32[] reduce(x, zero), dimensions={0,1,2}, to_apply=add
  mid = f32[12,7] reduce(x, zero), dimensions={1}, to_apply=add
  fb = f32[12,9] broadcast(full), dimensions={}
  rowp = f32[12,9] add(row, fb)
  ROOT t = (f32[12,9], f32[9,7], f32[12,7]) tuple(rowp, col, mid)
})");
}

// Long rows take the vectorised path (independent partial results per lane, then the tail); a reducer that is
// not associative (subtract) must stay strictly in order, and a NaN anywhere in a row survives a max.
TEST(CpuExecutableTest, LongRowReductionsReassociateOnlyWhatIsAssociative) {
  expectAllAgree(R"(HloModule longrows
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
sub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT d = f32[] subtract(a, b)
}
iadd {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(b, a)
}
ENTRY e {
  x = f32[6,1000] parameter(0)
  y = f32[5,77] parameter(1)
  k = s32[4,203] parameter(2)
  zero = f32[] constant(0)
  one = f32[] constant(1.5)
  ninf = f32[] constant(-inf)
  izero = s32[] constant(3)
  ex = f32[6,1000] exponential(x)
  sums = f32[6] reduce(ex, one), dimensions={1}, to_apply=add
  diffs = f32[6] reduce(x, zero), dimensions={1}, to_apply=sub
  yz = f32[5,77] subtract(y, y)
  nans = f32[5,77] divide(yz, yz)
  pos = s32[5,77] iota(), iota_dimension=1
  at = s32[] constant(70)
  atb = s32[5,77] broadcast(at), dimensions={}
  row = s32[5,77] iota(), iota_dimension=0
  two = s32[] constant(2)
  twob = s32[5,77] broadcast(two), dimensions={}
  c1 = pred[5,77] compare(pos, atb), direction=EQ
  c2 = pred[5,77] compare(row, twob), direction=EQ
  mask = pred[5,77] and(c1, c2)
  ynan = f32[5,77] select(mask, nans, y)
  maxes = f32[5] reduce(ynan, ninf), dimensions={1}, to_apply=max
  isums = s32[4] reduce(k, izero), dimensions={1}, to_apply=iadd
  ROOT t = (f32[6], f32[6], f32[5], s32[4]) tuple(sums, diffs, maxes, isums)
})",
                 7, testing::FusedReference::kItsOwn);  // `sub` is no associative reducer: each order its own
}

// The vector partials of row reductions for every reducer they take and row lengths from 8 (four lanes, two
// blocks) to past one full block of 32 (tails): NaN-propagating max and min over short rows, signed and unsigned
// integer max/min (inputs shifted below zero, so the same bits order differently), f64 products, bitwise and/or; pred
// rows stay in order.
TEST(CpuExecutableTest, RowReductionsOfEveryWidthAndReducer) {
  expectAllAgree(R"(HloModule widths
fmax {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
fmin {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] minimum(a, b)
}
smax {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT m = s8[] maximum(a, b)
}
umin {
  a = u8[] parameter(0)
  b = u8[] parameter(1)
  ROOT m = u8[] minimum(a, b)
}
dmul {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT m = f64[] multiply(a, b)
}
uand {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  ROOT m = u32[] and(a, b)
}
uor {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  ROOT m = u32[] or(a, b)
}
por {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT m = pred[] or(a, b)
}
ENTRY e {
  x8 = f32[3,8] parameter(0)
  x12 = f32[3,12] parameter(1)
  x20 = f32[3,20] parameter(2)
  x70 = f32[3,70] parameter(3)
  zero = f32[] constant(0)
  z12 = f32[3,12] broadcast(zero), dimensions={}
  nan12 = f32[3,12] divide(z12, z12)
  col = s32[3,12] iota(), iota_dimension=1
  row = s32[3,12] iota(), iota_dimension=0
  five = s32[] constant(5)
  fives = s32[3,12] broadcast(five), dimensions={}
  one = s32[] constant(1)
  ones = s32[3,12] broadcast(one), dimensions={}
  c1 = pred[3,12] compare(col, fives), direction=EQ
  c2 = pred[3,12] compare(row, ones), direction=EQ
  mask = pred[3,12] and(c1, c2)
  y12 = f32[3,12] select(mask, nan12, x12)
  ninf = f32[] constant(-inf)
  inf = f32[] constant(inf)
  m8 = f32[3] reduce(x8, ninf), dimensions={1}, to_apply=fmax
  m12 = f32[3] reduce(y12, ninf), dimensions={1}, to_apply=fmax
  n12 = f32[3] reduce(y12, inf), dimensions={1}, to_apply=fmin
  n70 = f32[3] reduce(x70, inf), dimensions={1}, to_apply=fmin
  s0 = s8[4,40] parameter(4)
  sfour = s8[] constant(4)
  sfours = s8[4,40] broadcast(sfour), dimensions={}
  s = s8[4,40] subtract(s0, sfours)
  sinit = s8[] constant(-128)
  ms = s8[4] reduce(s, sinit), dimensions={1}, to_apply=smax
  u0 = u8[4,40] parameter(5)
  ufour = u8[] constant(4)
  ufours = u8[4,40] broadcast(ufour), dimensions={}
  u = u8[4,40] subtract(u0, ufours)
  uinit = u8[] constant(255)
  mu = u8[4] reduce(u, uinit), dimensions={1}, to_apply=umin
  d = f64[2,20] parameter(6)
  done = f64[] constant(1)
  pd = f64[2] reduce(d, done), dimensions={1}, to_apply=dmul
  w = u32[2,33] parameter(7)
  all = u32[] constant(4294967295)
  none = u32[] constant(0)
  aw = u32[2] reduce(w, all), dimensions={1}, to_apply=uand
  ow = u32[2] reduce(w, none), dimensions={1}, to_apply=uor
  p = pred[2,40] parameter(8)
  false = pred[] constant(false)
  op = pred[2] reduce(p, false), dimensions={1}, to_apply=por
  ROOT t = (f32[3], f32[3], f32[3], f32[3], s8[4], u8[4], f64[2], u32[2], u32[2], pred[2]) tuple(m8, m12, n12, n70, ms, mu, pd, aw, ow, op)
})");
}

// A kOutput fusion (dot + bias + ReLU) is computed row by row around the dot; a dot whose user is not
// elementwise (a transpose) is not, and both agree with the evaluator.
TEST(CpuExecutableTest, DotEpilogueFusions) {
  expectAllAgree(R"(HloModule epilogue
fused {
  p0 = f32[33,70] parameter(0)
  p1 = f32[70,19] parameter(1)
  p2 = f32[19] parameter(2)
  d = f32[33,19] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[33,19] broadcast(p2), dimensions={1}
  a = f32[33,19] add(d, bb)
  z = f32[] constant(0)
  zb = f32[33,19] broadcast(z), dimensions={}
  ROOT r = f32[33,19] maximum(a, zb)
}
fused_t {
  q0 = f32[33,70] parameter(0)
  q1 = f32[70,19] parameter(1)
  d = f32[33,19] dot(q0, q1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[19,33] transpose(d), dimensions={1,0}
}
ENTRY e {
  x = f32[33,70] parameter(0)
  w = f32[70,19] parameter(1)
  b = f32[19] parameter(2)
  f = f32[33,19] fusion(x, w, b), kind=kOutput, calls=fused
  g = f32[19,33] fusion(x, w), kind=kOutput, calls=fused_t
  ft = f32[19,33] transpose(f), dimensions={1,0}
  ROOT s = f32[19,33] add(ft, g)
})");
}

// (reduce(e), e) over long rows of a rank-3 value: one loop over rows writes e and its row sums, and a second
// multi-output fusion lists the reduce second.
TEST(CpuExecutableTest, RowReductionWithItsOperandAsSideOutput) {
  expectAllAgree(R"(HloModule side
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused {
  p = f32[4,5,300] parameter(0)
  q = f32[4,5] parameter(1)
  qb = f32[4,5,300] broadcast(q), dimensions={0,1}
  d = f32[4,5,300] subtract(p, qb)
  e = f32[4,5,300] exponential(d)
  z = f32[] constant(0)
  r = f32[4,5] reduce(e, z), dimensions={2}, to_apply=add
  ROOT t = (f32[4,5], f32[4,5,300]) tuple(r, e)
}
fused2 {
  p = f32[6,40] parameter(0)
  n = f32[6,40] negate(p)
  z = f32[] constant(1)
  r = f32[6] reduce(n, z), dimensions={1}, to_apply=add
  ROOT t = (f32[6,40], f32[6]) tuple(n, r)
}
ENTRY e {
  x = f32[4,5,300] parameter(0)
  m = f32[4,5] parameter(1)
  y = f32[6,40] parameter(2)
  f = (f32[4,5], f32[4,5,300]) fusion(x, m), kind=kInput, calls=fused
  g = (f32[6,40], f32[6]) fusion(y), kind=kInput, calls=fused2
  f0 = f32[4,5] get-tuple-element(f), index=0
  f1 = f32[4,5,300] get-tuple-element(f), index=1
  g0 = f32[6,40] get-tuple-element(g), index=0
  g1 = f32[6] get-tuple-element(g), index=1
  ROOT t = (f32[4,5], f32[4,5,300], f32[6,40], f32[6]) tuple(f0, f1, g0, g1)
})");
}

// Outputs with the same element count but different dimensions get their own loops (and indices).
TEST(CpuExecutableTest, MultiOutputFusionWithEqualSizesAndDifferentShapes) {
  expectAllAgree(R"(HloModule mofshapes
fused {
  p = f32[8,6] parameter(0)
  e = f32[8,6] exponential(p)
  t = f32[6,8] transpose(p), dimensions={1,0}
  ROOT r = (f32[8,6], f32[6,8]) tuple(e, t)
}
ENTRY e {
  x = f32[8,6] parameter(0)
  ROOT f = (f32[8,6], f32[6,8]) fusion(x), kind=kLoop, calls=fused
})");
}

TEST(CpuExecutableTest, DotWithBatchAndContractingDims) {
  expectAllAgree(R"(HloModule dots
ENTRY e {
  a = f32[3,16,24] parameter(0)
  b = f32[3,24,10] parameter(1)
  c = f32[24,16] parameter(2)
  w = f32[10,24] parameter(3)
  bd = f32[3,16,10] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  tt = f32[16,10] dot(c, w), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  tb = f32[3,16,10] broadcast(tt), dimensions={1,2}
  s = f32[3,16,10] add(bd, tb)
  ROOT r = f32[3,16,10] maximum(s, tb)
})");
}

// The row-dot kernel's code paths: n <= 32 (vector accumulators, 8-row blocks plus a tail: 37 rows), n > 32
// (stack-row accumulators, 4-row blocks), transposed lhs (contracting dim 0, the MNIST dW), K not a multiple of
// the 32-term chunk, batch dims with a small n, a bias + ReLU epilogue, and f16 / bf16 / f64 element types.
// x[B,S,K] . W[K,N] (a transformer's projection) compiles as the 2-D row dot of x viewed as [B*S, K] (it went
// element by element, 76x slower); the kernel keeps the dot's name, and every form agrees with the evaluator.
TEST(CpuExecutableTest, RankThreeDotRunsAsARowDot) {
  const std::string text = R"(HloModule projection
ENTRY e {
  x = f32[3,5,24] parameter(0)
  w = f32[24,16] parameter(1)
  b = f32[16] parameter(2)
  d = f32[3,5,16] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  bb = f32[3,5,16] broadcast(b), dimensions={2}
  ROOT r = f32[3,5,16] add(d, bb)
})";
  expectAllAgree(text);
  std::unique_ptr<HloModule> module = parse(text);
  ASSERT_NE(module, nullptr);
  StatusOr<std::unique_ptr<HloModule>> prepared = prepareForCodegen(*module);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  ASSERT_NE(*prepared, nullptr);
  const HloInstruction* dot = (*prepared)->entry()->findInstruction("d");
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(dot->opcode(), HloOpcode::kDot);
  EXPECT_EQ(dot->shape().rank(), 2);
  EXPECT_EQ(dot->operand(0)->opcode(), HloOpcode::kReshape);
}

TEST(CpuExecutableTest, DotKernelPathsMatchTheEvaluator) {
  expectAllAgree(R"(HloModule dotpaths
ENTRY e {
  x = f32[37,300] parameter(0)
  w = f32[300,10] parameter(1)
  xw = f32[37,10] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d = f32[37,10] parameter(2)
  dw = f32[300,10] dot(x, d), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  v = f32[300,45] parameter(3)
  xv = f32[37,45] dot(x, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bias = f32[45] parameter(4)
  bb = f32[37,45] broadcast(bias), dimensions={1}
  pre = f32[37,45] add(xv, bb)
  z = f32[] constant(0)
  zb = f32[37,45] broadcast(z), dimensions={}
  relu = f32[37,45] maximum(pre, zb)
  a = f32[5,9,70] parameter(5)
  b = f32[5,70,3] parameter(6)
  bd = f32[5,9,3] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = (f32[37,10], f32[300,10], f32[37,45], f32[5,9,3]) tuple(xw, dw, relu, bd)
})");
  expectAllAgree(R"(HloModule narrow
ENTRY e {
  h = f16[19,40] parameter(0)
  hw = f16[40,12] parameter(1)
  hd = f16[19,12] dot(h, hw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g = bf16[11,33] parameter(2)
  gw = bf16[33,6] parameter(3)
  gd = bf16[11,6] dot(g, gw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f = f64[13,100] parameter(4)
  fw = f64[100,7] parameter(5)
  fd = f64[13,7] dot(f, fw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f16[19,12], bf16[11,6], f64[13,7]) tuple(hd, gd, fd)
})");
}

// The blocked kernels sized for each x86 generation's vector registers (SSE 16 bytes, AVX2 32, AVX-512 64: tiles of
// 8, 16 or 32 columns, 6 rows of two registers) compute the same on any host: n below, at and between the tile
// widths, rows not a multiple of the block, f64 (four registers a row), batch dims, an epilogue, and a row
// convolution (NHWC/HWIO) whose features span several tiles.
// Batched dots with at least a block of rows per batch are walked batch by batch, each block's rows sharing the
// rhs tile loads (and packing); an rhs contracted on its innermost dimension is transposed per batch in register
// blocks (transposeMatrix), its edges element by element. Sizes that are not multiples of any block or vector, f64,
// several batch dimensions, integer and s8 pair dots, fewer rows per batch than a block; every vector width, one and
// two threads (two split the rows mid-batch).
TEST(CpuExecutableTest, BatchedDotsWalkedBatchByBatchMatchTheEvaluator) {
  std::unique_ptr<HloModule> module = parse(R"(HloModule batched
ENTRY e {
  a = f32[3,37,19] parameter(0)
  b = f32[3,19,23] parameter(1)
  ab = f32[3,37,23] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  bt = f32[3,23,19] parameter(2)
  abt = f32[3,37,23] dot(a, bt), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  q = f32[2,40,48] parameter(3)
  kq = f32[2,40,48] parameter(4)
  qk = f32[2,40,40] dot(q, kq), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  f = f64[2,20,12] parameter(5)
  ft = f64[2,17,12] parameter(6)
  ff = f64[2,20,17] dot(f, ft), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  s = f32[5,2,16] parameter(7)
  st = f32[5,16,20] parameter(8)
  ss = f32[5,2,20] dot(s, st), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  m = f32[2,3,20,8] parameter(9)
  mt = f32[2,3,8,12] parameter(10)
  mm = f32[2,3,20,12] dot(m, mt), lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_contracting_dims={2}
  i = s32[2,12,9] parameter(11)
  it = s32[2,9,7] parameter(12)
  ii = s32[2,12,7] dot(i, it), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  p = s8[2,14,11] parameter(13)
  pt = s8[2,11,6] parameter(14)
  pp = s32[2,14,6] dot(p, pt), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = (f32[3,37,23], f32[3,37,23], f32[2,40,40], f64[2,20,17], f32[5,2,20], f32[2,3,20,12], s32[2,12,7], s32[2,14,6]) tuple(ab, abt, qk, ff, ss, mm, ii, pp)
})");
  ASSERT_NE(module, nullptr);
  std::unique_ptr<HloModule> fused = runPipelineOn(*module, "cpu");
  StatusOr<testing::Reference> reference = testing::referenceFor(*module);
  ASSERT_TRUE(reference.ok()) << reference.message();
  for (int bytes : {16, 32, 64}) {
    for (int threads : {1, 2}) {
      EXPECT_EQ(testing::compareWithReference(*module, *reference, threads, bytes), "")
          << bytes << "-byte vectors, " << threads << " threads, unfused";
      EXPECT_EQ(testing::compareWithReference(*fused, *reference, threads, bytes), "")
          << bytes << "-byte vectors, " << threads << " threads, cpu preset";
    }
  }
}

TEST(CpuExecutableTest, BlockedKernelsMatchTheEvaluatorForEveryVectorWidth) {
  std::unique_ptr<HloModule> module = parse(R"(HloModule widths
ENTRY e {
  x = f32[37,70] parameter(0)
  w10 = f32[70,10] parameter(1)
  d10 = f32[37,10] dot(x, w10), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  w40 = f32[70,40] parameter(2)
  d40 = f32[37,40] dot(x, w40), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b40 = f32[40] parameter(3)
  bb = f32[37,40] broadcast(b40), dimensions={1}
  e40 = f32[37,40] add(d40, bb)
  w100 = f32[70,100] parameter(4)
  d100 = f32[37,100] dot(x, w100), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f = f64[13,50] parameter(5)
  fw = f64[50,21] parameter(6)
  fd = f64[13,21] dot(f, fw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f32[3,9,70] parameter(7)
  b = f32[3,70,24] parameter(8)
  bd = f32[3,9,24] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  img = f32[2,7,7,5] parameter(9)
  k = f32[3,3,5,40] parameter(10)
  conv = f32[2,7,7,40] convolution(img, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT t = (f32[37,10], f32[37,40], f32[37,100], f64[13,21], f32[3,9,24], f32[2,7,7,40]) tuple(d10, e40, d100, fd, bd, conv)
})");
  ASSERT_NE(module, nullptr);
  std::unique_ptr<HloModule> fused = runPipelineOn(*module, "cpu");
  StatusOr<testing::Reference> reference = testing::referenceFor(*module);
  ASSERT_TRUE(reference.ok()) << reference.message();
  for (int bytes : {16, 32, 64}) {
    EXPECT_EQ(testing::compareWithReference(*module, *reference, 2, bytes), "") << bytes << "-byte vectors, unfused";
    EXPECT_EQ(testing::compareWithReference(*fused, *reference, 2, bytes), "") << bytes << "-byte vectors, cpu preset";
  }
  CpuCompileOptions host;
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module, host);
  ASSERT_TRUE(executable.ok()) << executable.message();
  EXPECT_TRUE((*executable)->vectorRegisterBytes() == 16 || (*executable)->vectorRegisterBytes() == 32 ||
              (*executable)->vectorRegisterBytes() == 64)
      << (*executable)->vectorRegisterBytes();
  CpuCompileOptions odd;
  odd.vectorRegisterBytes = 24;
  StatusOr<std::unique_ptr<CpuExecutable>> refused = CpuExecutable::compile(*module, odd);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("vector registers of 24 bytes"), std::string::npos) << refused.message();
}

// A large rhs contracted on its innermost dimension (attention's q·kᵀ with 160 keys of depth 128, a 2-D [300, 96]
// rhs whose values are computed, with a bias epilogue): the cpu preset transposes it once before the dot
// (`dot-rhs-transpose`), the other paths read it as inner products; all agree with the evaluator.
TEST(CpuExecutableTest, LargeRhsContractedInnermostIsTransposedOnceByTheCpuPreset) {
  constexpr std::string_view kText = R"(HloModule qk
ENTRY e {
  q = f32[2,37,128] parameter(0)
  k = f32[2,160,128] parameter(1)
  s = f32[2,37,160] dot(q, k), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  x = f32[45,96] parameter(2)
  w = f32[300,96] parameter(3)
  ew = f32[300,96] exponential(w)
  xw = f32[45,300] dot(x, ew), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  bias = f32[300] parameter(4)
  bb = f32[45,300] broadcast(bias), dimensions={1}
  y = f32[45,300] add(xw, bb)
  ROOT t = (f32[2,37,160], f32[45,300]) tuple(s, y)
})";
  expectAllAgree(kText);
  std::unique_ptr<HloModule> cpu = runPipelineOn(*parse(kText), "cpu");
  int transposes = 0;
  for (const auto& computation : cpu->computations()) {
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() == HloOpcode::kTranspose) ++transposes;
      EXPECT_FALSE(inst->opcode() == HloOpcode::kDot &&
                   inst->attributes().dot->rhsContracting[0] == inst->operand(1)->shape().rank() - 1)
          << printModule(*cpu);
    }
  }
  EXPECT_EQ(transposes, 2) << printModule(*cpu);
}

// Transposes of the two innermost dimensions run in strips of output rows (TransposeEmitter::stripTranspose), 16 x 16
// blocks transposed in registers and the columns past them one by one: full strips and a tail (37 rows), batches,
// 8-, 2- and 1-byte elements, a single row and a single column.
TEST(CpuExecutableTest, InnermostTransposesInStripsMatchTheEvaluator) {
  expectAllAgree(R"(HloModule strips
ENTRY e {
  a = f32[3,21,37] parameter(0)
  ta = f32[3,37,21] transpose(a), dimensions={0,2,1}
  b = f64[17,40] parameter(1)
  tb = f64[40,17] transpose(b), dimensions={1,0}
  c = bf16[18,33] parameter(2)
  tc = bf16[33,18] transpose(c), dimensions={1,0}
  d = s8[2,5,64] parameter(3)
  td = s8[2,64,5] transpose(d), dimensions={0,2,1}
  e = f32[1,50] parameter(4)
  te = f32[50,1] transpose(e), dimensions={1,0}
  f = f32[50,1] parameter(5)
  tf = f32[1,50] transpose(f), dimensions={1,0}
  g = s8[40,35] parameter(6)
  tg = s8[35,40] transpose(g), dimensions={1,0}
  h = u64[2,33,20] parameter(7)
  th = u64[2,20,33] transpose(h), dimensions={0,2,1}
  ROOT t = (f32[3,37,21], f64[40,17], bf16[33,18], s8[2,64,5], f32[50,1], f32[1,50], s8[35,40], u64[2,20,33]) tuple(ta, tb, tc, td, te, tf, tg, th)
})");
}

// NCHW convolutions (strides, padding, dilation, a bias epilogue) and an 01oi kernel: the cpu preset computes them
// NHWC between transposes (`convolution-layout`); every path agrees with the evaluator.
TEST(CpuExecutableTest, NonNhwcConvolutionsRunNhwcInTheCpuPreset) {
  constexpr std::string_view kText = R"(HloModule convs
ENTRY e {
  x = f32[2,3,11,9] parameter(0)
  k = f32[5,3,3,2] parameter(1)
  c = f32[2,5,6,9] convolution(x, k), window={size=3x2 stride=2x1 pad=1_1x0_1 rhs_dilate=1x1}, dim_labels=bf01_oi01->bf01
  bias = f32[5] parameter(2)
  bb = f32[2,5,6,9] broadcast(bias), dimensions={1}
  y = f32[2,5,6,9] add(c, bb)
  n = f32[1,7,7,6] parameter(3)
  w = f32[3,3,4,6] parameter(4)
  d = f32[1,7,7,4] convolution(n, w), window={size=3x3 pad=1_1x1_1 lhs_dilate=1x1}, dim_labels=b01f_01oi->b01f
  ROOT t = (f32[2,5,6,9], f32[1,7,7,4]) tuple(y, d)
})";
  expectAllAgree(kText);
  std::unique_ptr<HloModule> cpu = runPipelineOn(*parse(kText), "cpu");
  for (const auto& computation : cpu->computations()) {
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() != HloOpcode::kConvolution) continue;
      const std::string labels = *inst->attributes().findRaw("dim_labels");
      EXPECT_EQ(labels.substr(labels.find('_') + 1), "01io->b01f") << printModule(*cpu);
    }
  }
}

// f32 dots accumulate in f32, as XLA's CPU backend does (not in double like the evaluator): 1 + 1e-8 rounds to 1
// in f32, so 1*1 + 1e-8*1 + (-1)*1 is exactly 0, where a double accumulator would give 1e-8.
TEST(CpuExecutableTest, F32DotAccumulatesInF32) {
  auto module = parse(R"(HloModule acc
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,1] parameter(1)
  ROOT d = f32[2,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(module, nullptr);
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module);
  ASSERT_TRUE(executable.ok()) << executable.message();
  std::vector<Value> arguments = {Value::floats(Shape(PrimitiveType::kF32, {2, 3}), {1, 1e-8, -1, 2, 3, 4}),
                                  Value::floats(Shape(PrimitiveType::kF32, {3, 1}), {1, 1, 1})};
  StatusOr<Value> result = (*executable)->run(arguments);
  ASSERT_TRUE(result.ok()) << result.message();
  ASSERT_EQ(result->floatData().size(), 2u);
  EXPECT_EQ(result->floatData()[0], 0.0);
  EXPECT_EQ(result->floatData()[1], 9.0);
}

TEST(CpuExecutableTest, MultiOutputFusionWritesEveryOutput) {
  expectAllAgree(R"(HloModule mof
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused {
  p = f32[32,16] parameter(0)
  e = f32[32,16] exponential(p)
  z = f32[] constant(0)
  r = f32[32] reduce(e, z), dimensions={1}, to_apply=add
  ROOT t = (f32[32], f32[32,16]) tuple(r, e)
}
ENTRY e {
  x = f32[32,16] parameter(0)
  f = (f32[32], f32[32,16]) fusion(x), kind=kInput, calls=fused
  g0 = f32[32] get-tuple-element(f), index=0
  g1 = f32[32,16] get-tuple-element(f), index=1
  n = f32[32,16] negate(g1)
  ROOT t = (f32[32], f32[32,16]) tuple(g0, n)
})");
}

TEST(CpuExecutableTest, SoftmaxSplitAcrossManyThreads) {
  auto module = parse(R"(HloModule softmax
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[301,129] parameter(0)
  z = f32[] constant(0)
  ex = f32[301,129] exponential(x)
  s = f32[301] reduce(ex, z), dimensions={1}, to_apply=add
  sb = f32[301,129] broadcast(s), dimensions={0}
  ROOT d = f32[301,129] divide(ex, sb)
})");
  StatusOr<testing::Reference> reference = testing::referenceFor(*module, 3);
  ASSERT_TRUE(reference.ok()) << reference.message();
  std::unique_ptr<HloModule> fused = runPipelineOn(*module, "gpu");
  for (int threads : {1, 3, 8}) {
    EXPECT_EQ(testing::compareWithReference(*module, *reference, threads), "") << threads << " threads";
    EXPECT_EQ(testing::compareWithReference(*fused, *reference, threads), "") << threads << " threads, fused";
  }
}

TEST(CpuExecutableTest, AliasedOutputsLandInParameterBuffers) {
  auto module = parse(R"(HloModule step, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  w = f32[64] parameter(0)
  g = f32[64] parameter(1)
  lr = f32[] constant(0.5)
  lrb = f32[64] broadcast(lr), dimensions={}
  s = f32[64] multiply(g, lrb)
  w2 = f32[64] subtract(w, s)
  ROOT t = (f32[64]) tuple(w2)
})");
  for (const char* preset : {"none", "gpu"}) {
    std::unique_ptr<HloModule> m =
        std::string(preset) == "none" ? cloneModule(*module) : runPipelineOn(*module, preset);
    StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*m);
    ASSERT_TRUE(executable.ok()) << executable.message();
    const ExecutionPlan& plan = (*executable)->plan();
    ASSERT_TRUE(plan.outputs[0].aliasesParameter.has_value());
    EXPECT_EQ(plan.outputs[0].buffer, plan.parameters[0].buffer);
    std::vector<Value> args = randomArguments(*m, 1);
    StatusOr<Value> result = (*executable)->run(args);
    ASSERT_TRUE(result.ok()) << result.message();
    // Running again without resetting w continues from w' (the training-loop feedback).
    ASSERT_TRUE((*executable)->setParameter(1, args[1]).ok());
    ASSERT_TRUE((*executable)->execute().ok());
    StatusOr<Value> second = (*executable)->output(0);
    ASSERT_TRUE(second.ok());
    for (int64_t i = 0; i < 64; ++i) {
      const double w = args[0].doubleAt(i);
      const double g = args[1].doubleAt(i);
      const float once = static_cast<float>(w - static_cast<float>(g * 0.5f));
      EXPECT_FLOAT_EQ(static_cast<float>(second->doubleAt(i)), static_cast<float>(once - static_cast<float>(g * 0.5f)))
          << preset << " element " << i;
    }
  }
}

TEST(CpuExecutableTest, KernelSpansDescribeEachLaunch) {
  auto module = parse(R"(HloModule spans
ENTRY e {
  x = f32[1000] parameter(0)
  a = f32[1000] exponential(x)
  ROOT b = f32[1000] negate(a)
})");
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module);
  ASSERT_TRUE(executable.ok()) << executable.message();
  std::vector<ExecutionSpan> spans;
  ASSERT_TRUE((*executable)->run(randomArguments(*module, 1), &spans).ok());
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "a");
  EXPECT_EQ(spans[0].kind, "exponential");
  EXPECT_EQ(spans[0].bytesRead, 4000);
  EXPECT_EQ(spans[0].bytesWritten, 4000);
  EXPECT_EQ(spans[0].elements, 1000);
  EXPECT_LE(spans[0].startNs, spans[0].endNs);
  EXPECT_LE(spans[0].endNs, spans[1].startNs);
  // emit, optimise and code-generation spans for each of the two kernels, then the link.
  EXPECT_EQ((*executable)->compileSpans().size(), 7u);
  EXPECT_EQ((*executable)->compileSpans().back().kind, "link");
}

// Kernels compile on several threads at once; the executable is the same whichever thread compiled which kernel
// (the launches follow the plan's order), and a kernel that cannot compile fails the whole compile by its name.
TEST(CpuExecutableTest, KernelsCompiledOnSeveralThreadsRunAsOnOne) {
  std::string text = "HloModule many\nENTRY e {\n  x = f32[256] parameter(0)\n";
  std::string previous = "x";
  for (int i = 0; i < 24; ++i) {  // a chain of kernels: each a transcendental, so none fuses with the next here
    const std::string name = "k" + std::to_string(i);
    text += "  " + name + " = f32[256] " + (i % 2 ? "exponential" : "tanh") + "(" + previous + ")\n";
    previous = name;
  }
  text += "  ROOT r = f32[256] negate(" + previous + ")\n}\n";
  auto module = parse(text);
  const std::vector<Value> arguments = randomArguments(*module, 3);
  CpuCompileOptions one;
  one.compileThreads = 1;
  CpuCompileOptions four;
  four.compileThreads = 4;
  StatusOr<std::unique_ptr<CpuExecutable>> a = CpuExecutable::compile(*module, one);
  StatusOr<std::unique_ptr<CpuExecutable>> b = CpuExecutable::compile(*module, four);
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ((*a)->compileThreads(), 1);
  EXPECT_EQ((*b)->compileThreads(), 4);
  std::set<int> workers;
  for (const ExecutionSpan& span : (*b)->compileSpans()) workers.insert(span.worker);
  EXPECT_GE(workers.size(), 1u);
  EXPECT_LE(*workers.rbegin(), 3);
  StatusOr<Value> ra = (*a)->run(arguments);
  StatusOr<Value> rb = (*b)->run(arguments);
  ASSERT_TRUE(ra.ok() && rb.ok());
  StatusOr<std::vector<uint8_t>> bytesA = valueToBytes(*ra);
  StatusOr<std::vector<uint8_t>> bytesB = valueToBytes(*rb);
  ASSERT_TRUE(bytesA.ok() && bytesB.ok());
  EXPECT_EQ(*bytesA, *bytesB);  // the same code, bit for bit
}

// compile() promises not to reference the module afterwards; spans named kernels through the plan's instruction
// pointers, which dangled once the module was gone (the codegen benchmark found it).
TEST(CpuExecutableTest, SpansAfterTheModuleIsGone) {
  auto module = parse(R"(HloModule gone
ENTRY e {
  x = f32[64] parameter(0)
  ROOT the_negation_with_a_name_longer_than_short_string_storage = f32[64] negate(x)
})");
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module);
  ASSERT_TRUE(executable.ok()) << executable.message();
  std::vector<Value> arguments = randomArguments(*module, 1);
  module.reset();
  for (size_t i = 0; i < arguments.size(); ++i) {
    ASSERT_TRUE((*executable)->setParameter(static_cast<int64_t>(i), arguments[i]).ok());
  }
  std::vector<ExecutionSpan> spans;
  ASSERT_TRUE((*executable)->execute(&spans).ok());
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name, "the_negation_with_a_name_longer_than_short_string_storage");
  EXPECT_EQ(spans[0].kind, "negate");
}

TEST(CpuExecutableTest, UnsupportedOpcodeIsNamedInTheError) {
  auto module = parse(R"(HloModule bad
ENTRY e {
  x = f32[8,8] parameter(0)
  ROOT c = f32[8,8] cholesky(x), lower=true
})");
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module);
  ASSERT_FALSE(executable.ok());
  EXPECT_NE(executable.message().find("c: cannot lower cholesky"), std::string::npos) << executable.message();

  // Nested tuples in a loop state are not flattened (the corpus has none): refused, naming the while.
  auto nested = parse(R"(HloModule nested
cond {
  p = (s32[], (f32[4], f32[4])) parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  ROOT p = (s32[], (f32[4], f32[4])) parameter(0)
}
ENTRY e {
  i = s32[] parameter(0)
  x = f32[4] parameter(1)
  inner = (f32[4], f32[4]) tuple(x, x)
  t = (s32[], (f32[4], f32[4])) tuple(i, inner)
  ROOT w = (s32[], (f32[4], f32[4])) while(t), condition=cond, body=body
})");
  executable = CpuExecutable::compile(*nested);
  ASSERT_FALSE(executable.ok());
  EXPECT_NE(executable.message().find("nested tuples are not supported"), std::string::npos) << executable.message();
}

// Control flow (docs/CODEGEN.md "Control flow"): each module runs unfused and through both fusion pipelines, which
// fuse inside loop bodies and branches, against the evaluator.
void expectMatchesEvaluatorFusedAndUnfused(const HloModule& module) {
  StatusOr<testing::Reference> reference = testing::referenceFor(module);
  ASSERT_TRUE(reference.ok()) << reference.message();
  EXPECT_EQ(testing::compareWithReference(module, *reference), "") << "unfused";
  for (const char* preset : {"gpu", "cpu"}) {
    std::unique_ptr<HloModule> fused = runPipelineOn(module, preset);
    EXPECT_EQ(testing::compareWithReference(*fused, *reference), "") << preset;
  }
}

TEST(CpuExecutableControlFlowTest, ForiLoopWithTupleState) {
  // jax.lax.fori_loop(0, 10, lambda i, x: tanh(x * 0.9 + i * 0.01), x)
  auto module = parse(R"(HloModule fori
body {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[64] get-tuple-element(p), index=1
  c9 = f32[] constant(0.9)
  b9 = f32[64] broadcast(c9), dimensions={}
  m = f32[64] multiply(x, b9)
  fi = f32[] convert(i)
  c1 = f32[] constant(0.01)
  s = f32[] multiply(fi, c1)
  bs = f32[64] broadcast(s), dimensions={}
  a = f32[64] add(m, bs)
  t = f32[64] tanh(a)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT r = (s32[], f32[64]) tuple(next, t)
}
cond {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  x = f32[64] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[64]) tuple(zero, x)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  count = s32[] get-tuple-element(w), index=0
  y = f32[64] get-tuple-element(w), index=1
  ROOT out = (s32[], f32[64]) tuple(count, y)
})");
  expectMatchesEvaluatorFusedAndUnfused(*module);
}

TEST(CpuExecutableControlFlowTest, WhileConditionOnAComputedValue) {
  // while sum(x * x) > 1: x = x * 0.5 (the trip count depends on the data).
  auto module = parse(R"(HloModule shrink
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  x = f32[128] parameter(0)
  sq = f32[128] multiply(x, x)
  zero = f32[] constant(0)
  sum = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
  one = f32[] constant(1)
  ROOT gt = pred[] compare(sum, one), direction=GT
}
body {
  x = f32[128] parameter(0)
  h = f32[] constant(0.5)
  bh = f32[128] broadcast(h), dimensions={}
  ROOT m = f32[128] multiply(x, bh)
}
ENTRY e {
  x = f32[128] parameter(0)
  ROOT w = f32[128] while(x), condition=cond, body=body
})");
  expectMatchesEvaluatorFusedAndUnfused(*module);
}

TEST(CpuExecutableControlFlowTest, NestedWhile) {
  // for i in range(3): for j in range(4): acc = acc * 0.5 + x; x = x + 1
  auto module = parse(R"(HloModule nested
inner_body {
  p = (s32[], f32[16], f32[16]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  acc = f32[16] get-tuple-element(p), index=1
  x = f32[16] get-tuple-element(p), index=2
  h = f32[] constant(0.5)
  bh = f32[16] broadcast(h), dimensions={}
  m = f32[16] multiply(acc, bh)
  a = f32[16] add(m, x)
  one = s32[] constant(1)
  nj = s32[] add(j, one)
  ROOT r = (s32[], f32[16], f32[16]) tuple(nj, a, x)
}
inner_cond {
  p = (s32[], f32[16], f32[16]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(j, n), direction=LT
}
outer_body {
  p = (s32[], f32[16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = f32[16] get-tuple-element(p), index=1
  x = f32[16] get-tuple-element(p), index=2
  zero = s32[] constant(0)
  init = (s32[], f32[16], f32[16]) tuple(zero, acc, x)
  w = (s32[], f32[16], f32[16]) while(init), condition=inner_cond, body=inner_body
  nacc = f32[16] get-tuple-element(w), index=1
  c1 = f32[] constant(1)
  b1 = f32[16] broadcast(c1), dimensions={}
  nx = f32[16] add(x, b1)
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  ROOT r = (s32[], f32[16], f32[16]) tuple(ni, nacc, nx)
}
outer_cond {
  p = (s32[], f32[16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  x = f32[16] parameter(0)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  acc = f32[16] broadcast(z), dimensions={}
  init = (s32[], f32[16], f32[16]) tuple(zero, acc, x)
  w = (s32[], f32[16], f32[16]) while(init), condition=outer_cond, body=outer_body
  ROOT y = f32[16] get-tuple-element(w), index=1
})");
  expectMatchesEvaluatorFusedAndUnfused(*module);
}

TEST(CpuExecutableControlFlowTest, ZeroTripWhileReturnsItsOperand) {
  auto module = parse(R"(HloModule zero
cond {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(0)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8] get-tuple-element(p), index=1
  nx = f32[8] negate(x)
  ROOT r = (s32[], f32[8]) tuple(i, nx)
}
ENTRY e {
  x = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, x)
  ROOT w = (s32[], f32[8]) while(init), condition=cond, body=body
})");
  expectMatchesEvaluatorFusedAndUnfused(*module);
  std::vector<Value> arguments = randomArguments(*module, 3);
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module);
  ASSERT_TRUE(executable.ok()) << executable.message();
  StatusOr<Value> result = (*executable)->run(arguments);
  ASSERT_TRUE(result.ok()) << result.message();
  EXPECT_EQ(compareValues(arguments[0], result->tupleElement(1)), "");
}

TEST(CpuExecutableControlFlowTest, LoopStateElementsSwappedEachIteration) {
  // The body returns its state permuted, (b, a + b, a): moving the result into the state must not overwrite an
  // element a later move still reads. Five iterations of a Fibonacci-like recurrence.
  auto module = parse(R"(HloModule permute
cond {
  p = (s32[], f32[32], f32[32], f32[32]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[32], f32[32], f32[32]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[32] get-tuple-element(p), index=1
  b = f32[32] get-tuple-element(p), index=2
  s = f32[32] add(a, b)
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  ROOT r = (s32[], f32[32], f32[32], f32[32]) tuple(ni, b, s, a)
}
ENTRY e {
  a = f32[32] parameter(0)
  b = f32[32] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[32], f32[32], f32[32]) tuple(zero, a, b, a)
  ROOT w = (s32[], f32[32], f32[32], f32[32]) while(init), condition=cond, body=body
})");
  expectMatchesEvaluatorFusedAndUnfused(*module);
}

// scan_rnn (a real JAX scan: h = tanh(x_t·Wx + h·Wh) over 16 steps, weights uniform in [-1, 1)) is chaotic: it
// amplifies each step's f32 rounding until the CPU's result differs from the evaluator's by 1e-3 to 6e-3 (seeds 1-6),
// as any f32 program's would. The result check's bounds (the spread of noisy evaluations) accept that at every seed
// and still catch one element off by 0.2 (a missed update is off by O(1)); no bound can be 1e-3 of the output here.
TEST(CpuExecutableControlFlowTest, ResultCheckBoundsFollowAChaoticRecurrence) {
  StatusOr<std::unique_ptr<HloModule>> module =
      parseHloModuleFile(std::string(FS_SOURCE_DIR) + "/tests/data/xla/modules/scan_rnn.after.txt");
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(**module);
  ASSERT_TRUE(executable.ok()) << executable.message();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    std::vector<Value> arguments = randomArguments(**module, seed);
    StatusOr<EvalResult> expected = evaluateModule(**module, arguments);
    ASSERT_TRUE(expected.ok()) << expected.message();
    StatusOr<Value> actual = (*executable)->run(arguments);
    ASSERT_TRUE(actual.ok()) << actual.message();
    StatusOr<ResultBounds> bounds = resultBounds(**module, arguments, expected->result);
    ASSERT_TRUE(bounds.ok()) << bounds.message();
    EXPECT_EQ(resultCheckFailure(checkResult(*bounds, expected->result, *actual)), "");
    std::vector<double> h(actual->tupleElement(0).floatData().begin(), actual->tupleElement(0).floatData().end());
    size_t largest = 0;
    for (size_t i = 0; i < h.size(); ++i) largest = std::fabs(h[i]) > std::fabs(h[largest]) ? i : largest;
    h[largest] -= std::copysign(0.2, h[largest]);
    const Value wrong = Value::tuple({Value::floats(actual->tupleElement(0).shape(), h), actual->tupleElement(1)});
    EXPECT_NE(resultCheckFailure(checkResult(*bounds, expected->result, wrong)), "");
  }
}

// A recurrence h = tanh(0.15 h·W + x) over 12 steps, then its rows summed. A 1e-3 relative error in the element of
// largest magnitude, injected into the program before the loop (x), inside it (h, every step), after it (the final
// h) or into a sum, is caught at each of 20 seeds; the program without it passes at all 20. Where the error goes
// is an argument (parameters 2-5: the linear position for each place, -1 for none), so one compiled program serves.
constexpr std::string_view kInjectedRecurrence = R"hlo(HloModule injected

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  p = (s32[], f32[8,32], f32[32,32], f32[8,32], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(12)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], f32[8,32], f32[32,32], f32[8,32], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[8,32] get-tuple-element(p), index=1
  w = f32[32,32] get-tuple-element(p), index=2
  x = f32[8,32] get-tuple-element(p), index=3
  at = s32[] get-tuple-element(p), index=4
  hw = f32[8,32] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  k = f32[] constant(0.15)
  kb = f32[8,32] broadcast(k), dimensions={}
  hws = f32[8,32] multiply(hw, kb)
  pre = f32[8,32] add(hws, x)
  t = f32[8,32] tanh(pre)
  MASK2(m_inside, at)
  hn = f32[8,32] multiply(t, m_inside)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT r = (s32[], f32[8,32], f32[32,32], f32[8,32], s32[]) tuple(j, hn, w, x, at)
}

ENTRY e {
  x0 = f32[8,32] parameter(0)
  w = f32[32,32] parameter(1)
  at_before = s32[] parameter(2)
  at_inside = s32[] parameter(3)
  at_after = s32[] parameter(4)
  at_sum = s32[] parameter(5)
  MASK2(m_before, at_before)
  x = f32[8,32] multiply(x0, m_before)
  z = s32[] constant(0)
  zf = f32[] constant(0)
  h0 = f32[8,32] broadcast(zf), dimensions={}
  init = (s32[], f32[8,32], f32[32,32], f32[8,32], s32[]) tuple(z, h0, w, x, at_inside)
  loop = (s32[], f32[8,32], f32[32,32], f32[8,32], s32[]) while(init), condition=cond, body=body
  hf = f32[8,32] get-tuple-element(loop), index=1
  MASK2(m_after, at_after)
  h_out = f32[8,32] multiply(hf, m_after)
  sum = f32[8] reduce(hf, zf), dimensions={1}, to_apply=add
  MASK1(m_sum, at_sum)
  sum_out = f32[8] multiply(sum, m_sum)
  ROOT out = (f32[8,32], f32[8]) tuple(h_out, sum_out)
}
)hlo";

// The module above with each MASKn(NAME, AT) expanded: f32 ones of rank n with 1 + 1e-3 at linear position AT.
std::string injectedRecurrence() {
  std::string text(kInjectedRecurrence);
  for (size_t at = text.find("MASK"); at != std::string::npos; at = text.find("MASK", at)) {
    const size_t close = text.find(')', at);
    const bool two = text[at + 4] == '2';
    const std::string args = text.substr(at + 6, close - at - 6);
    const std::string name = args.substr(0, args.find(','));
    const std::string position = args.substr(args.find(", ") + 2);
    const std::string shape = two ? "[8,32]" : "[8]";
    std::string lines;
    if (two) {
      lines = fmt::format(
          "{0}_r = s32[8,32] iota(), iota_dimension=0\n  {0}_c = s32[8,32] iota(), iota_dimension=1\n"
          "  {0}_w = s32[] constant(32)\n  {0}_wb = s32[8,32] broadcast({0}_w), dimensions={{}}\n"
          "  {0}_rw = s32[8,32] multiply({0}_r, {0}_wb)\n  {0}_lin = s32[8,32] add({0}_rw, {0}_c)\n  ",
          name);
    } else {
      lines = fmt::format("{0}_lin = s32[8] iota(), iota_dimension=0\n  ", name);
    }
    lines += fmt::format(
        "{0}_atb = s32{2} broadcast({1}), dimensions={{}}\n"
        "  {0}_is = pred{2} compare({0}_lin, {0}_atb), direction=EQ\n"
        "  {0}_bump = f32[] constant(1.001)\n  {0}_one = f32[] constant(1)\n"
        "  {0}_bb = f32{2} broadcast({0}_bump), dimensions={{}}\n"
        "  {0}_ob = f32{2} broadcast({0}_one), dimensions={{}}\n"
        "  {0} = f32{2} select({0}_is, {0}_bb, {0}_ob)",
        name, position, shape);
    text.replace(at, close - at + 1, lines);
  }
  return text;
}

TEST(ResultCheckTest, CatchesAOneInAThousandErrorBeforeInsideAndAfterALoopAndInASum) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(injectedRecurrence(), "injected.hlo");
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(**module);
  ASSERT_TRUE(executable.ok()) << executable.message();
  const auto position = [](int64_t at) { return Value::integers(Shape::scalar(PrimitiveType::kS32), {at}); };
  const auto largest = [](const Value& v) {
    size_t best = 0;
    for (size_t i = 0; i < v.floatData().size(); ++i) {
      if (std::fabs(v.floatData()[i]) > std::fabs(v.floatData()[best])) best = i;
    }
    return static_cast<int64_t>(best);
  };
  int caught = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    std::vector<Value> arguments = randomArguments(**module, seed);
    for (size_t p = 2; p < 6; ++p) arguments[p] = position(-1);
    StatusOr<EvalResult> expected = evaluateModule(**module, arguments);
    ASSERT_TRUE(expected.ok()) << expected.message();
    StatusOr<ResultBounds> bounds = resultBounds(**module, arguments, expected->result);
    ASSERT_TRUE(bounds.ok()) << bounds.message();
    StatusOr<Value> actual = (*executable)->run(arguments);
    ASSERT_TRUE(actual.ok()) << actual.message();
    const std::vector<OutputCheck> checks = checkResult(*bounds, expected->result, *actual);
    EXPECT_EQ(resultCheckFailure(checks), "");
    for (const OutputCheck& check : checks) EXPECT_LE(check.bound, 1e-3 * check.maxAbs) << check.name;
    // The element of largest magnitude where each error goes in: of x (a parameter), of the final h, of the sums.
    const int64_t places[4] = {largest(arguments[0]), largest(expected->result.tupleElement(0)),
                               largest(expected->result.tupleElement(0)), largest(expected->result.tupleElement(1))};
    const char* names[4] = {"before", "inside", "after", "into the sum after"};
    for (size_t place = 0; place < 4; ++place) {
      std::vector<Value> faulty = arguments;
      faulty[2 + place] = position(places[place]);
      StatusOr<Value> wrong = (*executable)->run(faulty);
      ASSERT_TRUE(wrong.ok()) << wrong.message();
      const std::string failure = resultCheckFailure(checkResult(*bounds, expected->result, *wrong));
      EXPECT_NE(failure, "") << "a 1e-3 error " << names[place] << " the loop passed";
      caught += failure.empty() ? 0 : 1;
    }
  }
  EXPECT_EQ(caught, 80);
}

// Where the reference is NaN or infinite the result must be too, whatever the bound (an infinite bound there let
// any finite value pass); an element whose reference is finite but whose bound is not is counted as unbounded: the
// check does not cover it, and says so.
TEST(ResultCheckTest, NonFiniteReferencesAndUnboundedElements) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ResultBounds bounds;
  bounds.names = {"r"};
  bounds.bounds = {Value::floats(Shape(PrimitiveType::kF64, {5}), {0.1, inf, inf, inf, 0.1})};
  bounds.samples = 3;
  const Value expected = Value::floats(Shape(PrimitiveType::kF32, {5}), {1, nan, inf, 2, nan});
  const std::vector<OutputCheck> ok =
      checkResult(bounds, expected, Value::floats(Shape(PrimitiveType::kF32, {5}), {1.05, nan, inf, 7, -inf}));
  EXPECT_EQ(ok[0].failures, 0) << ok[0].firstFailure;
  EXPECT_EQ(ok[0].unbounded, 1);
  EXPECT_DOUBLE_EQ(ok[0].bound, 0.1);
  const std::vector<OutputCheck> wrong =
      checkResult(bounds, expected, Value::floats(Shape(PrimitiveType::kF32, {5}), {1.05, 3, inf, 2, nan}));
  EXPECT_EQ(wrong[0].failures, 1);
  EXPECT_NE(wrong[0].firstFailure.find("element 1 (linear)"), std::string::npos) << wrong[0].firstFailure;
}

// A conditional in a loop body, itself holding a loop: even trips halve x, odd trips run an inner loop adding y
// twice; the branches return their parameter (copied into the conditional's result) or a value they computed
// (swapped), and the loop state's y passes through untouched.
TEST(CpuExecutableControlFlowTest, ConditionalInsideALoopWithALoopInABranch) {
  auto module = parse(R"(HloModule mixed
inner_cond {
  p = (s32[], f32[24], f32[24]) parameter(0)
  k = s32[] get-tuple-element(p), index=0
  two = s32[] constant(2)
  ROOT lt = pred[] compare(k, two), direction=LT
}
inner_body {
  p = (s32[], f32[24], f32[24]) parameter(0)
  k = s32[] get-tuple-element(p), index=0
  x = f32[24] get-tuple-element(p), index=1
  y = f32[24] get-tuple-element(p), index=2
  a = f32[24] add(x, y)
  one = s32[] constant(1)
  nk = s32[] add(k, one)
  ROOT r = (s32[], f32[24], f32[24]) tuple(nk, a, y)
}
halve {
  p = (f32[24], f32[24]) parameter(0)
  x = f32[24] get-tuple-element(p), index=0
  y = f32[24] get-tuple-element(p), index=1
  h = f32[] constant(0.5)
  bh = f32[24] broadcast(h), dimensions={}
  m = f32[24] multiply(x, bh)
  ROOT r = (f32[24], f32[24]) tuple(m, y)
}
add_twice {
  p = (f32[24], f32[24]) parameter(0)
  x = f32[24] get-tuple-element(p), index=0
  y = f32[24] get-tuple-element(p), index=1
  zero = s32[] constant(0)
  init = (s32[], f32[24], f32[24]) tuple(zero, x, y)
  w = (s32[], f32[24], f32[24]) while(init), condition=inner_cond, body=inner_body
  nx = f32[24] get-tuple-element(w), index=1
  ROOT r = (f32[24], f32[24]) tuple(nx, y)
}
cond {
  p = (s32[], f32[24], f32[24]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[24], f32[24]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[24] get-tuple-element(p), index=1
  y = f32[24] get-tuple-element(p), index=2
  two = s32[] constant(2)
  parity = s32[] remainder(i, two)
  xy = (f32[24], f32[24]) tuple(x, y)
  c = (f32[24], f32[24]) conditional(parity, xy, xy), branch_computations={halve, add_twice}
  nx = f32[24] get-tuple-element(c), index=0
  ny = f32[24] get-tuple-element(c), index=1
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  ROOT r = (s32[], f32[24], f32[24]) tuple(ni, nx, ny)
}
ENTRY e {
  x = f32[24] parameter(0)
  y = f32[24] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[24], f32[24]) tuple(zero, x, y)
  ROOT w = (s32[], f32[24], f32[24]) while(init), condition=cond, body=body
})");
  expectMatchesEvaluatorFusedAndUnfused(*module);
}

// The in-place update in a loop body against the evaluator: a scan writing row i (in place), and the same scan
// also summing the old output after the update (must not be in place), unfused and fused.
TEST(CpuExecutableControlFlowTest, InPlaceUpdateInALoopBodyMatchesTheEvaluator) {
  for (const char* rest : {"ROOT r = (s32[], f32[8,16], f32[16]) tuple(ni, nout, t)",
                           "z = f32[] constant(0)\n  total = f32[] reduce(out, z), dimensions={0,1}, to_apply=add\n"
                           "  bt = f32[16] broadcast(total), dimensions={}\n  nh = f32[16] add(t, bt)\n"
                           "  ROOT r = (s32[], f32[8,16], f32[16]) tuple(ni, nout, nh)"}) {
    const std::string text = std::string(R"(HloModule scan
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
body {
  p = (s32[], f32[8,16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  out = f32[8,16] get-tuple-element(p), index=1
  h = f32[16] get-tuple-element(p), index=2
  t = f32[16] tanh(h)
  row = f32[1,16] reshape(t)
  zero = s32[] constant(0)
  nout = f32[8,16] dynamic-update-slice(out, row, i, zero)
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  )") + rest + R"(
}
cond {
  p = (s32[], f32[8,16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  h = f32[16] parameter(0)
  out = f32[8,16] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,16], f32[16]) tuple(zero, out, h)
  ROOT w = (s32[], f32[8,16], f32[16]) while(init), condition=cond, body=body
})";
    auto module = parse(text);
    ASSERT_NE(module, nullptr);
    expectMatchesEvaluatorFusedAndUnfused(*module);
  }
}

// Runs `module` on `arguments` on the CPU and in the evaluator; "" when they agree.
std::string compareOn(const HloModule& module, const std::vector<Value>& arguments) {
  StatusOr<EvalResult> expected = evaluateModule(module, arguments);
  if (!expected.ok()) return "evaluator: " + expected.message();
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(module);
  if (!executable.ok()) return "compile: " + executable.message();
  StatusOr<Value> actual = (*executable)->run(arguments);
  if (!actual.ok()) return "run: " + actual.message();
  return compareWithReference(module, arguments, expected->result, *actual);
}

Value s32Scalar(int64_t v) {
  return Value::integers(Shape(PrimitiveType::kS32, {}), {v});
}

TEST(CpuExecutableControlFlowTest, ConditionalOnAPredWithTupleOperands) {
  auto module = parse(R"(HloModule cond_pred
on_true {
  p = (f32[16], f32[16]) parameter(0)
  a = f32[16] get-tuple-element(p), index=0
  b = f32[16] get-tuple-element(p), index=1
  s = f32[16] add(a, b)
  ROOT r = (f32[16], f32[16]) tuple(s, a)
}
on_false {
  p = f32[16] parameter(0)
  n = f32[16] negate(p)
  ROOT r = (f32[16], f32[16]) tuple(n, p)
}
ENTRY e {
  x = f32[16] parameter(0)
  y = f32[16] parameter(1)
  z = f32[] constant(0)
  bz = f32[16] broadcast(z), dimensions={}
  d = f32[16] subtract(x, y)
  first = f32[1] slice(d), slice={[0:1]}
  fs = f32[] reshape(first)
  gt = pred[] compare(fs, z), direction=GT
  t = (f32[16], f32[16]) tuple(x, y)
  ROOT c = (f32[16], f32[16]) conditional(gt, t, y), true_computation=on_true, false_computation=on_false
})");
  // Both branches: the pred is data-dependent, so try seeds until each side has been taken.
  std::set<bool> taken;
  for (uint64_t seed = 1; seed < 40 && taken.size() < 2; ++seed) {
    std::vector<Value> arguments = randomArguments(*module, seed);
    taken.insert(arguments[0].doubleAt(0) > arguments[1].doubleAt(0));
    EXPECT_EQ(compareOn(*module, arguments), "") << "seed " << seed;
  }
  EXPECT_EQ(taken.size(), 2u);
  for (const char* preset : {"gpu", "cpu"}) {
    EXPECT_EQ(compareWithEvaluator(*runPipelineOn(*module, preset)), "") << preset;
  }
}

TEST(CpuExecutableControlFlowTest, ConditionalOnAnIndexOutOfRangeRunsTheLastBranch) {
  auto module = parse(R"(HloModule cond_index
b0 {
  p = f32[8] parameter(0)
  ROOT n = f32[8] negate(p)
}
b1 {
  p = f32[8] parameter(0)
  ROOT e = f32[8] exponential(p)
}
b2 {
  p = f32[8] parameter(0)
  ROOT c = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})
}
ENTRY e {
  i = s32[] parameter(0)
  x = f32[8] parameter(1)
  ROOT c = f32[8] conditional(i, x, x, x), branch_computations={b0, b1, b2}
})");
  std::vector<Value> arguments = randomArguments(*module, 5);
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module);
  ASSERT_TRUE(executable.ok()) << executable.message();
  for (int64_t index : {0, 1, 2, 3, -1, 1000}) {
    arguments[0] = s32Scalar(index);
    StatusOr<EvalResult> expected = evaluateModule(*module, arguments);
    ASSERT_TRUE(expected.ok()) << expected.message();
    StatusOr<Value> actual = (*executable)->run(arguments);
    ASSERT_TRUE(actual.ok()) << actual.message();
    EXPECT_EQ(compareValues(expected->result, *actual), "") << "index " << index;
  }
  // Out of range is the last branch (the constant), not the first.
  arguments[0] = s32Scalar(-1);
  StatusOr<Value> last = (*executable)->run(arguments);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->doubleAt(0), 1.0);
}

TEST(CpuExecutableControlFlowTest, DynamicUpdateSliceClampsItsStarts) {
  auto module = parse(R"(HloModule dus
ENTRY e {
  x = f32[6,8] parameter(0)
  u = f32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT d = f32[6,8] dynamic-update-slice(x, u, i, j)
})");
  std::vector<Value> arguments = randomArguments(*module, 9);
  // In range, negative (clamped to 0), past the end (clamped to size - update size).
  for (auto [i, j] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {-3, 0}, {5, 7}, {100, -100}, {4, 5}}) {
    arguments[2] = s32Scalar(i);
    arguments[3] = s32Scalar(j);
    EXPECT_EQ(compareOn(*module, arguments), "") << i << "," << j;
  }
  // A scan writing row i of its output each iteration: the fused dynamic-update-slice in a loop body.
  auto scan = parse(R"(HloModule scan
body {
  p = (s32[], f32[4,16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  out = f32[4,16] get-tuple-element(p), index=1
  h = f32[16] get-tuple-element(p), index=2
  t = f32[16] tanh(h)
  row = f32[1,16] reshape(t)
  zero = s32[] constant(0)
  nout = f32[4,16] dynamic-update-slice(out, row, i, zero)
  one = s32[] constant(1)
  ni = s32[] add(i, one)
  ROOT r = (s32[], f32[4,16], f32[16]) tuple(ni, nout, t)
}
cond {
  p = (s32[], f32[4,16], f32[16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  h = f32[16] parameter(0)
  zero = s32[] constant(0)
  z = f32[] constant(0)
  out = f32[4,16] broadcast(z), dimensions={}
  init = (s32[], f32[4,16], f32[16]) tuple(zero, out, h)
  w = (s32[], f32[4,16], f32[16]) while(init), condition=cond, body=body
  ROOT o = f32[4,16] get-tuple-element(w), index=1
})");
  expectMatchesEvaluatorFusedAndUnfused(*scan);
}

TEST(CpuExecutableControlFlowTest, ReduceWindowMatchesTheEvaluator) {
  // XLA's CPU pipeline rewrites a sum into a reduce-window then a reduce (the loops corpus module).
  auto module = parse(R"(HloModule window
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[10,12] parameter(0)
  z = f32[] constant(0)
  r = f32[120] reshape(x)
  a = f32[4] reduce-window(r, z), window={size=30 stride=30}, to_apply=add
  b = f32[5,6] reduce-window(x, z), window={size=3x2 stride=2x2 pad=1_1x0_0}, to_apply=add
  ROOT t = (f32[4], f32[5,6]) tuple(a, b)
})");
  ASSERT_NE(module, nullptr);
  expectMatchesEvaluatorFusedAndUnfused(*module);
}

TEST(CpuExecutableControlFlowTest, InterruptStopsALoopThatNeverEnds) {
  auto module = parse(R"(HloModule forever
cond {
  p = f32[4] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  ROOT w = f32[4] while(x), condition=cond, body=body
})");
  volatile std::sig_atomic_t flag = 1;  // as if Ctrl-C had come
  CpuCompileOptions options;
  options.interrupt = &flag;
  StatusOr<std::unique_ptr<CpuExecutable>> executable = CpuExecutable::compile(*module, options);
  ASSERT_TRUE(executable.ok()) << executable.message();
  StatusOr<Value> result = (*executable)->run(randomArguments(*module, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.message().find("w: interrupted after 0 iterations"), std::string::npos) << result.message();
}

TEST(CpuExecutableControlFlowTest, CallsAreInlined) {
  auto module = parse(R"(HloModule calls
square {
  p = f32[32] parameter(0)
  ROOT m = f32[32] multiply(p, p)
}
body {
  x = f32[32] parameter(0)
  s = f32[32] call(x), to_apply=square
  t = f32[32] tanh(s)
  h = f32[] constant(0.5)
  bh = f32[32] broadcast(h), dimensions={}
  ROOT m = f32[32] multiply(t, bh)
}
cond {
  x = f32[32] parameter(0)
  s = f32[1] slice(x), slice={[0:1]}
  r = f32[] reshape(s)
  c = f32[] constant(0.001)
  ROOT gt = pred[] compare(r, c), direction=GT
}
ENTRY e {
  x = f32[32] parameter(0)
  c = f32[32] call(x), to_apply=square
  ROOT w = f32[32] while(c), condition=cond, body=body
})");
  expectMatchesEvaluatorFusedAndUnfused(*module);
}

// Every sample and corpus module: unfused, gpu preset, cpu preset, within the evaluator's budget
// (testing::kEvaluationBudget).
constexpr int64_t kMaxWork = testing::kEvaluationBudget;

// What checking one module's code against the evaluator found. Only what cannot be checked skips: no reference
// (the evaluator cannot run an op) or too much work to interpret. A module that does not lower or compile, or
// that computes something else, fails: a lowering that breaks must never pass as a skip.
struct ModuleVerdict {
  enum Kind { kPass, kSkip, kFail } kind = kPass;
  std::string message;
};

ModuleVerdict checkModuleCodegen(const HloModule& module, int64_t maxWork) {
  if (Status evaluable = checkEvaluable(module); !evaluable.ok()) {
    return {ModuleVerdict::kSkip, "no reference: " + evaluable.message()};
  }
  const int64_t work = estimateEvaluationWork(module);
  if (work > maxWork) return {ModuleVerdict::kSkip, testing::tooExpensiveToInterpret(work, maxWork)};
  // The module as written is the reference for its fused versions too, as for `run`. compareWithReference compiles
  // as `run` does (calls inlined first); "compile: ... cannot lower ..." is a failure.
  StatusOr<testing::Reference> reference = testing::referenceFor(module);
  if (!reference.ok()) return {ModuleVerdict::kFail, reference.message()};
  std::string failures;
  if (std::string unfused = testing::compareWithReference(module, *reference); !unfused.empty()) {
    failures += "unfused: " + unfused + "\n";
  }
  for (const char* preset : {"gpu", "cpu"}) {
    std::unique_ptr<HloModule> fused = runPipelineOn(module, preset);
    if (std::string diff = testing::compareWithReference(*fused, *reference); !diff.empty()) {
      failures += std::string(preset) + ": " + diff + "\n";
    }
  }
  if (!failures.empty()) return {ModuleVerdict::kFail, failures};
  return {};
}

class ModuleCodegenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModuleCodegenTest, MatchesTheEvaluatorUnfusedAndFused) {
  StatusOr<std::unique_ptr<HloModule>> parsed = parseHloModuleFile(GetParam());
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  ModuleVerdict verdict = checkModuleCodegen(**parsed, kMaxWork);
  if (verdict.kind == ModuleVerdict::kSkip) GTEST_SKIP() << verdict.message;
  EXPECT_EQ(verdict.kind, ModuleVerdict::kPass) << verdict.message;
}

// The rule above, shown on modules that stand for a regression: an op the evaluator runs but codegen cannot lower
// (a variadic reduce: argmax) is a failure, not a skip; a module the evaluator cannot run is a skip that says why.
// When codegen learns variadic reduces, replace the first module with another op it cannot lower.
TEST(ModuleCodegenVerdictTest, ALoweringThatFailsIsAFailureNotASkip) {
  // `map` with a floating-point computation: the evaluator runs it, codegen does not lower it (yet).
  std::unique_ptr<HloModule> mapped = parse(R"(HloModule mapped
add2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,8] parameter(0)
  ROOT m = f32[4,8] map(x, x), dimensions={0,1}, to_apply=add2
})");
  ASSERT_TRUE(checkEvaluable(*mapped).ok()) << "the evaluator must run it for this test to mean anything";
  ModuleVerdict verdict = checkModuleCodegen(*mapped, kMaxWork);
  if (verdict.kind == ModuleVerdict::kPass) {
    GTEST_SKIP() << "codegen lowers map now: pick another op it cannot lower for this test";
  }
  EXPECT_EQ(verdict.kind, ModuleVerdict::kFail) << verdict.message;
  EXPECT_NE(verdict.message.find("lower"), std::string::npos) << verdict.message;

  std::unique_ptr<HloModule> opaque = parse(R"(HloModule opaque
ENTRY e {
  x = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(x), custom_call_target="SomeVendorKernel"
})");
  ModuleVerdict skipped = checkModuleCodegen(*opaque, kMaxWork);
  EXPECT_EQ(skipped.kind, ModuleVerdict::kSkip) << skipped.message;
  EXPECT_NE(skipped.message.find("no reference"), std::string::npos) << skipped.message;
}

std::vector<std::string> modulesOrPlaceholder() {
  std::vector<std::string> paths = testing::allModulePaths();
  if (paths.empty()) paths.push_back("<no modules>");
  return paths;
}

INSTANTIATE_TEST_SUITE_P(AllModules, ModuleCodegenTest, ::testing::ValuesIn(modulesOrPlaceholder()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return testing::moduleTestName(info.param) + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace fusionscope::core
