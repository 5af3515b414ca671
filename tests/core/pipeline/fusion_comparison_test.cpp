// compareFusions: how two modules group the same ops into fusions. Hand-written modules pin the matching (names
// with XLA's clone suffixes, metadata when names differ), singleton groups and the exact pair counts; the real
// programs of tests/data/xla pin how close our cpu preset comes to XLA:CPU.
#include "core/pipeline/fusion_comparison.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "core/ir/hlo_module.h"
#include "core/passes/fusion_config.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<HloModule> parseOrDie(std::string_view text) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.message();
  return module.ok() ? std::move(*module) : nullptr;
}

TEST(NormalizedInstructionName, StripsCloneSuffixesOnly) {
  EXPECT_EQ(normalizedInstructionName("add.3.clone.1"), "add.3");
  EXPECT_EQ(normalizedInstructionName("add.3.clone"), "add.3");
  EXPECT_EQ(normalizedInstructionName("mul.2.clone.clone.4"), "mul.2");
  EXPECT_EQ(normalizedInstructionName("region_0.2.clone.clone.clone"), "region_0.2");
  EXPECT_EQ(normalizedInstructionName("add.3"), "add.3");
  EXPECT_EQ(normalizedInstructionName("fusion.12"), "fusion.12");
  EXPECT_EQ(normalizedInstructionName("clone"), "clone");
  EXPECT_EQ(normalizedInstructionName("clone.1"), "clone.1");
}

// A fuses exp and add; mul and neg stay alone (singleton groups).
constexpr const char* kOurs = R"(HloModule a

fused_computation {
  p0 = f32[8]{0} parameter(0)
  exp.1 = f32[8]{0} exponential(p0)
  ROOT add.2 = f32[8]{0} add(exp.1, exp.1)
}

ENTRY main {
  x = f32[8]{0} parameter(0)
  fusion = f32[8]{0} fusion(x), kind=kLoop, calls=fused_computation
  mul.3 = f32[8]{0} multiply(fusion, x)
  ROOT neg.4 = f32[8]{0} negate(mul.3)
}
)";

// B also fuses the multiply (and renames exp the way XLA's fusion does); the negate stays alone.
constexpr const char* kTheirs = R"(HloModule b

fused_computation.7 {
  param_0 = f32[8]{0} parameter(0)
  exp.1.clone.1 = f32[8]{0} exponential(param_0)
  add.2 = f32[8]{0} add(exp.1.clone.1, exp.1.clone.1)
  ROOT mul.3 = f32[8]{0} multiply(add.2, param_0)
}

ENTRY main {
  x = f32[8]{0} parameter(0)
  add_multiply_fusion = f32[8]{0} fusion(x), kind=kLoop, calls=fused_computation.7
  ROOT neg.4 = f32[8]{0} negate(add_multiply_fusion)
}
)";

TEST(CompareFusions, CountsPairsFusedInBothOnlyInAAndOnlyInB) {
  auto a = parseOrDie(kOurs);
  auto b = parseOrDie(kTheirs);
  FusionComparison c = compareFusions(*a, *b);
  EXPECT_EQ(c.a.ops, 4);
  EXPECT_EQ(c.a.matched, 4);
  EXPECT_EQ(c.a.matchedByName, 4);
  EXPECT_EQ(c.a.groups, 3);  // the fusion, mul.3, neg.4
  EXPECT_EQ(c.a.fusions, 1);
  EXPECT_EQ(c.b.ops, 4);
  EXPECT_EQ(c.b.groups, 2);
  // A: {exp, add}. B: {exp, add}, {exp, mul}, {add, mul}.
  EXPECT_EQ(c.pairsBoth, 1);
  EXPECT_EQ(c.pairsOnlyA, 0);
  EXPECT_EQ(c.pairsOnlyB, 2);
  ASSERT_TRUE(c.precision().has_value());
  EXPECT_DOUBLE_EQ(*c.precision(), 1.0);
  ASSERT_TRUE(c.recall().has_value());
  EXPECT_DOUBLE_EQ(*c.recall(), 1.0 / 3.0);

  // One difference: A's fusion and the lone multiply against B's one fusion; the negate agrees and is not shown.
  ASSERT_EQ(c.differences.size(), 1u);
  const GroupDifference& d = c.differences[0];
  EXPECT_EQ(d.pairsOnlyA, 0);
  EXPECT_EQ(d.pairsOnlyB, 2);
  ASSERT_EQ(d.a.size(), 2u);
  EXPECT_EQ(d.a[0].name, "fusion");
  EXPECT_TRUE(d.a[0].fusion);
  ASSERT_EQ(d.a[0].members.size(), 2u);
  EXPECT_EQ(d.a[0].members[0].name, "exp.1");
  EXPECT_EQ(d.a[0].members[0].counterpart, "exp.1.clone.1");
  EXPECT_EQ(d.a[1].name, "mul.3");
  EXPECT_FALSE(d.a[1].fusion);
  ASSERT_EQ(d.b.size(), 1u);
  EXPECT_EQ(d.b[0].name, "add_multiply_fusion");
  EXPECT_EQ(d.b[0].members.size(), 3u);
  EXPECT_TRUE(d.decisions.empty());
}

