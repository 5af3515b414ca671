// Reductions, windows, sort, contractions, batch norm and control flow in the evaluator, plus the module-level
// API (arguments, recorded values, unsupported opcodes, work estimate). Expected numbers are worked by hand
// or with numpy (dot, convolution with an independent numpy reference, batch norm checked against a
// numerical gradient).

#include <optional>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/core/eval/eval_testing.h"

namespace fusionscope::core {
namespace {

using testing::element;
using testing::evalText;
using testing::evalValue;
using testing::f32;
using testing::s32;

constexpr std::string_view kAddF32 = R"(
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
)";

std::string withReducers(std::string_view entry) {
  return std::string(kAddF32) + std::string(entry);
}

TEST(ReduceEvalTest, SumAndMaxOverDimensions) {
  Value v = evalValue(withReducers(R"(
    ENTRY e {
      x = f32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
      zero = f32[] constant(0)
      ninf = f32[] constant(-inf)
      rows = f32[2] reduce(x, zero), dimensions={1}, to_apply=add
      cols = f32[3] reduce(x, zero), dimensions={0}, to_apply=add
      all = f32[] reduce(x, zero), dimensions={0,1}, to_apply=add
      max = f32[2] reduce(x, ninf), dimensions={1}, to_apply=max
      ROOT t = (f32[2], f32[3], f32[], f32[2]) tuple(rows, cols, all, max)
    })"));
  EXPECT_EQ(element(v, 0), "f32[2] {6, 15}");
  EXPECT_EQ(element(v, 1), "f32[3] {5, 7, 9}");
  EXPECT_EQ(element(v, 2), "f32[] 21");
  EXPECT_EQ(element(v, 3), "f32[2] {3, 6}");
}

TEST(ReduceEvalTest, AccumulatesInElementTypeInIndexOrder) {
  // In f32, 1e8 + 1 rounds back to 1e8 (spacing 8), so ((1e8 + 1) - 1e8) + 1 = 1; in exact arithmetic it is 2.
  EXPECT_EQ(evalText(withReducers(R"(
    ENTRY e {
      x = f32[4] constant({1e8, 1, -1e8, 1})
      zero = f32[] constant(0)
      ROOT r = f32[] reduce(x, zero), dimensions={0}, to_apply=add
    })")),
            "f32[] 1");
}

TEST(ReduceEvalTest, VariadicArgmax) {
  Value v = evalValue(R"(
    argmax {
      av = f32[] parameter(0)
      ai = s32[] parameter(1)
      bv = f32[] parameter(2)
      bi = s32[] parameter(3)
      gt = pred[] compare(av, bv), direction=GT
      eq = pred[] compare(av, bv), direction=EQ
      lt = pred[] compare(ai, bi), direction=LT
      tie = pred[] and(eq, lt)
      keep = pred[] or(gt, tie)
      v = f32[] select(keep, av, bv)
      i = s32[] select(keep, ai, bi)
      ROOT r = (f32[], s32[]) tuple(v, i)
    }
    ENTRY e {
      x = f32[2,4] constant({ {3, 7, 7, 1}, {-1, -5, 2, 2} })
      idx = s32[2,4] iota(), iota_dimension=1
      ninf = f32[] constant(-inf)
      zero = s32[] constant(0)
      ROOT r = (f32[2], s32[2]) reduce(x, idx, ninf, zero), dimensions={1}, to_apply=argmax
    })");
  EXPECT_EQ(v.toString(0), "(f32[2] {7, 2}, s32[2] {1, 2})");
}

TEST(ReduceEvalTest, ReducerThatIsNotPlainScalarCodeRunsThroughTheEvaluator) {
  // The reducer calls another computation, so it cannot be compiled to a scalar program.
  EXPECT_EQ(evalText(R"(
    mul {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT m = f32[] multiply(a, b)
    }
    prod {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT c = f32[] call(a, b), to_apply=mul
    }
    ENTRY e {
      x = f32[2,4] constant({ {1, 2, 3, 4}, {0.5, 0.5, 2, 3} })
      one = f32[] constant(1)
      ROOT r = f32[2] reduce(x, one), dimensions={1}, to_apply=prod
    })"),
            "f32[2] {24, 1.5}");
}

TEST(ReduceEvalTest, IntegerReduceWraps) {
  EXPECT_EQ(evalText(R"(
    add {
      a = s8[] parameter(0)
      b = s8[] parameter(1)
      ROOT s = s8[] add(a, b)
    }
    ENTRY e {
      x = s8[3] constant({100, 100, 100})
      zero = s8[] constant(0)
      ROOT r = s8[] reduce(x, zero), dimensions={0}, to_apply=add
    })"),
            "s8[] 44");
}

TEST(ReduceWindowEvalTest, MaxPoolAndPaddedSum) {
  Value v = evalValue(withReducers(R"(
    ENTRY e {
      x = f32[4,4] iota(), iota_dimension=1
      r = f32[4,4] iota(), iota_dimension=0
      four = f32[] constant(4)
      f4 = f32[4,4] broadcast(four), dimensions={}
      r4 = f32[4,4] multiply(r, f4)
      m = f32[4,4] add(r4, x)
      ninf = f32[] constant(-inf)
      pool = f32[2,2] reduce-window(m, ninf), window={size=2x2 stride=2x2}, to_apply=max
      y = f32[4] constant({1, 2, 3, 4})
      zero = f32[] constant(0)
      sum = f32[4] reduce-window(y, zero), window={size=3 pad=1_1}, to_apply=add
      dilated = f32[2] reduce-window(y, zero), window={size=2 rhs_dilate=2}, to_apply=add
      ROOT t = (f32[2,2], f32[4], f32[2]) tuple(pool, sum, dilated)
    })"));
  EXPECT_EQ(element(v, 0), "f32[2,2] {{5, 7}, {13, 15}}");
  EXPECT_EQ(element(v, 1), "f32[4] {3, 6, 9, 7}");
  EXPECT_EQ(element(v, 2), "f32[2] {4, 6}");
}

TEST(ReduceWindowEvalTest, BaseDilationSkipsHoles) {
  // Base [1, _, 2, _, 3]: windows of 2 cover (1,_), (_,2), (2,_), (_,3).
  EXPECT_EQ(evalText(withReducers(R"(
    ENTRY e {
      y = f32[3] constant({1, 2, 3})
      zero = f32[] constant(0)
      ROOT based = f32[4] reduce-window(y, zero), window={size=2 lhs_dilate=2}, to_apply=add
    })")),
            "f32[4] {1, 2, 2, 3}");
}

TEST(SelectAndScatterEvalTest, ScattersToTheSelectedMaximum) {
  Value v = evalValue(withReducers(R"(
    ge {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT c = pred[] compare(a, b), direction=GE
    }
    ENTRY e {
      x = f32[6] constant({1, 5, 3, 2, 8, 4})
      src = f32[3] constant({10, 20, 30})
      zero = f32[] constant(0)
      a = f32[6] select-and-scatter(x, src, zero), window={size=2 stride=2}, select=ge, scatter=add
      y = f32[3] constant({1, 3, 2})
      src2 = f32[2] constant({10, 20})
      b = f32[3] select-and-scatter(y, src2, zero), window={size=2 stride=1}, select=ge, scatter=add
      ROOT t = (f32[6], f32[3]) tuple(a, b)
    })"));
  EXPECT_EQ(element(v, 0), "f32[6] {0, 10, 20, 0, 30, 0}");
  // Overlapping windows both pick the 3 and their sources add up there.
  EXPECT_EQ(element(v, 1), "f32[3] {0, 30, 0}");
}

TEST(SortEvalTest, AscendingDescendingAndStableKeyValue) {
  Value v = evalValue(R"(
    lt {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT c = pred[] compare(a, b), direction=LT
    }
    gt {
      a = s32[] parameter(0)
      b = s32[] parameter(1)
      ROOT c = pred[] compare(a, b), direction=GT
    }
    bykey {
      ka = s32[] parameter(0)
      kb = s32[] parameter(1)
      va = s32[] parameter(2)
      vb = s32[] parameter(3)
      ROOT c = pred[] compare(ka, kb), direction=LT
    }
    ENTRY e {
      x = f32[5] constant({3, 1, 2, -1, 0})
      up = f32[5] sort(x), dimensions={0}, to_apply=lt
      m = s32[2,3] constant({ {3, 1, 2}, {0, 5, 4} })
      down = s32[2,3] sort(m), dimensions={1}, to_apply=gt
      keys = s32[6] constant({2, 1, 2, 1, 0, 2})
      vals = s32[6] iota(), iota_dimension=0
      kv = (s32[6], s32[6]) sort(keys, vals), dimensions={0}, is_stable=true, to_apply=bykey
      ROOT t = (f32[5], s32[2,3], (s32[6], s32[6])) tuple(up, down, kv)
    })");
  EXPECT_EQ(element(v, 0), "f32[5] {-1, 0, 1, 2, 3}");
  EXPECT_EQ(element(v, 1), "s32[2,3] {{3, 2, 1}, {5, 4, 0}}");
  EXPECT_EQ(element(v, 2), "(s32[6] {0, 1, 1, 2, 2, 2}, s32[6] {4, 1, 3, 0, 2, 5})");
}

TEST(SortEvalTest, TotalOrderPutsNaNLast) {
  EXPECT_EQ(evalText(R"(
    lt {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT c = pred[] compare(a, b), direction=LT, type=TOTALORDER
    }
    ENTRY e {
      x = f32[5] constant({nan, 1, 0, -0, -inf})
      ROOT s = f32[5] sort(x), dimensions={0}, to_apply=lt
    })"),
            "f32[5] {-inf, -0, 0, 1, nan}");
}

// topk along the last dimension: the K largest (or smallest) in order with their indices; equal values keep the
// lower index first; floats in total order, so a NaN is the largest and -NaN the smallest, as XLA's TopK.
TEST(TopKEvalTest, LargestSmallestTiesAndNaN) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[2,5] constant({ {3, 1, 3, nan, -inf}, {0, -0, 2, 2, 1} })
      big = (f32[2,3], s32[2,3]) topk(x), k=3, largest=true
      small = (f32[2,2], s32[2,2]) topk(x), k=2, largest=false
      none = (f32[2,0], s32[2,0]) topk(x), k=0
      i = s32[4] constant({5, -7, 5, 9})
      ints = (s32[4], s32[4]) topk(i), k=4
      ROOT t = ((f32[2,3], s32[2,3]), (f32[2,2], s32[2,2]), (f32[2,0], s32[2,0]), (s32[4], s32[4]))
               tuple(big, small, none, ints)
    })");
  EXPECT_EQ(element(v, 0), "(f32[2,3] {{nan, 3, 3}, {2, 2, 1}}, s32[2,3] {{3, 0, 2}, {2, 3, 4}})");
  EXPECT_EQ(element(v, 1), "(f32[2,2] {{-inf, 1}, {-0, 0}}, s32[2,2] {{4, 1}, {1, 0}})");
  EXPECT_EQ(element(v, 2), "(f32[2,0] {{}, {}}, s32[2,0] {{}, {}})");
  EXPECT_EQ(element(v, 3), "(s32[4] {9, 5, 5, -7}, s32[4] {3, 0, 2, 1})");
}

// XLA CPU's form after optimization: a TopK custom-call whose called computation orders (value, index) pairs; K
// is the result's last dimension. Here the comparator puts smaller values first.
TEST(TopKEvalTest, CustomCallFollowsItsComparator) {
  EXPECT_EQ(evalText(R"(
    less {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      i = s32[] parameter(2)
      j = s32[] parameter(3)
      ROOT c = pred[] compare(a, b), direction=LT
    }
    ENTRY e {
      x = f32[6] constant({4, 2, 8, 2, 1, 9})
      ROOT t = (f32[3], s32[3]) custom-call(x), custom_call_target="TopK", called_computations={less}
    })"),
            "(f32[3] {1, 2, 2}, s32[3] {4, 1, 3})");
}

TEST(MapEvalTest, AppliesComputationPerElement) {
  EXPECT_EQ(evalText(withReducers(R"(
    ENTRY e {
      x = f32[3] constant({1, 2, 3})
      y = f32[3] constant({10, 20, 30})
      ROOT m = f32[3] map(x, y), dimensions={0}, to_apply=add
    })")),
            "f32[3] {11, 22, 33}");
}

TEST(DotEvalTest, MatrixProductAndContractingFirstDimension) {
  Value v = evalValue(R"(
    ENTRY e {
      a = f32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
      b = f32[3,2] constant({ {1, 0}, {0, 1}, {1, 1} })
      mm = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
      l = f32[3,2] constant({ {1, 2}, {3, 4}, {5, 6} })
      r = f32[3,4] constant({ {1, 0, -1, 2}, {2, 1, 0, 1}, {0, 3, 1, -2} })
      lt = f32[2,4] dot(l, r), lhs_contracting_dims={0}, rhs_contracting_dims={0}
      ROOT t = (f32[2,2], f32[2,4]) tuple(mm, lt)
    })");
  EXPECT_EQ(element(v, 0), "f32[2,2] {{4, 5}, {10, 11}}");
  // numpy: l.T @ r.
  EXPECT_EQ(element(v, 1), "f32[2,4] {{7, 18, 4, -5}, {10, 22, 4, -4}}");
}

TEST(DotEvalTest, BatchDimensions) {
  // numpy: einsum('bik,bkj->bij', arange(12).reshape(2,2,3), arange(12).reshape(2,3,2) - 5).
  std::vector<double> lhs(12);
  std::vector<double> rhs(12);
  for (int i = 0; i < 12; ++i) {
    lhs[static_cast<size_t>(i)] = i;
    rhs[static_cast<size_t>(i)] = i - 5;
  }
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      a = f32[2,2,3] parameter(0)
      b = f32[2,3,2] parameter(1)
      ROOT d = f32[2,2,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
    })",
                     {f32({2, 2, 3}, lhs), f32({2, 3, 2}, rhs)}),
            "f32[2,2,2] {{{-5, -2}, {-32, -20}}, {{67, 88}, {94, 124}}}");
}

TEST(DotEvalTest, IntegerDotAccumulatesInResultType) {
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      a = s8[1,2] constant({ {100, 100} })
      b = s8[2,1] constant({ {100}, {100} })
      ROOT d = s32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
    })"),
            "s32[1,1] {{20000}}");
}

