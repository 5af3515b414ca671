// Data movement in the evaluator: broadcast, reshape/bitcast, transpose, reverse, slices, concatenate, pad,
// iota, gather and scatter. Expected arrays are worked by hand (pad and gather checked with numpy).

#include <gtest/gtest.h>

#include "tests/core/eval/eval_testing.h"

namespace fusionscope::core {
namespace {

using testing::element;
using testing::evalText;
using testing::evalValue;
using testing::f32;
using testing::s32;
using testing::typed;

TEST(DataMovementEvalTest, BroadcastReshapeTranspose) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[3] constant({1, 2, 3})
      rows = f32[2,3] broadcast(x), dimensions={1}
      cols = f32[3,2] broadcast(x), dimensions={0}
      s = f32[] constant(7)
      splat = f32[2,2] broadcast(s), dimensions={}
      m = f32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
      r = f32[3,2] reshape(m)
      t = f32[3,2] transpose(m), dimensions={1,0}
      b = f32[6] bitcast(m)
      ROOT out = (f32[2,3], f32[3,2], f32[2,2], f32[3,2], f32[3,2], f32[6]) tuple(rows, cols, splat, r, t, b)
    })");
  EXPECT_EQ(element(v, 0), "f32[2,3] {{1, 2, 3}, {1, 2, 3}}");
  EXPECT_EQ(element(v, 1), "f32[3,2] {{1, 1}, {2, 2}, {3, 3}}");
  EXPECT_EQ(element(v, 2), "f32[2,2] {{7, 7}, {7, 7}}");
  EXPECT_EQ(element(v, 3), "f32[3,2] {{1, 2}, {3, 4}, {5, 6}}");
  EXPECT_EQ(element(v, 4), "f32[3,2] {{1, 4}, {2, 5}, {3, 6}}");
  EXPECT_EQ(element(v, 5), "f32[6] {1, 2, 3, 4, 5, 6}");
}

TEST(DataMovementEvalTest, Transpose3D) {
  // out[i][j][k] = in[j][k][i] for dimensions={2,0,1}: in is 2x2x3 counting 0..11.
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      i = s32[2,2,3] iota(), iota_dimension=0
      j = s32[2,2,3] iota(), iota_dimension=1
      k = s32[2,2,3] iota(), iota_dimension=2
      c6 = s32[] constant(6)
      c3 = s32[] constant(3)
      six = s32[2,2,3] broadcast(c6), dimensions={}
      three = s32[2,2,3] broadcast(c3), dimensions={}
      a = s32[2,2,3] multiply(i, six)
      b = s32[2,2,3] multiply(j, three)
      ab = s32[2,2,3] add(a, b)
      x = s32[2,2,3] add(ab, k)
      ROOT t = s32[3,2,2] transpose(x), dimensions={2,0,1}
    })"),
            "s32[3,2,2] {{{0, 3}, {6, 9}}, {{1, 4}, {7, 10}}, {{2, 5}, {8, 11}}}");
}

TEST(DataMovementEvalTest, BitcastWithDifferentElementCountIsAnError) {
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      x = f32[2,3] parameter(0)
      ROOT b = f32[5] bitcast(x)
    })",
                     {f32({2, 3}, {1, 2, 3, 4, 5, 6})}),
            "ERROR: b: cannot bitcast f32[2,3] (6 elements) to f32[5] (5 elements)");
}

TEST(DataMovementEvalTest, BitcastFollowsLayoutsAndReinterpretsElementType) {
  // f32[2,3]{0,1} is stored column-major (1 4 2 5 3 6); read back as row-major f32[3,2] that is a transpose.
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[2,3]{0,1} constant({ {1, 2, 3}, {4, 5, 6} })
      t = f32[3,2]{1,0} bitcast(x)
      one = f32[2] constant({1, -2.5})
      bits = s32[2]{0} bitcast(one)
      ROOT r = (f32[3,2], s32[2]) tuple(t, bits)
    })");
  EXPECT_EQ(element(v, 0), "f32[3,2] {{1, 4}, {2, 5}, {3, 6}}");
  EXPECT_EQ(element(v, 1), "s32[2] {1065353216, -1071644672}");
}

