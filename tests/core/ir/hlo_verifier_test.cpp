// The verifier on text that parses: every broken module must be rejected with a message naming the
// computation and the instruction, and every real module we ship or test against must pass.
#include "core/ir/hlo_verifier.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "tests/common/source_paths.h"

namespace fusionscope::core {
namespace {

// Parses (which must work) and returns the verifier's problems.
std::vector<std::string> problems(std::string_view text) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text, "test.hlo");
  if (!module.ok()) return {"<parse error> " + module.message()};
  return verifyModuleProblems(**module);
}

using Problems = std::vector<std::string>;

constexpr std::string_view kAdd = R"hlo(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)hlo";

TEST(HloVerifier, AcceptsAWellFormedModule) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(
ENTRY e {
  p = f32[2,3] parameter(0)
  q = f32[3,4] parameter(1)
  d = f32[2,4] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  r = f32[2] reduce(d, z), dimensions={1}, to_apply=add
  b = f32[2,4] broadcast(r), dimensions={0}
  t = f32[4,2] transpose(b), dimensions={1,0}
  ROOT out = (f32[4,2], f32[2]) tuple(t, r)
}
)hlo"),
            Problems{});
}

TEST(HloVerifier, CycleThroughForwardReferences) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  a = f32[2] add(p, b)
  b = f32[2] negate(a)
  ROOT r = f32[2] negate(b)
}
)hlo"),
            Problems{"computation e, %a: cycle: %a depends on %b, which depends on %a"});
}

TEST(HloVerifier, CycleThroughControlPredecessor) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p), control-predecessors={n}
}
)hlo"),
            Problems{"computation e, %n: cycle: %n depends on %n"});
}

TEST(HloVerifier, ElementwiseShapeMismatch) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  q = f32[3] parameter(1)
  ROOT r = f32[2] add(p, q)
}
)hlo"),
            Problems{"computation e, %r: operand 1 has shape f32[3] but the result is f32[2]"});
}

TEST(HloVerifier, ElementwiseElementTypeMismatch) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  q = s32[2] parameter(1)
  ROOT r = f32[2] multiply(p, q)
}
)hlo"),
            Problems{"computation e, %r: operand 1 has element type s32 but the result is f32"});
}

TEST(HloVerifier, ElementwiseOperandCount) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] add(p)
}
)hlo"),
            Problems{"computation e, %r: add takes 2 operand(s), has 1"});
}

TEST(HloVerifier, BroadcastDimensionsWrongSize) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[3] parameter(0)
  ROOT r = f32[2,3] broadcast(p), dimensions={0}
}
)hlo"),
            Problems{"computation e, %r: broadcast maps operand dimension 0 (size 3) to result dimension 0 (size 2)"});
}

TEST(HloVerifier, BroadcastDimensionsWrongCount) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[3] parameter(0)
  ROOT r = f32[2,3] broadcast(p), dimensions={0,1}
}
)hlo"),
            Problems{"computation e, %r: broadcast dimensions={0,1} has 2 entries for an operand of rank 1"});
}

TEST(HloVerifier, BroadcastDimensionOutOfRange) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[3] parameter(0)
  ROOT r = f32[2,3] broadcast(p), dimensions={2}
}
)hlo"),
            Problems{"computation e, %r: broadcast dimension 2 is out of range for result f32[2,3]"});
}

TEST(HloVerifier, ReshapeElementCount) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2,3] parameter(0)
  ROOT r = f32[5] reshape(p)
}
)hlo"),
            Problems{"computation e, %r: reshape changes the element count: f32[2,3] (6) to f32[5] (5)"});
}

TEST(HloVerifier, TransposeNotAPermutation) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2,3] parameter(0)
  ROOT r = f32[3,2] transpose(p), dimensions={0,0}
}
)hlo"),
            Problems{"computation e, %r: transpose dimensions must be a permutation of 0..1"});
}