TEST(ConvolutionEvalTest, TwoDimensionalNoPadding) {
  // Sobel-like kernel over a ramp x[i][j] = 4i + j: every output is -8.
  std::vector<double> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[static_cast<size_t>(i)] = i;
  std::string hlo = R"(
    ENTRY e {
      x = f32[1,4,4,1] parameter(0)
      k = f32[3,3,1,1] constant({ { {{1}}, {{0}}, {{-1}} }, { {{2}}, {{0}}, {{-2}} }, { {{1}}, {{0}}, {{-1}} } })
      a = f32[1,2,2,1] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f
      b = f32[1,2,2,1] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
      ROOT t = (f32[1,2,2,1], f32[1,2,2,1]) tuple(a, b)
    })";
  Value v = evalValue(hlo, {f32({1, 4, 4, 1}, ramp)});
  EXPECT_EQ(element(v, 0), "f32[1,2,2,1] {{{{-8}, {-8}}, {{-8}, {-8}}}}");
  // Padding 1 and stride 2 (numpy reference): -7, -6, -36, -8.
  EXPECT_EQ(element(v, 1), "f32[1,2,2,1] {{{{-7}, {-6}}, {{-36}, {-8}}}}");
}

TEST(ConvolutionEvalTest, FeatureGroups) {
  // Depthwise-style: 2 input channels, 4 output features, feature_group_count=2 (features 0-1 read channel 0,
  // 2-3 read channel 1). Input arange(18)-4 as [1,2,3,3], kernel [4,1,2,2]; expected from a numpy reference.
  std::vector<double> input(18);
  for (int i = 0; i < 18; ++i) input[static_cast<size_t>(i)] = i - 4;
  Value kernel = f32({4, 1, 2, 2}, {1, 2, -1, 0.5, 0, 1, 1, 0, 2, 0, 0, 1, -1, -1, 1, 1});
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      x = f32[1,2,3,3] parameter(0)
      k = f32[4,1,2,2] parameter(1)
      ROOT c = f32[1,4,2,2] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01, feature_group_count=2
    })",
                     {f32({1, 2, 3, 3}, input), kernel}),
            "f32[1,4,2,2] {{{{-9, -6.5}, {-1.5, 1}}, {{-4, -2}, {2, 4}}, {{19, 22}, {28, 31}}, {{6, 6}, {6, 6}}}}");
}