TEST(DataMovementEvalTest, ReverseAndSlice) {
  Value v = evalValue(R"(
    ENTRY e {
      m = s32[2,4] constant({ {1, 2, 3, 4}, {5, 6, 7, 8} })
      r1 = s32[2,4] reverse(m), dimensions={1}
      r01 = s32[2,4] reverse(m), dimensions={0,1}
      s = s32[2,2] slice(m), slice={[0:2], [1:4:2]}
      s2 = s32[1,3] slice(m), slice={[1:2], [0:3]}
      ROOT t = (s32[2,4], s32[2,4], s32[2,2], s32[1,3]) tuple(r1, r01, s, s2)
    })");
  EXPECT_EQ(element(v, 0), "s32[2,4] {{4, 3, 2, 1}, {8, 7, 6, 5}}");
  EXPECT_EQ(element(v, 1), "s32[2,4] {{8, 7, 6, 5}, {4, 3, 2, 1}}");
  EXPECT_EQ(element(v, 2), "s32[2,2] {{2, 4}, {6, 8}}");
  EXPECT_EQ(element(v, 3), "s32[1,3] {{5, 6, 7}}");
}

TEST(DataMovementEvalTest, DynamicSliceClampsStartIndices) {
  Value v = evalValue(R"(
    ENTRY e {
      m = s32[3,4] iota(), iota_dimension=1
      i = s32[] parameter(0)
      j = s32[] parameter(1)
      ds = s32[2,2] dynamic-slice(m, i, j), dynamic_slice_sizes={2,2}
      c10 = s32[] constant(10)
      ten = s32[3,4] broadcast(c10), dimensions={}
      rows = s32[3,4] iota(), iota_dimension=0
      r10 = s32[3,4] multiply(rows, ten)
      n = s32[3,4] add(r10, m)
      ds2 = s32[2,2] dynamic-slice(n, i, j), dynamic_slice_sizes={2,2}
      ROOT t = (s32[2,2], s32[2,2]) tuple(ds, ds2)
    })",
                      {s32({}, {5}), s32({}, {-3})});
  // Starts (5, -3) clamp to (1, 0) so the 2x2 window stays inside the 3x4 operand.
  EXPECT_EQ(element(v, 0), "s32[2,2] {{0, 1}, {0, 1}}");
  EXPECT_EQ(element(v, 1), "s32[2,2] {{10, 11}, {20, 21}}");
}

TEST(DataMovementEvalTest, DynamicUpdateSliceClampsStartIndices) {
  Value v = evalValue(R"(
    ENTRY e {
      c0 = f32[] constant(0)
      z = f32[3,3] broadcast(c0), dimensions={}
      u = f32[2,2] constant({ {1, 2}, {3, 4} })
      i = s32[] parameter(0)
      j = s32[] parameter(1)
      ROOT d = f32[3,3] dynamic-update-slice(z, u, i, j)
    })",
                      {s32({}, {7}), s32({}, {0})});
  EXPECT_EQ(v.toString(0), "f32[3,3] {{0, 0, 0}, {1, 2, 0}, {3, 4, 0}}");
}

TEST(DataMovementEvalTest, Concatenate) {
  Value v = evalValue(R"(
    ENTRY e {
      a = s32[2,1] constant({ {1}, {2} })
      b = s32[2,2] constant({ {3, 4}, {5, 6} })
      c = s32[1,3] constant({ {7, 8, 9} })
      h = s32[2,3] concatenate(a, b), dimensions={1}
      vv = s32[3,3] concatenate(h, c), dimensions={0}
      ROOT t = (s32[2,3], s32[3,3]) tuple(h, vv)
    })");
  EXPECT_EQ(element(v, 0), "s32[2,3] {{1, 3, 4}, {2, 5, 6}}");
  EXPECT_EQ(element(v, 1), "s32[3,3] {{1, 3, 4}, {2, 5, 6}, {7, 8, 9}}");
}