TEST(HloVerifier, TransposeResultShape) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[2,3] parameter(0)
  ROOT r = f32[2,3] transpose(p), dimensions={1,0}
}
)hlo"),
            Problems{"computation e, %r: transpose of f32[2,3] with dimensions={1,0} gives f32[3,2], not f32[2,3]"});
}

TEST(HloVerifier, ReduceResultShape) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(
ENTRY e {
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[3] reduce(p, z), dimensions={1}, to_apply=add
}
)hlo"),
            Problems{"computation e, %r: reduce of f32[2,3] over dimensions={1} gives f32[2], not f32[3]"});
}

TEST(HloVerifier, ReduceToApplyParameterCount) {
  EXPECT_EQ(problems(R"hlo(neg {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}

ENTRY e {
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2] reduce(p, z), dimensions={1}, to_apply=neg
}
)hlo"),
            Problems{"computation e, %r: to_apply computation neg takes 1 parameter(s), expected 2"});
}

TEST(HloVerifier, ReduceInitValueNotScalar) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(
ENTRY e {
  p = f32[2,3] parameter(0)
  z = f32[2] parameter(1)
  ROOT r = f32[2] reduce(p, z), dimensions={1}, to_apply=add
}
)hlo"),
            Problems{"computation e, %r: reduce init value 1 must be a scalar"});
}

TEST(HloVerifier, DotContractingSizeMismatch) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[4,5] parameter(1)
  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)hlo"),
            Problems{"computation e, %d: dot contracts lhs size 3 with rhs size 4"});
}

TEST(HloVerifier, DotResultShape) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,5] parameter(1)
  ROOT d = f32[2,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)hlo"),
            Problems{"computation e, %d: dot of f32[2,3] and f32[3,5] gives f32[2,5], not f32[2,6]"});
}

TEST(HloVerifier, DotUnequalContractingDimensionCounts) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,5] parameter(1)
  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1}
}
)hlo"),
            Problems{"computation e, %d: dot has unequal numbers of lhs and rhs batch or contracting dimensions"});
}

TEST(HloVerifier, SliceOutOfBounds) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[4] parameter(0)
  ROOT s = f32[3] slice(p), slice={[2:5]}
}
)hlo"),
            Problems{"computation e, %s: slice [2:5:1] is out of bounds for dimension 0 of size 4"});
}

TEST(HloVerifier, SliceResultShape) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  p = f32[8] parameter(0)
  ROOT s = f32[4] slice(p), slice={[0:8:3]}
}
)hlo"),
            Problems{"computation e, %s: slice of f32[8] gives f32[3], not f32[4]"});
}

TEST(HloVerifier, ConcatenateResultShape) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[2,4] parameter(1)
  ROOT c = f32[2,8] concatenate(a, b), dimensions={1}
}
)hlo"),
            Problems{"computation e, %c: concatenate gives f32[2,7], not f32[2,8]"});
}

TEST(HloVerifier, ConcatenateOperandsDifferOutsideTheDimension) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,4] parameter(1)
  ROOT c = f32[2,7] concatenate(a, b), dimensions={1}
}
)hlo"),
            Problems{"computation e, %c: concatenate operand 1 is f32[3,4], which differs from f32[2,3] outside "
                     "dimension 1"});
}

TEST(HloVerifier, TupleShapeSize) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  ROOT t = (f32[2], f32[2]) tuple(a)
}
)hlo"),
            Problems{"computation e, %t: tuple of 1 operand(s) must have a tuple shape of that size, is (f32[2], "
                     "f32[2])"});
}

TEST(HloVerifier, GetTupleElementIndexOutOfRange) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  t = (f32[2], f32[2]) tuple(a, a)
  ROOT g = f32[2] get-tuple-element(t), index=2
}
)hlo"),
            Problems{"computation e, %g: get-tuple-element index 2 is out of range for a 2-tuple"});
}