TEST(ConvolutionEvalTest, BatchGroups) {
  // batch_group_count=2: output feature 0 reads batch 0, feature 1 reads batch 1 (numpy reference).
  std::vector<double> input(18);
  for (int i = 0; i < 18; ++i) input[static_cast<size_t>(i)] = i;
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      x = f32[2,1,3,3] parameter(0)
      k = f32[2,1,2,2] constant({ { { {1, 0}, {0, 1} } }, { { {0, 1}, {-1, 0} } } })
      ROOT c = f32[1,2,2,2] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01, batch_group_count=2
    })",
                     {f32({2, 1, 3, 3}, input)}),
            "f32[1,2,2,2] {{{{4, 6}, {10, 12}}, {{-2, -2}, {-2, -2}}}}");
}

TEST(ConvolutionEvalTest, DilationsPaddingAndReversal) {
  // Base [1,2,3,4] dilated by 2 and padded 1/2: [0,1,0,2,0,3,0,4,0,0]; kernel [1,10,100] dilated by 2.
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[1,1,4] constant({ { {1, 2, 3, 4} } })
      k = f32[1,1,3] constant({ { {1, 10, 100} } })
      a = f32[1,1,6] convolution(x, k), window={size=3 pad=1_2 lhs_dilate=2 rhs_dilate=2}, dim_labels=bf0_oi0->bf0
      b = f32[1,1,6] convolution(x, k), window={size=3 pad=1_2 lhs_dilate=2 rhs_dilate=2 rhs_reversal=1}, dim_labels=bf0_oi0->bf0
      ROOT t = (f32[1,1,6], f32[1,1,6]) tuple(a, b)
    })");
  EXPECT_EQ(element(v, 0), "f32[1,1,6] {{{0, 321, 0, 432, 0, 43}}}");
  EXPECT_EQ(element(v, 1), "f32[1,1,6] {{{0, 123, 0, 234, 0, 340}}}");
}

