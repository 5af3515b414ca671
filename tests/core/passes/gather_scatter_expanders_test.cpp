// gather-scatter-batching, gather-expander and scatter-expander: XLA's rewrites of indexed reads and writes before
// fusion (batched gathers and scatters as plain ones; a gather of one slice as a dynamic-slice; a scatter of one
// window as a dynamic-update-slice). Each keeps the results, out-of-range indices included (the evaluator's random
// integers run from 0 to 7, past the end of most operands here).
#include "core/passes/gather_scatter_expanders.h"

#include <string>

#include <gtest/gtest.h>

#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"
#include "tests/core/testing/preset_testing.h"

namespace fusionscope::core {
namespace {

using testing::countOpcode;

template <typename Pass>
std::unique_ptr<HloModule> rewritten(const char* text, bool expectChange = true) {
  auto module = testing::parseOrFail(text);
  if (!module) return nullptr;
  Pass pass;
  EXPECT_EQ(testing::runPass(pass, *module), expectChange) << printModule(*module);
  for (uint64_t seed : {1, 7, 19}) testing::expectSameResults(text, *module, seed);
  return module;
}

// JAX's vmap of x[i] over rows: a gather with a batching dimension (the row).
constexpr const char* kBatchedGather = R"(
HloModule m
ENTRY main {
  x = f32[4,6]{1,0} parameter(0)
  i = s32[4,1]{1,0} parameter(1)
  ROOT g = f32[4,1]{1,0} gather(x, i), offset_dims={1}, collapsed_slice_dims={}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}, metadata={op_name="vmap()/gather"}
}
)";

TEST(GatherScatterBatchingTest, ABatchedGatherReadsTheBatchFromAnIotaInItsIndexVector) {
  auto module = rewritten<GatherScatterBatchingNormalizer>(kBatchedGather);
  ASSERT_NE(module, nullptr);
  const HloInstruction* gather = module->entry()->root();
  const std::string text = printInstruction(*gather);
  EXPECT_EQ(text.find("batching_dims"), std::string::npos) << text;
  EXPECT_NE(text.find("collapsed_slice_dims={0}"), std::string::npos) << text;
  EXPECT_NE(text.find("start_index_map={0,1}"), std::string::npos) << text;
  const HloInstruction* indices = gather->operand(1);
  ASSERT_EQ(indices->opcode(), HloOpcode::kConcatenate) << printModule(*module);
  EXPECT_EQ(indices->shape().dimensions(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(indices->operand(0)->opcode(), HloOpcode::kIota);
  EXPECT_EQ(indices->operand(0)->attributes().iotaDimension, 0);
  // The iota and the concatenate are the gather's work: they keep its source op.
  ASSERT_NE(indices->metadata(), nullptr);
  EXPECT_EQ(indices->metadata()->opName, "vmap()/gather");
}

// Two batching dimensions, the index vector in the implicit trailing dimension, an offset dimension kept.
TEST(GatherScatterBatchingTest, AnImplicitIndexVectorDimensionIsMadeExplicitFirst) {
  auto module = rewritten<GatherScatterBatchingNormalizer>(R"(
HloModule m
ENTRY main {
  x = f32[2,3,5,4]{3,2,1,0} parameter(0)
  i = s32[2,3]{1,0} parameter(1)
  ROOT g = f32[2,3,4]{2,1,0} gather(x, i), offset_dims={2}, collapsed_slice_dims={2}, start_index_map={2}, operand_batching_dims={0,1}, start_indices_batching_dims={0,1}, index_vector_dim=2, slice_sizes={1,1,1,4}
}
)");
  ASSERT_NE(module, nullptr);
  const std::string text = printInstruction(*module->entry()->root());
  EXPECT_NE(text.find("collapsed_slice_dims={0,1,2}"), std::string::npos) << text;
  EXPECT_NE(text.find("start_index_map={0,1,2}"), std::string::npos) << text;
  EXPECT_EQ(countOpcode(*module, HloOpcode::kIota), 2);
}

TEST(GatherScatterBatchingTest, ABatchedScatterWritesThroughAPlainOne) {
  auto module = rewritten<GatherScatterBatchingNormalizer>(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[3,8]{1,0} parameter(0)
  i = s32[3,2,1]{2,1,0} parameter(1)
  u = f32[3,2]{1,0} parameter(2)
  ROOT s = f32[3,8]{1,0} scatter(x, i, u), update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, to_apply=add
}
)");
  ASSERT_NE(module, nullptr);
  const std::string text = printInstruction(*module->entry()->root());
  EXPECT_EQ(text.find("batching_dims"), std::string::npos) << text;
  EXPECT_NE(text.find("inserted_window_dims={0,1}"), std::string::npos) << text;
  EXPECT_NE(text.find("scatter_dims_to_operand_dims={0,1}"), std::string::npos) << text;
}

TEST(GatherExpanderTest, AGatherOfOneSliceIsADynamicSlice) {
  // jnp's x[:, j] with a traced j: one index vector, a whole column.
  auto module = rewritten<SimpleGatherExpander>(R"(
HloModule m
ENTRY main {
  x = s32[4,6]{1,0} parameter(0)
  j = s32[1]{0} parameter(1)
  ROOT g = s32[4,1]{1,0} gather(x, j), offset_dims={0,1}, collapsed_slice_dims={}, start_index_map={1}, index_vector_dim=0, slice_sizes={4,1}, metadata={op_name="gather"}
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kGather), 0) << printModule(*module);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kDynamicSlice), 1) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->shape().toString(), "s32[4,1]{1,0}");
}