TEST(HloVerifier, GetTupleElementShape) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  b = s32[] parameter(1)
  t = (f32[2], s32[]) tuple(a, b)
  ROOT g = f32[2] get-tuple-element(t), index=1
}
)hlo"),
            Problems{"computation e, %g: get-tuple-element 1 of (f32[2], s32[]) is s32[], not f32[2]"});
}

TEST(HloVerifier, CompareMustProducePred) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  ROOT c = f32[2] compare(a, a), direction=LT
}
)hlo"),
            Problems{"computation e, %c: compare must produce pred"});
}

TEST(HloVerifier, CompareNeedsDirection) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  ROOT c = pred[2] compare(a, a)
}
)hlo"),
            Problems{"computation e, %c: compare needs direction="});
}

TEST(HloVerifier, SelectPredicateType) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  ROOT s = f32[2] select(a, a, a)
}
)hlo"),
            Problems{"computation e, %s: select predicate must be pred, is f32[2]"});
}

// ---- Rules that keep the evaluator and codegen inside their buffers --------------------------------------

TEST(HloVerifier, CopyAndReverseKeepTheOperandShape) {
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[1] parameter(0)\n  ROOT c = f32[100] copy(p)\n}\n"),
            Problems{"computation e, %c: copy must produce f32[1] (the shape of its operand), not f32[100]"});
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = s32[4] reverse(p), dimensions={0}\n}\n"),
            Problems{"computation e, %r: reverse must produce f32[4] (the shape of its operand), not s32[4]"});
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] reverse(p), dimensions={1}\n}\n"),
            Problems{"computation e, %r: reverse dimension 1 is out of range for rank 1"});
}

TEST(HloVerifier, BitcastKeepsTheByteSize) {
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4,2] parameter(0)\n  ROOT b = s32[8] bitcast(p)\n}\n"), Problems{});
  EXPECT_EQ(
      problems("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT b = f32[4000000] bitcast(p)\n}\n"),
      Problems{"computation e, %b: bitcast of f32[4] (16 bytes) to f32[4000000] (16000000 bytes) changes the size"});
}

TEST(HloVerifier, GatherResultShape) {
  const std::string take = "ENTRY e {\n  p = f32[10,4] parameter(0)\n  i = s32[3,1] parameter(1)\n  ROOT g = ";
  const std::string dims =
      " gather(p, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=1, slice_sizes={1,4}\n}\n";
  EXPECT_EQ(problems(take + "f32[3,4]" + dims), Problems{});
  EXPECT_EQ(problems(take + "f32[3,40]" + dims),
            Problems{"computation e, %g: gather of f32[10,4] gives f32[3,4], not f32[3,40]"});
}

TEST(HloVerifier, ConvolutionResultShape) {
  const std::string conv = "ENTRY e {\n  x = f32[1,8,8,3] parameter(0)\n  k = f32[3,3,3,16] parameter(1)\n  ROOT c = ";
  const std::string attrs = " convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n";
  EXPECT_EQ(problems(conv + "f32[1,8,8,16]" + attrs), Problems{});
  EXPECT_EQ(problems(conv + "f32[1,80,8,16]" + attrs),
            Problems{"computation e, %c: spatial dimension 0 of the result should be 8"});
}

TEST(HloVerifier, ReduceResultTypeIsTheInitValues) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[16,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = pred[16] reduce(p, z), dimensions={1}, to_apply=add
}
)hlo"),
            Problems{"computation e, %r: reduce result pred[16] has another element type than its init value f32[]"});
}

TEST(HloVerifier, ScatterProducesItsOperandsShape) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[8] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2] parameter(2)
  ROOT s = f32[9] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)hlo"),
            Problems{"computation e, %s: scatter must produce f32[8] (the shape of its operands), not f32[9]"});
}