TEST(ConvolutionEvalTest, InvalidDimLabelsIsAnError) {
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      x = f32[1,1,4] parameter(0)
      k = f32[1,1,3] parameter(1)
      ROOT c = f32[1,1,2] convolution(x, k), window={size=3}, dim_labels=bx0_oi0->bf0
    })",
                     {f32({1, 1, 4}, {1, 2, 3, 4}), f32({1, 1, 3}, {1, 1, 1})}),
            "ERROR: c: invalid dim_labels group 'bx0'");
}

TEST(BatchNormEvalTest, TrainingInferenceAndGrad) {
  // numpy reference over x = arange(1, 9).reshape(2,2,2), feature_index=1, epsilon=0.001 (grad_operand also
  // checked against a central-difference gradient).
  std::string hlo = R"(
    ENTRY e {
      x = f32[2,2,2] constant({ { {1, 2}, {3, 4} }, { {5, 6}, {7, 8} } })
      scale = f32[2] constant({1, 2})
      offset = f32[2] constant({0, 1})
      train = (f32[2,2,2], f32[2], f32[2]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
      mean = f32[2] constant({2, 5})
      var = f32[2] constant({4, 1})
      infer = f32[2,2,2] batch-norm-inference(x, scale, offset, mean, var), epsilon=0.001, feature_index=1
      bmean = f32[2] get-tuple-element(train), index=1
      bvar = f32[2] get-tuple-element(train), index=2
      dy = f32[2,2,2] constant({ { {1, -1}, {0.5, 2} }, { {0, 1}, {-2, 1} } })
      grad = (f32[2,2,2], f32[2], f32[2]) batch-norm-grad(x, scale, bmean, bvar, dy), epsilon=0.001, feature_index=1
      ROOT t = ((f32[2,2,2], f32[2], f32[2]), f32[2,2,2], (f32[2,2,2], f32[2], f32[2])) tuple(train, infer, grad)
    })";
  Value v = evalValue(hlo);
  ASSERT_TRUE(v.isTuple());
  const Value& train = v.tupleElement(0);
  EXPECT_EQ(
      compareValues(f32({2, 2, 2}, {-1.2125355005264282, -0.7275213003158569, -1.4250710010528564, -0.4550425708293915,
                                    0.7275213003158569, 1.2125355005264282, 2.455042600631714, 3.4250710010528564}),
                    train.tupleElement(0)),
      "");
  EXPECT_EQ(train.tupleElement(1).toString(0), "f32[2] {3.5, 5.5}");
  EXPECT_EQ(train.tupleElement(2).toString(0), "f32[2] {4.25, 4.25}");
  EXPECT_EQ(compareValues(f32({2, 2, 2}, {-0.499937504529953, 0.0, -2.9980015754699707, -0.9990007281303406,
                                          1.4998124837875366, 1.999750018119812, 4.998001575469971, 6.997002124786377}),
                          v.tupleElement(1)),
            "");
  const Value& grad = v.tupleElement(2);
  EXPECT_EQ(
      compareValues(f32({2, 2, 2}, {0.4707238972187042, -0.5420897603034973, -0.5561804175376892, 1.1698358058929443,
                                    -0.18543149530887604, 0.2567973732948303, -1.8973569869995117, 1.2837016582489014}),
                    grad.tupleElement(0)),
      "");
  EXPECT_EQ(compareValues(f32({2}, {0.7275213003158569, -2.3038175106048584}), grad.tupleElement(1)), "");
  EXPECT_EQ(grad.tupleElement(2).toString(0), "f32[2] {1, 1.5}");
}

