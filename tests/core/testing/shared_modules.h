#pragma once

// Modules more than one test suite compiles: the CPU tests check them against the evaluator, the PTX tests through
// ptxas.
#include <string_view>

namespace fusionscope::testing {

// As XLA CPU writes an argmax (`iota_reduce_fusion`): fusions whose root is a tuple-shaped reduce (values and their
// positions, the values computed in the fusion's loop) and a tuple-shaped reduce-window (a pooling argmax).
inline constexpr std::string_view kVariadicReductionFusions = R"(HloModule vfusion
argmax {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(i, j), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, a, b)
  k = s32[] select(keep, i, j)
  ROOT r = (f32[], s32[]) tuple(v, k)
}
scaled_argmax {
  p0 = s32[6,5] parameter(0)
  p1 = f32[6] parameter(1)
  c = f32[6,5] convert(p0)
  s = f32[6,5] broadcast(p1), dimensions={0}
  m = f32[6,5] multiply(c, s)
  pos = s32[6,5] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[6], s32[6]) reduce(m, pos, ninf, zero), dimensions={1}, to_apply=argmax
}
pool_argmax {
  q0 = f32[2,4,4,3] parameter(0)
  e = f32[2,4,4,3] exponential(q0)
  pos = s32[2,4,4,3] iota(), iota_dimension=2
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT w = (f32[2,2,2,3], s32[2,2,2,3]) reduce-window(e, pos, ninf, zero), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=argmax
}
ENTRY e {
  x = s32[6,5] parameter(0)
  scale = f32[6] parameter(1)
  y = f32[2,4,4,3] parameter(2)
  f = (f32[6], s32[6]) fusion(x, scale), kind=kLoop, calls=scaled_argmax
  g = (f32[2,2,2,3], s32[2,2,2,3]) fusion(y), kind=kLoop, calls=pool_argmax
  best = s32[6] get-tuple-element(f), index=1
  value = f32[6] get-tuple-element(f), index=0
  where = s32[2,2,2,3] get-tuple-element(g), index=1
  ROOT t = (f32[6], s32[6], s32[2,2,2,3]) tuple(value, best, where)
}
)";

}  // namespace fusionscope::testing