// The updates' scatter dimensions must be the indices' batch dimensions: 25 updates for 2 indices passed, and the
// JIT then read past the indices buffer (a SIGSEGV with 1e6 updates).
TEST(HloVerifier, ScatterUpdatesMustMatchTheIndicesBatch) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[8] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[25] parameter(2)
  ROOT s = f32[8] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)hlo"),
            Problems{"computation e, %s: the updates f32[25] have scatter dimensions {25} but the indices s32[2,1] "
                     "have batch dimensions {2} (all but index_vector_dim 1)"});
  // A window larger than the operand dimension it covers, and dimension numbers that do not count the operand's.
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[4,3] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2,5] parameter(2)
  ROOT s = f32[4,3] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)hlo"),
            Problems{"computation e, %s: update window of 5 elements is larger than dimension 1 of the operand "
                     "f32[4,3]"});
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[4,3] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2] parameter(2)
  ROOT s = f32[4,3] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)hlo"),
            Problems{"computation e, %s: update_window_dims {}, inserted_window_dims {0} and input_batching_dims {} "
                     "must together count the operand's 2 dimension(s)"});
  // The well-formed row scatter verifies.
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[4,3] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2,3] parameter(2)
  ROOT s = f32[4,3] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)hlo"),
            Problems{});
}

// A comparator answers with one pred: an f32 answer reached LLVM ("generated LLVM IR does not verify").
// topk and XLA CPU's TopK custom-call: one array, k within its last dimension, (values, s32 indices) of its shape
// with the last dimension k; the custom-call's comparator takes (value, value, index, index).
TEST(HloVerifier, TopKShapes) {
  auto topk = [](const std::string& line) {
    return problems("ENTRY e {\n  p = f32[4,10] parameter(0)\n  ROOT t = " + line + "\n}\n");
  };
  EXPECT_EQ(topk("(f32[4,3], s32[4,3]) topk(p), k=3, largest=true"), Problems{});
  EXPECT_EQ(topk("(f32[4,11], s32[4,11]) topk(p), k=11"),
            Problems{"computation e, %t: top-k of f32[4,10] along its last dimension: k=11 must be in 0..10"});
  EXPECT_EQ(topk("(f32[4,3], f32[4,3]) topk(p), k=3"),
            Problems{"computation e, %t: top-k must produce (f32[4,3], s32[4,3]), not (f32[4,3], f32[4,3])"});
  EXPECT_EQ(topk("(f32[4,3], s32[4,3]) topk(p)"), Problems{"computation e, %t: topk needs k=N"});
  EXPECT_EQ(topk("(f32[4,3], s32[4,3]) topk(p), k=3, largest=maybe"),
            Problems{"computation e, %t: largest=maybe must be true or false"});
  EXPECT_EQ(problems(R"hlo(
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}

ENTRY e {
  p = f32[4,10] parameter(0)
  ROOT t = (f32[4,2], s32[4,2]) custom-call(p), custom_call_target="TopK", called_computations={less}
}
)hlo"),
            Problems{"computation e, %t: comparator computation less takes 2 parameter(s), expected 4"});
}

TEST(HloVerifier, SortComparatorReturnsPredOverScalarsOfTheOperandsTypes) {
  EXPECT_EQ(problems(R"hlo(
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT d = f32[] subtract(a, b)
}

ENTRY e {
  p = f32[8] parameter(0)
  ROOT s = f32[8] sort(p), dimensions={0}, to_apply=less
}
)hlo"),
            Problems{"computation e, %s: sort comparator less returns f32[], not pred[]"});
  EXPECT_EQ(problems(R"hlo(
less {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}

ENTRY e {
  p = f32[8] parameter(0)
  ROOT s = f32[8] sort(p), dimensions={0}, to_apply=less
}
)hlo"),
            (Problems{"computation e, %s: sort comparator less parameter 0 is s32[], operand 0 holds f32",
                      "computation e, %s: sort comparator less parameter 1 is s32[], operand 0 holds f32"}));
}

TEST(HloVerifier, PadResultShape) {
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                     "  ROOT r = f32[10] pad(p, z), padding=1_2_1\n}\n"),
            Problems{});  // 1 + 2 + 4 + 3 * 1
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                     "  ROOT r = f32[11] pad(p, z), padding=1_2_1\n}\n"),
            Problems{"computation e, %r: pad of f32[4] gives [10], not f32[11]"});
}