TEST(ControlFlowEvalTest, WhileLoopSumsOneToTen) {
  EXPECT_EQ(evalText(R"(
    cond {
      s = (s32[], f32[]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      ten = s32[] constant(10)
      ROOT lt = pred[] compare(i, ten), direction=LT
    }
    body {
      s = (s32[], f32[]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      acc = f32[] get-tuple-element(s), index=1
      one = s32[] constant(1)
      next = s32[] add(i, one)
      f = f32[] convert(next)
      sum = f32[] add(acc, f)
      ROOT t = (s32[], f32[]) tuple(next, sum)
    }
    ENTRY e {
      zero = s32[] constant(0)
      fzero = f32[] constant(0)
      init = (s32[], f32[]) tuple(zero, fzero)
      ROOT w = (s32[], f32[]) while(init), condition=cond, body=body
    })"),
            "(s32[] 10, f32[] 55)");
}

TEST(ControlFlowEvalTest, WhileIterationLimit) {
  EXPECT_EQ(evalText(R"(
    cond {
      s = s32[] parameter(0)
      ROOT t = pred[] constant(true)
    }
    body {
      s = s32[] parameter(0)
      one = s32[] constant(1)
      ROOT n = s32[] add(s, one)
    }
    ENTRY e {
      zero = s32[] constant(0)
      ROOT w = s32[] while(zero), condition=cond, body=body
    })",
                     {}, EvalOptions{.maxWhileIterations = 50}),
            "ERROR: w: while loop exceeded 50 iterations (EvalOptions::maxWhileIterations)");
}

// Under the trip limit, but each trip a 64x64x64 dot: the work budget stops it with the figure, as bad input.
TEST(ControlFlowEvalTest, WorkBudgetStopsALoopOfHeavyTrips) {
  const std::string hlo = R"(
    cond {
      s = (s32[], f32[64,64]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      n = s32[] constant(1000)
      ROOT lt = pred[] compare(i, n), direction=LT
    }
    body {
      s = (s32[], f32[64,64]) parameter(0)
      i = s32[] get-tuple-element(s), index=0
      x = f32[64,64] get-tuple-element(s), index=1
      one = s32[] constant(1)
      j = s32[] add(i, one)
      d = f32[64,64] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
      ROOT t = (s32[], f32[64,64]) tuple(j, d)
    }
    ENTRY e {
      zero = s32[] constant(0)
      half = f32[] constant(0.5)
      x = f32[64,64] broadcast(half), dimensions={}
      init = (s32[], f32[64,64]) tuple(zero, x)
      ROOT w = (s32[], f32[64,64]) while(init), condition=cond, body=body
    })";
  const std::string text = evalText(hlo, {}, EvalOptions{.maxWork = 1e6});
  EXPECT_NE(text.find("operations, over its budget of 1.0e+06"), std::string::npos) << text;
  auto module = core::parseHloModule(hlo);
  ASSERT_TRUE(module.ok());
  StatusOr<EvalResult> result = evaluateModule(**module, {}, EvalOptions{.maxWork = 1e6});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().kind(), ErrorKind::kBadInput);
  // Within budget it runs to the end.
  EXPECT_EQ(evalText(hlo, {}, EvalOptions{.maxWork = 1e10}).find("ERROR"), std::string::npos);
}