TEST(GatherExpanderTest, ARowOfACollapsedGatherIsADynamicSliceAndAReshape) {
  auto module = rewritten<SimpleGatherExpander>(R"(
HloModule m
ENTRY main {
  table = f32[5,3]{1,0} parameter(0)
  i = s32[1,1]{1,0} parameter(1)
  ROOT g = f32[1,3]{1,0} gather(table, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kGather), 0) << printModule(*module);
}

TEST(GatherExpanderTest, AGatherOfSeveralSlicesStays) {
  auto module = rewritten<SimpleGatherExpander>(R"(
HloModule m
ENTRY main {
  table = f32[5,3]{1,0} parameter(0)
  i = s32[2,1]{1,0} parameter(1)
  ROOT g = f32[2,3]{1,0} gather(table, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
}
)",
                                                /*expectChange=*/false);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kGather), 1);
}

// A KV cache's `cache.at[pos].set(token)`: one window, the scatter's computation an assignment.
constexpr const char* kAssignScatter = R"(
HloModule m
assign {
  a = s32[] parameter(0)
  ROOT b = s32[] parameter(1)
}
ENTRY main {
  x = s32[8]{0} parameter(0)
  pos = s32[1]{0} parameter(1)
  t = s32[] parameter(2)
  ROOT s = s32[8]{0} scatter(x, pos, t), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=assign
}
)";

TEST(ScatterExpanderTest, AScatterOfOneWindowIsADynamicUpdateSliceThatKeepsOutOfRangeWrites) {
  auto module = rewritten<SimpleScatterExpander>(kAssignScatter);
  ASSERT_NE(module, nullptr);
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kDynamicUpdateSlice) << printModule(*module);
  EXPECT_EQ(root->operand(1)->opcode(), HloOpcode::kSelect) << printModule(*module);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kScatter), 0);
  // The scatter's computation is inlined and gone; the bounds check reduces with an `and`.
  EXPECT_EQ(module->findComputation("assign"), nullptr) << printModule(*module);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kReduce), 1);
  // An index past the end (8 here, and 5 for a window of 4 below) writes nothing, as the scatter: a dynamic-update-
  // slice alone would clamp it and overwrite the last element.
  auto original = testing::parseOrFail(kAssignScatter);
  ASSERT_NE(original, nullptr);
  std::vector<Value> args = randomArguments(*original, 3);
  args[1] = Value::integers(Shape(PrimitiveType::kS32, {1}), {8});
  auto before = evaluateModule(*original, args);
  auto after = evaluateModule(*module, args);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(before->result.toString(0), after->result.toString(0));
  EXPECT_EQ(after->result.toString(0), args[0].toString(0));
}

TEST(ScatterExpanderTest, AnAddingScatterOfAWindowAddsTheWindow) {
  auto module = rewritten<SimpleScatterExpander>(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,3]{1,0} parameter(0)
  i = s32[1,1]{1,0} parameter(1)
  u = f32[1,4,3]{2,1,0} parameter(2)
  ROOT s = f32[8,3]{1,0} scatter(x, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kScatter), 0) << printModule(*module);
  EXPECT_EQ(countOpcode(*module, HloOpcode::kAdd), 1) << printModule(*module);
}

TEST(ScatterExpanderTest, AScatterOfSeveralWindowsOrOperandsStays) {
  for (const char* text : {R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8]{0} parameter(0)
  i = s32[2,1]{1,0} parameter(1)
  u = f32[2]{0} parameter(2)
  ROOT s = f32[8]{0} scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
)",
                           R"(
HloModule m
add2 {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  s = f32[] add(a, c)
  t = s32[] add(b, d)
  ROOT r = (f32[], s32[]) tuple(s, t)
}
ENTRY main {
  x = f32[8]{0} parameter(0)
  y = s32[8]{0} parameter(1)
  i = s32[1]{0} parameter(2)
  u = f32[] parameter(3)
  v = s32[] parameter(4)
  ROOT s = (f32[8]{0}, s32[8]{0}) scatter(x, y, i, u, v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=add2
}
)"}) {
    auto module = rewritten<SimpleScatterExpander>(text, /*expectChange=*/false);
    ASSERT_NE(module, nullptr);
    EXPECT_EQ(countOpcode(*module, HloOpcode::kScatter), 1);
  }
}

// Both presets run the three rewrites before fusion, as both XLA backends do: fusion sees the dynamic-slice and
// the dynamic-update-slice, and the stages keep the results.
TEST(GatherScatterExpandersTest, BothPresetsRewriteBeforeFusion) {
  for (const char* preset : {"cpu", "gpu"}) {
    auto module = testing::parseOrFail(kAssignScatter);
    ASSERT_NE(module, nullptr);
    StatusOr<PipelineRun> run = testing::runPreset(*module, preset);
    ASSERT_TRUE(run.ok()) << run.message();
    EXPECT_EQ(countOpcode(*module, HloOpcode::kScatter), 0) << preset << "\n" << printModule(*module);
    EXPECT_EQ(countOpcode(*module, HloOpcode::kDynamicUpdateSlice), 1) << preset << "\n" << printModule(*module);
    testing::expectSameResults(kAssignScatter, *module);
  }
}

}  // namespace
}  // namespace fusionscope::core