TEST(DataMovementEvalTest, PadWithNegativeAndInteriorPadding) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
      zero = f32[] constant(0)
      p = f32[3,5] pad(x, zero), padding=1_0x-1_1_1
      nine = f32[] constant(9)
      y = f32[3] constant({1, 2, 3})
      q = f32[8] pad(y, nine), padding=2_-1_2
      ROOT t = (f32[3,5], f32[8]) tuple(p, q)
    })");
  EXPECT_EQ(element(v, 0), "f32[3,5] {{0, 0, 0, 0, 0}, {0, 2, 0, 3, 0}, {0, 5, 0, 6, 0}}");
  // 9 9 | 1 9 9 2 9 9 3 with the last element cut off by high padding -1.
  EXPECT_EQ(element(v, 1), "f32[8] {9, 9, 1, 9, 9, 2, 9, 9}");
}

TEST(DataMovementEvalTest, IotaInEveryType) {
  Value v = evalValue(R"(
    ENTRY e {
      a = s32[2,3] iota(), iota_dimension=0
      b = f32[2,3] iota(), iota_dimension=1
      c = u8[4] iota(), iota_dimension=0
      ROOT t = (s32[2,3], f32[2,3], u8[4]) tuple(a, b, c)
    })");
  EXPECT_EQ(element(v, 0), "s32[2,3] {{0, 0, 0}, {1, 1, 1}}");
  EXPECT_EQ(element(v, 1), "f32[2,3] {{0, 1, 2}, {0, 1, 2}}");
  EXPECT_EQ(element(v, 2), "u8[4] {0, 1, 2, 3}");
}

TEST(DataMovementEvalTest, GatherEmbeddingLookupAsInBert) {
  // The form of gather.223 in model_bert_torchxla_fwdbwd.hlo: rows of an embedding table by u32 ids. Index 9
  // is out of range and clamps to the last row.
  Value v = evalValue(
      R"(
    ENTRY e {
      table = f32[4,2] parameter(0)
      ids = u32[3] parameter(1)
      ROOT g = f32[3,2] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
    })",
      {f32({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31}), Value::integers(Shape(PrimitiveType::kU32, {3}), {2, 0, 9})});
  EXPECT_EQ(v.toString(0), "f32[3,2] {{20, 21}, {0, 1}, {30, 31}}");
}

TEST(DataMovementEvalTest, GatherTwoDimensionalWindows) {
  // XLA's operation-semantics example shape: 2x2 windows of a 3x3 operand at (0,1) and (2,0); (2,0) clamps to
  // (1,0). numpy: op[0:2,1:3] and op[1:3,0:2] of arange(9).reshape(3,3).
  Value v = evalValue(R"(
    ENTRY e {
      op = f32[3,3] parameter(0)
      idx = s32[2,2] constant({ {0, 1}, {2, 0} })
      ROOT g = f32[2,2,2] gather(op, idx), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}
    })",
                      {f32({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8})});
  EXPECT_EQ(v.toString(0), "f32[2,2,2] {{{1, 2}, {4, 5}}, {{3, 4}, {6, 7}}}");
}

TEST(DataMovementEvalTest, GatherWithBatchDimsBeforeOffset) {
  // Index vector in dimension 0 of the indices; the batch dimension of the result follows the offset one.
  Value v = evalValue(R"(
    ENTRY e {
      op = s32[3,4] iota(), iota_dimension=0
      idx = s32[1,2] constant({ {2, 0} })
      ROOT g = s32[4,2] gather(op, idx), offset_dims={0}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=0, slice_sizes={1,4}
    })");
  EXPECT_EQ(v.toString(0), "s32[4,2] {{2, 0}, {2, 0}, {2, 0}, {2, 0}}");
}