TEST(ControlFlowEvalTest, ConditionalOnPredAndIndex) {
  std::string hlo = R"(
    neg {
      x = f32[] parameter(0)
      ROOT n = f32[] negate(x)
    }
    twice {
      x = f32[] parameter(0)
      ROOT d = f32[] add(x, x)
    }
    same {
      x = f32[] parameter(0)
      ROOT c = f32[] copy(x)
    }
    ENTRY e {
      p = pred[] parameter(0)
      i = s32[] parameter(1)
      x = f32[] constant(3)
      a = f32[] conditional(p, x, x), true_computation=neg, false_computation=twice
      b = f32[] conditional(i, x, x, x), branch_computations={neg, twice, same}
      ROOT t = (f32[], f32[]) tuple(a, b)
    })";
  auto pred = [](bool b) { return Value::integers(Shape(PrimitiveType::kPred, {}), {b ? 1 : 0}); };
  EXPECT_EQ(evalText(hlo, {pred(true), s32({}, {1})}), "(f32[] -3, f32[] 6)");
  EXPECT_EQ(evalText(hlo, {pred(false), s32({}, {0})}), "(f32[] 6, f32[] -3)");
  // An index out of range runs the last branch.
  EXPECT_EQ(evalText(hlo, {pred(false), s32({}, {7})}), "(f32[] 6, f32[] 3)");
  EXPECT_EQ(evalText(hlo, {pred(false), s32({}, {-1})}), "(f32[] 6, f32[] 3)");
}

constexpr std::string_view kFusionModule = R"(
    fused {
      p0 = f32[2] parameter(0)
      p1 = f32[2] parameter(1)
      mul.1 = f32[2] multiply(p0, p1)
      ROOT add.1 = f32[2] add(mul.1, p0)
    }
    helper {
      h = f32[2] parameter(0)
      ROOT h2 = f32[2] add(h, h)
    }
    ENTRY e {
      x = f32[2] parameter(0)
      y = f32[2] parameter(1)
      fusion.1 = f32[2] fusion(x, y), kind=kLoop, calls=fused
      c = f32[2] call(fusion.1), to_apply=helper
      ROOT neg = f32[2] negate(c)
    })";

TEST(ControlFlowEvalTest, FusionAndCallWithRecordedValues) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(kFusionModule);
  ASSERT_TRUE(module.ok()) << module.message();
  EvalOptions options;
  options.recordValues = true;
  StatusOr<EvalResult> result = evaluateModule(**module, {f32({2}, {1, 2}), f32({2}, {3, 4})}, options);
  ASSERT_TRUE(result.ok()) << result.message();
  EXPECT_EQ(result->result.toString(0), "f32[2] {-8, -20}");
  const auto& values = result->values;
  ASSERT_EQ(values.count("mul.1"), 1u);
  EXPECT_EQ(values.at("mul.1").toString(0), "f32[2] {3, 8}");
  EXPECT_EQ(values.at("add.1").toString(0), "f32[2] {4, 10}");
  EXPECT_EQ(values.at("fusion.1").toString(0), "f32[2] {4, 10}");
  EXPECT_EQ(values.at("c").toString(0), "f32[2] {8, 20}");
  EXPECT_EQ(values.at("x").toString(0), "f32[2] {1, 2}");
  // Computations called by `call` are not fusions: their instructions are not recorded.
  EXPECT_EQ(values.count("h2"), 0u);
  EXPECT_EQ(values.size(), 9u);
}

TEST(ControlFlowEvalTest, ValuesAreNotRecordedByDefault) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(kFusionModule);
  ASSERT_TRUE(module.ok()) << module.message();
  StatusOr<EvalResult> result = evaluateModule(**module, {f32({2}, {1, 2}), f32({2}, {3, 4})});
  ASSERT_TRUE(result.ok()) << result.message();
  EXPECT_TRUE(result->values.empty());
}

TEST(ModuleEvalTest, ArgumentCountAndShapeAreChecked) {
  std::string hlo = "ENTRY e {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}";
  EXPECT_EQ(evalText(hlo, {}), "ERROR: entry computation e takes 1 argument(s), got 0");
  EXPECT_EQ(evalText(hlo, {f32({3}, {1, 2, 3})}), "ERROR: x: argument 0 is f32[3], the parameter is f32[2]");
  EXPECT_EQ(evalText(hlo, {s32({2}, {1, 2})}), "ERROR: x: argument 0 is s32[2], the parameter is f32[2]");
}

TEST(ModuleEvalTest, UnsupportedOpcodesAreNamedWithCounts) {
  std::string hlo = R"(
    ENTRY e {
      a = f32[4,4] parameter(0)
      g = f32[4,4] cholesky(a), lower=true
      h = f32[4,4] cholesky(a), lower=false
      x = f32[4] parameter(1)
      c = f32[4] custom-call(x), custom_call_target="AwsNeuronGelu"
      ROOT t = (f32[4,4], f32[4,4], f32[4]) tuple(g, h, c)
    })";
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(hlo);
  ASSERT_TRUE(module.ok()) << module.message();
  Status status = checkEvaluable(**module);
  EXPECT_EQ(status.message(), "cannot evaluate: unsupported opcode(s) cholesky (2), custom-call AwsNeuronGelu (1)");
  StatusOr<EvalResult> result = evaluateModule(**module, randomArguments(**module, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.message(), status.message());
}