TEST(CompareFusions, SameModuleAgreesEverywhere) {
  auto a = parseOrDie(kTheirs);
  auto b = parseOrDie(kTheirs);
  FusionComparison c = compareFusions(*a, *b);
  EXPECT_EQ(c.pairsBoth, 3);
  EXPECT_EQ(c.pairsOnlyA + c.pairsOnlyB, 0);
  EXPECT_DOUBLE_EQ(c.precision().value_or(0), 1.0);
  EXPECT_DOUBLE_EQ(c.recall().value_or(0), 1.0);
  EXPECT_TRUE(c.differences.empty());
}

TEST(CompareFusions, NothingFusedHasNoPrecisionOrRecall) {
  auto a = parseOrDie(R"(HloModule a
ENTRY main {
  x = f32[8]{0} parameter(0)
  ROOT neg.4 = f32[8]{0} negate(x)
}
)");
  FusionComparison c = compareFusions(*a, *a);
  EXPECT_EQ(c.a.ops, 1);
  EXPECT_EQ(c.a.groups, 1);
  EXPECT_FALSE(c.precision().has_value());
  EXPECT_FALSE(c.recall().has_value());
}

// XLA renames what it fuses: a name that differs is matched by opcode, shape and metadata; a name that agrees but
// names another op (here: another opcode) is not trusted; ops without metadata match by name only. Parameters,
// constants, bitcasts and tuples are not compared.
TEST(CompareFusions, MatchesByMetadataWhenNamesDiffer) {
  auto a = parseOrDie(R"(HloModule a
ENTRY main {
  x = f32[8]{0} parameter(0)
  c = f32[] constant(2)
  b.1 = f32[8]{0} broadcast(c), dimensions={}
  mul.6 = f32[8]{0} multiply(x, b.1), metadata={op_name="jit(f)/mul" source_file="f.py" source_line=3}
  sub.1 = f32[8]{0} subtract(mul.6, x), metadata={op_name="jit(f)/sub" source_file="f.py" source_line=4}
  cast = f32[2,4]{1,0} bitcast(sub.1)
  ROOT t = (f32[2,4]{1,0}) tuple(cast)
}
)");
  auto b = parseOrDie(R"(HloModule b
fused_computation {
  param_0 = f32[8]{0} parameter(0)
  constant.1 = f32[] constant(2)
  broadcast.2 = f32[8]{0} broadcast(constant.1), dimensions={}
  mul.3 = f32[8]{0} multiply(param_0, broadcast.2), metadata={op_name="jit(f)/mul" source_file="f.py" source_line=3}
  ROOT sub.1 = f32[8]{0} broadcast(mul.3), dimensions={0}, metadata={op_name="jit(f)/sub" source_file="f.py" source_line=4}
}
ENTRY main {
  x = f32[8]{0} parameter(0)
  ROOT multiply_fusion = f32[8]{0} fusion(x), kind=kLoop, calls=fused_computation
}
)");
  FusionComparison c = compareFusions(*a, *b);
  EXPECT_EQ(c.a.ops, 3);  // b.1, mul.6, sub.1
  EXPECT_EQ(c.a.matched, 1);
  EXPECT_EQ(c.a.matchedByName, 0);
  EXPECT_EQ(c.b.ops, 3);  // broadcast.2, mul.3, sub.1
  EXPECT_EQ(c.b.matched, 1);
  ASSERT_EQ(c.a.unmatched.size(), 2u);
  EXPECT_EQ(c.a.unmatched[0].name, "b.1");
  EXPECT_EQ(c.a.unmatched[1].name, "sub.1");
  EXPECT_EQ(c.a.unmatched[1].opcode, "subtract");
  EXPECT_EQ(c.pairsBoth + c.pairsOnlyA + c.pairsOnlyB, 0);  // one matched op makes no pair
}