TEST(DataMovementEvalTest, ScatterAddFromCorpusCountsInBoundsIndices) {
  // xla_prio_DontFuseConstantIntoFirstOperandOfScatter: 24 updates of 1 added at each index; indices out of
  // bounds (here 3 and -1) are skipped, so the result counts the zeros among the indices.
  std::vector<int64_t> indices(24, 0);
  indices[3] = 3;
  indices[10] = -1;
  indices[17] = 1;
  Value v = evalValue(R"(
    HloModule test_module

    add {
      lhs = s32[] parameter(0)
      rhs = s32[] parameter(1)
      ROOT add = s32[] add(lhs, rhs)
    }

    ENTRY FuseIntoScatter {
      operand = s32[1] constant({0})
      indices = s32[24,1] parameter(0)
      constant = s32[] constant(1)
      updates = s32[24,1] broadcast(constant)
      ROOT scatter = s32[1] scatter(operand, indices, updates),
          to_apply=add,
          update_window_dims={1},
          inserted_window_dims={},
          scatter_dims_to_operand_dims={0},
          index_vector_dim=1
    })",
                      {s32({24, 1}, indices)});
  EXPECT_EQ(v.toString(0), "s32[1] {21}");
}

TEST(DataMovementEvalTest, ScatterRowsWithCombiner) {
  // Rows 0 and 2 of a 3x3 matrix receive updates; index 0 appears twice so its updates accumulate.
  Value v = evalValue(R"(
    add {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT s = f32[] add(a, b)
    }
    ENTRY e {
      one = f32[] constant(1)
      op = f32[3,3] broadcast(one), dimensions={}
      idx = s32[3] constant({0, 2, 0})
      upd = f32[3,3] constant({ {1, 2, 3}, {4, 5, 6}, {10, 20, 30} })
      ROOT s = f32[3,3] scatter(op, idx, upd), to_apply=add, update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1
    })");
  EXPECT_EQ(v.toString(0), "f32[3,3] {{12, 23, 34}, {1, 1, 1}, {5, 6, 7}}");
}

TEST(DataMovementEvalTest, ScatterOverwriteWithSecondParameter) {
  Value v = evalValue(R"(
    overwrite {
      a = s32[] parameter(0)
      ROOT b = s32[] parameter(1)
    }
    ENTRY e {
      op = s32[5] iota(), iota_dimension=0
      idx = s32[2,1] constant({ {4}, {1} })
      upd = s32[2] constant({40, 10})
      ROOT s = s32[5] scatter(op, idx, upd), to_apply=overwrite, update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1
    })");
  EXPECT_EQ(v.toString(0), "s32[5] {0, 10, 2, 3, 40}");
}

TEST(DataMovementEvalTest, MalformedGatherAttributeIsAClearError) {
  std::string text = evalText(R"(
    ENTRY e {
      op = f32[3,3] parameter(0)
      idx = s32[2] constant({0, 1})
      ROOT g = f32[2,3] gather(op, idx), offset_dims={1, x}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
    })",
                              {f32({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8})});
  EXPECT_EQ(text.rfind("ERROR: g: invalid offset_dims={1, x}", 0), 0u) << text;
}

TEST(DataMovementEvalTest, TupleAndGetTupleElement) {
  Value v = evalValue(R"(
    ENTRY e {
      a = f32[] constant(1.5)
      b = s32[2] constant({3, 4})
      t = (f32[], s32[2]) tuple(a, b)
      nested = ((f32[], s32[2]), f32[]) tuple(t, a)
      inner = (f32[], s32[2]) get-tuple-element(nested), index=0
      x = s32[2] get-tuple-element(inner), index=1
      bar = s32[2] opt-barrier(x)
      ROOT r = (s32[2], (f32[], s32[2])) tuple(bar, inner)
    })");
  EXPECT_EQ(v.toString(0), "(s32[2] {3, 4}, (f32[] 1.5, s32[2] {3, 4}))");
}

}  // namespace
}  // namespace fusionscope::core