// JAX writes sharding annotations as custom-calls until XLA's sharding passes remove them (jax.random's helpers in
// every before_optimizations dump): on one device they pass their operand through.
TEST(ModuleEvalTest, ShardingAnnotationsAreTheIdentity) {
  std::string hlo = R"(ENTRY e {
  x = f32[2] parameter(0)
  s = f32[2] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  f = f32[2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT n = f32[2] negate(f)
})";
  EXPECT_EQ(evalText(hlo, {f32({2}, {1, 2})}), "f32[2] {-1, -2}");
  // Any other target, or one that changes the shape, is still refused by name.
  std::string reshaping = R"(ENTRY e {
  x = f32[2] parameter(0)
  ROOT s = f32[1,2] custom-call(x), custom_call_target="Sharding"
})";
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(reshaping);
  ASSERT_TRUE(module.ok()) << module.message();
  EXPECT_EQ(checkEvaluable(**module).message(), "cannot evaluate: unsupported opcode(s) custom-call Sharding (1)");
}

TEST(ModuleEvalTest, UnsupportedElementTypesAndElidedConstants) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"(
    ENTRY e {
      x = f4e2m1fn[2] parameter(0)
      k = f32[3] constant({...})
      ROOT t = (f4e2m1fn[2], f32[3]) tuple(x, k)
    })");
  ASSERT_TRUE(module.ok()) << module.message();
  EXPECT_EQ(checkEvaluable(**module).message(),
            "cannot evaluate: unsupported element type(s) f4e2m1fn (2); elided constant(s) (1)");
}

TEST(ModuleEvalTest, SupportedModuleIsEvaluable) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(kFusionModule);
  ASSERT_TRUE(module.ok()) << module.message();
  EXPECT_TRUE(checkEvaluable(**module).ok());
}

TEST(ModuleEvalTest, EstimateCountsOutputsTimesContraction) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(withReducers(R"(
    ENTRY e {
      a = f32[2,3] parameter(0)
      b = f32[3,4] parameter(1)
      d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
      zero = f32[] constant(0)
      ROOT r = f32[2] reduce(d, zero), dimensions={1}, to_apply=add
    })"));
  ASSERT_TRUE(module.ok()) << module.message();
  // parameters 6 + 12, dot 8 outputs x 3, constant 1, reduce 8 inputs x 3 instructions in `add`.
  EXPECT_EQ(estimateEvaluationWork(**module), 6 + 12 + 24 + 1 + 24);
}

TEST(ModuleEvalTest, EstimateMultipliesWhileBodiesByTripCount) {
  std::string hlo = R"(
    cond {
      s = s32[] parameter(0)
      ROOT t = pred[] constant(false)
    }
    body {
      s = s32[] parameter(0)
      ROOT n = s32[] add(s, s)
    }
    ENTRY e {
      zero = s32[] constant(0)
      ROOT w = s32[] while(zero), condition=cond, body=body, backend_config={"known_trip_count":{"n":"7"}}
    })";
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(hlo);
  ASSERT_TRUE(module.ok()) << module.message();
  // constant 1 + 7 x (cond 2 + body 2).
  EXPECT_EQ(estimateEvaluationWork(**module), 1 + 7 * 4);
}