TEST(HloVerifier, DynamicSliceAndUpdateSlice) {
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4,3] parameter(0)\n  i = s32[] parameter(1)\n"
                     "  ROOT r = f32[2,3] dynamic-slice(p, i, i), dynamic_slice_sizes={2,3}\n}\n"),
            Problems{});
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4] parameter(0)\n  i = s32[] parameter(1)\n"
                     "  ROOT r = f32[40] dynamic-slice(p, i), dynamic_slice_sizes={40}\n}\n"),
            Problems{"computation e, %r: slice size 40 is out of range for dimension 0 of size 4"});
  EXPECT_EQ(problems("ENTRY e {\n  p = f32[4] parameter(0)\n  u = f32[5] parameter(1)\n  i = s32[] parameter(2)\n"
                     "  ROOT r = f32[4] dynamic-update-slice(p, u, i)\n}\n"),
            Problems{"computation e, %r: update f32[5] is larger than operand f32[4] in dimension 0"});
}

TEST(HloVerifier, WhileStateKeepsOneShape) {
  EXPECT_EQ(problems(R"hlo(cond {
  s = f32[2] parameter(0)
  ROOT t = pred[] constant(false)
}
body {
  s = f32[2] parameter(0)
  one = f32[] constant(1)
  ROOT b = f32[3] broadcast(one), dimensions={}
}
ENTRY e {
  x = f32[2] parameter(0)
  ROOT w = f32[2] while(x), condition=cond, body=body
}
)hlo"),
            Problems{"computation e, %w: body body returns f32[3], the loop state is f32[2]"});
}

TEST(HloVerifier, ReduceWindowResultShape) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[8,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4,4] reduce-window(p, z), window={size=2x2 stride=2x2}, to_apply=add
}
)hlo"),
            Problems{});
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(ENTRY e {
  p = f32[8,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8,8] reduce-window(p, z), window={size=2x2 stride=2x2}, to_apply=add
}
)hlo"),
            Problems{"computation e, %r: reduce-window must produce f32[4,4] (the shape of its window), not f32[8,8]"});
}

TEST(HloVerifier, HugeParameterNumberIsAGapNotAnAllocation) {
  EXPECT_EQ(problems("f {\n  ROOT p = f32[] parameter(99999999999)\n}\n"
                     "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT c = f32[] call(x), to_apply=f\n}\n"),
            Problems{"computation f, %p: parameter number 99999999999 leaves a gap: the 1 parameter(s) must be "
                     "numbered 0..0, and 0 is missing"});
}

TEST(HloVerifier, LongNamesAreShortenedInMessages) {
  const std::string name(30000, 'n');
  std::vector<std::string> found =
      problems("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT " + name + " = f32[3] negate(p)\n}\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_LT(found[0].size(), 200u) << found[0];
  EXPECT_NE(found[0].find("(30000 characters)"), std::string::npos) << found[0];
}

TEST(HloVerifier, ParameterNumberGap) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(2)
  ROOT s = f32[2] add(a, b)
}
)hlo"),
            Problems{"computation e, %b: parameter number 2 leaves a gap: the 2 parameter(s) must be numbered 0..1, "
                     "and 1 is missing"});
}

TEST(HloVerifier, ParameterNumberDuplicate) {
  EXPECT_EQ(problems(R"hlo(ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(0)
  ROOT s = f32[2] add(a, b)
}
)hlo"),
            Problems{"computation e, %b: parameter number 0 is used twice"});
}

TEST(HloVerifier, FusionCalleeParameterCount) {
  EXPECT_EQ(problems(R"hlo(f {
  x = f32[2] parameter(0)
  ROOT n = f32[2] negate(x)
}

ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT s = f32[2] fusion(a, b), kind=kLoop, calls=f
}
)hlo"),
            Problems{"computation e, %s: fused computation f takes 1 parameter(s), expected 2"});
}