// XLA's call inliner prefixes the call's op_name and rewrites the stack frame of what it inlines; ours keeps the
// callee's metadata. The last component of op_name matches them when it is unambiguous on both sides.
TEST(CompareFusions, MatchesInlinedOpsByTheLastComponentOfOpName) {
  auto a = parseOrDie(R"(HloModule a
ENTRY main {
  x = f32[8]{0} parameter(0)
  mul.4 = f32[8]{0} multiply(x, x), metadata={op_name="mul" stack_frame_id=1}
  tanh.1 = f32[8]{0} tanh(mul.4), metadata={op_name="tanh" stack_frame_id=3}
  add.1 = f32[8]{0} add(tanh.1, x), metadata={op_name="add" stack_frame_id=1}
  ROOT add.2 = f32[8]{0} add(add.1, x), metadata={op_name="add" stack_frame_id=2}
}
)");
  auto b = parseOrDie(R"(HloModule b
fused_computation {
  p = f32[8]{0} parameter(0)
  mul.19 = f32[8]{0} multiply(p, p), metadata={op_name="jit(f)/closed_call/mul" stack_frame_id=13}
  tanh.5 = f32[8]{0} tanh(mul.19), metadata={op_name="jit(f)/closed_call/tanh" stack_frame_id=15}
  add.7 = f32[8]{0} add(tanh.5, p), metadata={op_name="jit(f)/closed_call/add" stack_frame_id=13}
  ROOT add.8 = f32[8]{0} add(add.7, p), metadata={op_name="jit(f)/closed_call/add" stack_frame_id=14}
}
ENTRY main {
  x = f32[8]{0} parameter(0)
  ROOT fusion = f32[8]{0} fusion(x), kind=kLoop, calls=fused_computation
}
)");
  FusionComparison c = compareFusions(*a, *b);
  EXPECT_EQ(c.a.matched, 2);  // mul and tanh; the two adds are ambiguous
  ASSERT_EQ(c.a.unmatched.size(), 2u);
  EXPECT_EQ(c.a.unmatched[0].name, "add.1");
  EXPECT_EQ(c.pairsOnlyB, 1);
}

// With the run that produced A, each difference carries our decisions about its instructions, and only those.
TEST(CompareFusions, DifferencesCarryOurDecisionsAboutTheirInstructions) {
  auto a = parseOrDie(kOurs);
  auto b = parseOrDie(kTheirs);
  PipelineRun run;
  PassRun pass;
  pass.pass = "fusion";
  FusionDecision refused;
  refused.pass = "fusion";
  refused.producer = "fusion";
  refused.consumer = "mul.3";
  refused.reason = "not fusing fusion into mul.3: a reason";
  FusionDecision unrelated = refused;
  unrelated.producer = "mul.3";
  unrelated.consumer = "neg.4";
  unrelated.reason = "not fusing mul.3 into neg.4: another reason";
  pass.decisions = {refused, unrelated};
  run.passes.push_back(pass);
  FusionComparison c = compareFusions(*a, *b, &run);
  ASSERT_EQ(c.differences.size(), 1u);
  ASSERT_EQ(c.differences[0].decisions.size(), 1u);
  EXPECT_EQ(c.differences[0].decisions[0].reason, refused.reason);
}