// XLA's counted loops: a counter that starts at a constant, moves by a constant and is compared with a constant.
// The estimate multiplies by their trip count, so a loop nest of 10^14 operations is refused before it starts.
TEST(ModuleEvalTest, TripCountsOfCountedLoops) {
  auto loopModule = [](const std::string& start, const std::string& update, const std::string& compare) {
    return fmt::format(R"(HloModule counted
cond {{
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT c = pred[] {}
}}
body {{
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  step = s32[] constant(3)
  j = s32[] {}
  ROOT r = (s32[], f32[4]) tuple(j, x)
}}
ENTRY e {{
  p = f32[4] parameter(0)
  start = s32[] constant({})
  s = (s32[], f32[4]) tuple(start, p)
  ROOT w = (s32[], f32[4]) while(s), condition=cond, body=body
}})",
                       compare, update, start);
  };
  struct Case {
    std::string start, update, compare;
    std::optional<int64_t> trips;
  };
  const Case cases[] = {
      {"0", "add(i, step)", "compare(i, n), direction=LT", 4},                  // 0 3 6 9
      {"0", "add(step, i)", "compare(i, n), direction=LE", 4},                  // 0 3 6 9
      {"1", "add(i, step)", "compare(n, i), direction=GT", 3},                  // 1 4 7: n > i is i < n
      {"10", "add(i, step)", "compare(i, n), direction=LT", 0},                 // never enters
      {"22", "subtract(i, step)", "compare(i, n), direction=GT", 4},            // 22 19 16 13
      {"22", "subtract(i, step)", "compare(i, n), direction=GE", 5},            // 22 19 16 13 10
      {"1", "add(i, step)", "compare(i, n), direction=NE", 3},                  // 1 4 7, then 10
      {"0", "add(i, step)", "compare(i, n), direction=NE", std::nullopt},       // steps over 10: ends only by wrapping
      {"0", "subtract(i, step)", "compare(i, n), direction=LT", std::nullopt},  // moves away from its bound
      {"0", "multiply(i, step)", "compare(i, n), direction=LT", std::nullopt},  // not a counted loop
      {"0", "add(i, i)", "compare(i, n), direction=LT", std::nullopt},
  };
  for (const Case& c : cases) {
    StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(loopModule(c.start, c.update, c.compare));
    ASSERT_TRUE(module.ok()) << module.message();
    EXPECT_EQ(whileTripCount(*(*module)->entry()->root()), c.trips) << c.start << " " << c.update << " " << c.compare;
  }
  // A loop whose state is the counter alone (1e5 trips), in a loop that adds the inner loop's result to its own.
  StatusOr<std::unique_ptr<HloModule>> nested = parseHloModule(R"(HloModule nested
ibody {
  p = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT a = s32[] add(p, one)
}
icond {
  p = s32[] parameter(0)
  n = s32[] constant(100000)
  ROOT lt = pred[] compare(p, n), direction=LT
}
obody {
  p = s32[] parameter(0)
  z = s32[] constant(0)
  inner = s32[] while(z), body=ibody, condition=icond
  ROOT a = s32[] add(p, inner)
}
ocond {
  p = s32[] parameter(0)
  n = s32[] constant(2000000000)
  ROOT lt = pred[] compare(p, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  ROOT outer = s32[] while(z), body=obody, condition=ocond
})");
  ASSERT_TRUE(nested.ok()) << nested.message();
  const HloInstruction* outer = (*nested)->entry()->root();
  EXPECT_EQ(whileTripCount(*outer->calledComputation("body")->root()->operand(1)), 100000);
  EXPECT_EQ(whileTripCount(*outer), std::nullopt);  // its step is the inner loop's result, not a constant
  // The unknown outer loop counts 10 trips: 10 x 1e5 inner trips x (condition 3 + body 3 instructions) and so on.
  EXPECT_GT(static_cast<double>(estimateEvaluationWork(**nested)), 6e6);
}

TEST(ModuleEvalTest, MalformedInstructionsFailWithTheirName) {
  // Modules the parser accepts but the verifier would reject: each must come back as an error naming the
  // instruction, never a crash or an out-of-bounds read.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"d = f32[2,2] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}", "d: "},
      {"d = f32[2,3] dot(a, a), lhs_contracting_dims={5}, rhs_contracting_dims={0}", "d: "},
      {"d = f32[9] reduce(a, z), dimensions={1}, to_apply=add", "d: "},
      {"d = f32[2] reduce(a, z), dimensions={7}, to_apply=add", "d: "},
      {"d = f32[3,2] transpose(a), dimensions={0,0}", "d: "},
      {"d = f32[2,5] broadcast(z), dimensions={0}", "d: "},
      {"d = f32[2,2] slice(a), slice={[0:2], [2:9]}", "d: "},
      {"d = f32[4,3] concatenate(a, a), dimensions={3}", "d: "},
      {"d = f32[9,9] pad(a, z), padding=1_1x1_1", "d: "},
      {"d = f32[2,3] reduce-window(a, z), window={size=2x2}, to_apply=add", "d: "},
      {"d = f32[2,3] convolution(a, a), window={size=2x3}, dim_labels=bf_oi->bf", "d: "},
      {"d = f32[2,3] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={4}, "
       "index_vector_dim=1, slice_sizes={1,3}",
       "d: "},
      {"d = f32[2,3] scatter(a, i, a), to_apply=add, update_window_dims={0,1}, inserted_window_dims={0}, "
       "scatter_dims_to_operand_dims={0}, index_vector_dim=1",
       "d: "},
      {"d = f32[2,3] sort(a), dimensions={0}, to_apply=add", "d: "},
      {"d = f32[2,3] get-tuple-element(a), index=0", "d: "},
      {"d = f32[2,3] dynamic-slice(a, z), dynamic_slice_sizes={2,3}", "d: "},
      {"d = s32[2,3] convert(z)", "d: "},
      {"d = f32[2,3] batch-norm-inference(a, z, z, z, z), epsilon=0.1, feature_index=9", "d: "},
      {"d = f32[2,3] iota(), iota_dimension=4", "d: "},
      {"d = f32[2,3] reduce-precision(a), exponent_bits=0, mantissa_bits=2", "d: "},
  };
  for (const auto& [line, prefix] : cases) {
    std::string hlo = withReducers(R"(
    ENTRY e {
      a = f32[2,3] parameter(0)
      i = s32[2] parameter(1)
      z = f32[] constant(0)
      )" + line + R"(
      ROOT r = (f32[2,3]) tuple(a)
    })");
    std::string text = evalText(hlo, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), s32({2}, {0, 1})});
    EXPECT_EQ(text.rfind("ERROR: " + prefix, 0), 0u) << line << "\n-> " << text;
  }
}

}  // namespace
}  // namespace fusionscope::core