TEST(HloVerifier, FusionResultDiffersFromCalleeRoot) {
  EXPECT_EQ(problems(R"hlo(f {
  x = f32[2] parameter(0)
  ROOT n = f32[2] negate(x)
}

ENTRY e {
  a = f32[2] parameter(0)
  ROOT s = f32[3] fusion(a), kind=kLoop, calls=f
}
)hlo"),
            Problems{"computation e, %s: result f32[3] differs from the root f32[2] of f"});
}

TEST(HloVerifier, ProblemsInCalledComputationsNameThatComputation) {
  EXPECT_EQ(problems(R"hlo(f {
  x = f32[2] parameter(0)
  ROOT n = f32[3] negate(x)
}

ENTRY e {
  a = f32[2] parameter(0)
  ROOT s = f32[3] fusion(a), kind=kLoop, calls=f
}
)hlo"),
            Problems{"computation f, %n: operand 0 has shape f32[2] but the result is f32[3]"});
}

TEST(HloVerifier, StatusListsEveryProblemAtItsLineAndColumn) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"hlo(HloModule broken
ENTRY e {
  p = f32[2] parameter(0)
  q = f32[3] parameter(1)
  r = f32[2] add(p, q)
  ROOT s = f32[5] reshape(r)
}
)hlo");
  ASSERT_TRUE(module.ok()) << module.message();
  Status status = verifyModule(**module);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "<text>:5:3: error: computation e, %r: operand 1 has shape f32[3] but the result is f32[2]\n"
            "<text>:6:8: error: computation e, %s: reshape changes the element count: f32[2] (2) to f32[5] (5)");
}

// ---- Real modules ------------------------------------------------------------------------------------

std::vector<std::filesystem::path> hloFilesUnder(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".hlo") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void expectAllVerify(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files = hloFilesUnder(dir);
  ASSERT_FALSE(files.empty()) << "no .hlo files under " << dir;
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    StatusOr<std::unique_ptr<HloModule>> module = parseHloModuleFile(file.string());
    ASSERT_TRUE(module.ok()) << module.message();
    Status verified = verifyModule(**module);
    EXPECT_TRUE(verified.ok()) << verified.message();
  }
}

// Found by the hlo_parser fuzzer (docs/RELIABILITY.md): a fusion whose operand does not match its fused
// computation's parameter passed the verifier, and the fusion pass then merged it into an ill-typed module.
TEST(HloVerifier, FusionAndCallOperandsMustMatchTheCalleesParameters) {
  EXPECT_EQ(problems(std::string(kAdd) + R"hlo(
fused {
  p0 = f32[4,8] parameter(0)
  c0 = f32[] constant(0)
  ROOT r = f32[4] reduce(p0, c0), dimensions={1}, to_apply=add
}

callee {
  ROOT q = s32[3] parameter(0)
}

ENTRY e {
  p = f32[5,8] parameter(0)
  i = f32[3] parameter(1)
  f = f32[4] fusion(p), kind=kInput, calls=fused
  ROOT c = s32[3] call(i), to_apply=callee
}
)hlo"),
            (Problems{"computation e, %f: operand 0 is f32[5,8] but parameter 0 of fused is f32[4,8]",
                      "computation e, %c: operand 0 is f32[3] but parameter 0 of callee is s32[3]"}));
}

TEST(HloVerifier, SharedCorpusVerifies) {
  std::filesystem::path dir = std::string(FS_SOURCE_DIR) + "/../shared/corpus/hlo";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "HLO corpus not found at " << dir;
  expectAllVerify(dir);
}

TEST(HloVerifier, SamplesVerify) {
  std::filesystem::path dir = std::string(FS_SOURCE_DIR) + "/samples";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "samples not found at " << dir;
  expectAllVerify(dir);
}

}  // namespace
}  // namespace fusionscope::core