// Our cpu preset on XLA's input against XLA:CPU's output, for every program of the interop corpus (the vendored
// copies in tests/data/xla). The floors are the figures measured when the comparison was written (docs/PIPELINES.md,
// "Compared with XLA CPU"): a change to the cpu preset that lowers one fails here; one that raises it should
// raise the floor.
struct CorpusCase {
  const char* program;
  const char* before;  // relative to tests/data/xla
  const char* after;
  int64_t minMatchedA;
  double minPrecision;
  double minRecall;
};

class CpuPresetAgainstXla : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(CpuPresetAgainstXla, AgreesAtLeastAsMeasured) {
  const CorpusCase& param = GetParam();
  const fs::path dir = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla";
  StatusOr<std::unique_ptr<HloModule>> a = parseHloModuleFile((dir / param.before).string());
  ASSERT_TRUE(a.ok()) << a.message();
  StatusOr<std::unique_ptr<HloModule>> b = parseHloModuleFile((dir / param.after).string());
  ASSERT_TRUE(b.ok()) << b.message();
  PipelineSpec spec;
  spec.preset = "cpu";
  StatusOr<std::unique_ptr<PassPipeline>> pipeline = buildPipeline(spec);
  ASSERT_TRUE(pipeline.ok()) << pipeline.message();
  PassContext context(fusionConfigFor(backendFor(spec)));
  StatusOr<PipelineRun> run = runPipeline(**pipeline, **a, context);
  ASSERT_TRUE(run.ok()) << run.message();
  FusionComparison c = compareFusions(**a, **b, &*run);
  std::printf(
      "%-16s A %ld/%ld matched, B %ld/%ld; pairs both %ld, only ours %ld, only XLA %ld; precision %.3f "
      "recall %.3f\n",
      param.program, static_cast<long>(c.a.matched), static_cast<long>(c.a.ops), static_cast<long>(c.b.matched),
      static_cast<long>(c.b.ops), static_cast<long>(c.pairsBoth), static_cast<long>(c.pairsOnlyA),
      static_cast<long>(c.pairsOnlyB), c.precision().value_or(-1), c.recall().value_or(-1));
  EXPECT_GE(c.a.matched, param.minMatchedA);
  EXPECT_GE(c.precision().value_or(1.0), param.minPrecision);
  EXPECT_GE(c.recall().value_or(1.0), param.minRecall);
}

INSTANTIATE_TEST_SUITE_P(
    Programs, CpuPresetAgainstXla,
    ::testing::Values(
        CorpusCase{"mlp_train", "modules/mlp_train.before.txt", "modules/mlp_train.after.txt", 38, 1.0, 1.0},
        CorpusCase{"attention", "modules/attention.before.txt", "modules/attention.after.txt", 13, 1.0, 1.0},
        CorpusCase{"layernorm_gelu", "modules/layernorm_gelu.before.txt", "modules/layernorm_gelu.after.txt", 26, 1.0,
                   1.0},
        CorpusCase{"conv_pool", "modules/conv_pool.before.txt", "modules/conv_pool.after.txt", 13, 1.0, 1.0},
        CorpusCase{"loops", "modules/loops.before.txt", "modules/loops.after.txt", 13, 1.0, 1.0},
        CorpusCase{"scan_rnn", "modules/scan_rnn.before.txt", "modules/scan_rnn.after.txt", 8, 1.0, 1.0},
        CorpusCase{"mnist_step", "mnist_step/fused/module_0018.jit_step.before_optimizations.txt",
                   "mnist_step/fused/module_0018.jit_step.cpu_after_optimizations.txt", 22, 1.0, 1.0},
        CorpusCase{"tf_mnist", "modules/tf_mnist.before.txt", "modules/tf_mnist.after.txt", 40, 1.0, 1.0},
        CorpusCase{"dropout_mlp", "modules/dropout_mlp.before.txt", "modules/dropout_mlp.after.txt", 6, 1.0, 1.0}),
    [](const ::testing::TestParamInfo<CorpusCase>& info) { return std::string(info.param.program); });

}  // namespace
}  // namespace fusionscope::core
