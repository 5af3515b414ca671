// One test per row of docs/HLO_SYNTAX.md: every syntax form XLA's HLO parser accepts (xla/hlo/parser/hlo_parser.cc),
// written as XLA prints it. Each test parses a small module, checks where the form is stored (a typed field, or the
// raw attribute text kept verbatim) and that print -> parse -> print gives the same text again. Forms we do not
// accept must fail with a FILE:LINE:COL error, never crash.
#include <cmath>
#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"

namespace fusionscope::core {
namespace {

// Parses `text`, then checks that printing, parsing the printed text and printing again is stable.
std::unique_ptr<HloModule> parseStable(std::string_view text) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text, "syntax.hlo");
  if (!module.ok()) {
    ADD_FAILURE() << module.message();
    return nullptr;
  }
  std::string printed = printModule(**module);
  StatusOr<std::unique_ptr<HloModule>> again = parseHloModule(printed, "printed.hlo");
  if (!again.ok()) {
    ADD_FAILURE() << again.message() << "\nprinted:\n" << printed;
    return nullptr;
  }
  EXPECT_EQ(printModule(**again), printed);
  return std::move(*module);
}

// The first line of the parse error, or a marker when the text parsed.
std::string firstErrorLine(std::string_view text) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text, "syntax.hlo");
  if (module.ok()) return "<parsed without error>";
  const std::string& message = module.message();
  return message.substr(0, message.find('\n'));
}

const HloInstruction& entryInstruction(const HloModule& module, std::string_view name) {
  const HloInstruction* inst = module.entry()->findInstruction(name);
  EXPECT_NE(inst, nullptr) << name;
  static const HloInstruction kMissing("missing", HloOpcode::kUnknown, Shape());
  return inst ? *inst : kMissing;
}

// The raw (verbatim) attribute `key` of entry instruction `name`, or "<absent>".
std::string raw(const HloModule& module, std::string_view name, std::string_view key) {
  const std::string* value = entryInstruction(module, name).attributes().findRaw(key);
  return value ? *value : "<absent>";
}

std::string printed(const std::unique_ptr<HloModule>& module) {
  return module ? printModule(*module) : "";
}

constexpr std::string_view kAdd = R"(%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %x, f32[] %y)
}
)";

std::string withAdd(std::string_view entry) {
  return "HloModule m\n\n" + std::string(kAdd) + "\n" + std::string(entry);
}

// ---- Module header -----------------------------------------------------------------------------------

TEST(HloSyntax, ModuleHeaderName) {
  auto module = parseStable("HloModule jit_train_step.1234:\n\nENTRY %main.3 {\n  ROOT %c = f32[] constant(1)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->name(), "jit_train_step.1234");
}

TEST(HloSyntax, ModuleWithoutHeader) {
  auto module = parseStable("ENTRY %main {\n  ROOT %c = f32[] constant(1)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->name(), "main");
}

TEST(HloSyntax, HeaderEntryComputationLayout) {
  auto module = parseStable(
      R"(HloModule m, entry_computation_layout={(f32[8,128]{1,0:T(8,128)}, s32[]{:T(128)})->(f32[8,128]{1,0})}

ENTRY %main (p: f32[8,128], i: s32[]) -> (f32[8,128]) {
  %p = f32[8,128]{1,0} parameter(0)
  %i = s32[] parameter(1)
  ROOT %t = (f32[8,128]{1,0}) tuple(%p)
}
)");
  ASSERT_TRUE(module);
  const std::string* layout = module->findHeaderAttribute("entry_computation_layout");
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(*layout, "{(f32[8,128]{1,0:T(8,128)}, s32[]{:T(128)})->(f32[8,128]{1,0})}");
}

TEST(HloSyntax, HeaderScheduledReplicasPartitions) {
  auto module = parseStable(
      "HloModule m, is_scheduled=true, replica_count=2, num_partitions=4\n\nENTRY %e {\n  ROOT %c = f32[] "
      "constant(1)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(*module->findHeaderAttribute("is_scheduled"), "true");
  EXPECT_EQ(*module->findHeaderAttribute("replica_count"), "2");
  EXPECT_EQ(*module->findHeaderAttribute("num_partitions"), "4");
}

TEST(HloSyntax, HeaderInputOutputAliasAndBufferDonor) {
  auto module = parseStable(
      R"(HloModule m, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, must-alias) }, buffer_donor={ (2, {}) }, alias_passthrough_params=true

ENTRY %e {
  %a = f32[2]{0} parameter(0)
  %b = f32[2]{0} parameter(1)
  %c = f32[2]{0} parameter(2)
  ROOT %t = (f32[2]{0}, f32[2]{0}) tuple(%a, %b)
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(*module->findHeaderAttribute("input_output_alias"),
            "{ {0}: (0, {}, may-alias), {1}: (1, {}, must-alias) }");
  EXPECT_EQ(*module->findHeaderAttribute("buffer_donor"), "{ (2, {}) }");
  EXPECT_EQ(*module->findHeaderAttribute("alias_passthrough_params"), "true");
}

TEST(HloSyntax, HeaderFrontendAttributes) {
  auto module = parseStable(
      "HloModule m, frontend_attributes={_xla_compute_type=\"host\",fingerprint=\"a,b}\"}\n\nENTRY %e {\n  ROOT "
      "%c = f32[] constant(1)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(*module->findHeaderAttribute("frontend_attributes"), "{_xla_compute_type=\"host\",fingerprint=\"a,b}\"}");
}

TEST(HloSyntax, HeaderAllowSpmdShardingPropagation) {
  auto module = parseStable(
      "HloModule m, allow_spmd_sharding_propagation_to_parameters={false,true}, "
      "allow_spmd_sharding_propagation_to_output=true\n\nENTRY %e {\n  ROOT %c = f32[] constant(1)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(*module->findHeaderAttribute("allow_spmd_sharding_propagation_to_parameters"), "{false,true}");
  EXPECT_EQ(*module->findHeaderAttribute("allow_spmd_sharding_propagation_to_output"), "true");
}

TEST(HloSyntax, HeaderOriginRecoveryTable) {
  auto module = parseStable(
      "HloModule m, origin_recovery_table={ {\"a\" {0}} : {\"b\"}, \"HloModule r\\n\\nENTRY e {\\n  ROOT p = "
      "f32[] parameter(0)\\n}\\n\" }\n\nENTRY %e {\n  ROOT %c = f32[] constant(1)\n}\n");
  ASSERT_TRUE(module);
  const std::string* table = module->findHeaderAttribute("origin_recovery_table");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->substr(0, 23), "{ {\"a\" {0}} : {\"b\"}, \"H");
}

TEST(HloSyntax, HeaderUnknownAttribute) {
  auto module = parseStable(
      "HloModule m, future_layout_hint=[2,4]<=[4,2]T(1,0), future_flag={x={1}}\n\nENTRY %e {\n  ROOT %c = f32[] "
      "constant(1)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(*module->findHeaderAttribute("future_layout_hint"), "[2,4]<=[4,2]T(1,0)");
  EXPECT_EQ(*module->findHeaderAttribute("future_flag"), "{x={1}}");
}

TEST(HloSyntax, HeaderUnknownBlock) {
  auto module = parseStable(
      "HloModule m\n\nFutureTable\n1 {a=1 b=\"x\"}\n2 {a=2}\n\nENTRY %e {\n  ROOT %c = f32[] "
      "constant(1)\n}\n");
  ASSERT_TRUE(module);
  ASSERT_EQ(module->headerTables().size(), 1u);
  EXPECT_EQ(module->headerTables()[0].name, "FutureTable");
  EXPECT_EQ(module->headerTables()[0].rows[0].second, "{a=1 b=\"x\"}");
}

// ---- Computations ------------------------------------------------------------------------------------

TEST(HloSyntax, ComputationSignatureAndEntry) {
  auto module = parseStable(withAdd(R"(ENTRY %main.5 (Arg_0.1: f32[4], Arg_1.2: f32[]) -> f32[] {
  %Arg_0.1 = f32[4]{0} parameter(0)
  %Arg_1.2 = f32[] parameter(1)
  ROOT %reduce.4 = f32[] reduce(f32[4]{0} %Arg_0.1, f32[] %Arg_1.2), dimensions={0}, to_apply=%add
}
)"));
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->name(), "main.5");
  EXPECT_EQ(module->computations().size(), 2u);
}

TEST(HloSyntax, ComputationWithoutSignature) {
  auto module = parseStable(
      "HloModule m\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = "
      "f32[] add(x, y)\n}\n\nENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  "
      "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}\n");
  ASSERT_TRUE(module);
  EXPECT_NE(module->findComputation("add"), nullptr);
}

TEST(HloSyntax, ComputationExecutionThread) {
  auto module = parseStable(R"(HloModule m

%host_work (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p)
}, execution_thread="host"

ENTRY %e (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  %start = ((f32[4]{0}), f32[4]{0}, u32[]) async-start(%a), async_execution_thread="host", calls=%host_work
  ROOT %done = f32[4]{0} async-done(%start)
}
)");
  ASSERT_TRUE(module);
  const HloComputation* host = module->findComputation("host_work");
  ASSERT_NE(host, nullptr);
  ASSERT_EQ(host->attributes().size(), 1u);
  EXPECT_EQ(host->attributes()[0].first, "execution_thread");
  EXPECT_EQ(host->attributes()[0].second, "\"host\"");
  EXPECT_NE(printed(module).find("}, execution_thread=\"host\"\n"), std::string::npos);
  EXPECT_EQ(raw(*module, "start", "async_execution_thread"), "\"host\"");
}

TEST(HloSyntax, RootNotLastAndBareNames) {
  auto module = parseStable(
      "HloModule m\n\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT n = f32[] negate(a)\n  "
      "unused = f32[] exponential(a)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->name(), "n");
}

TEST(HloSyntax, OperandsDefinedLater) {
  auto module = parseStable("HloModule m\n\nENTRY e {\n  ROOT n = f32[] negate(a)\n  a = f32[] parameter(0)\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->operand(0)->name(), "a");
}

TEST(HloSyntax, Comments) {
  auto module = parseStable(R"(HloModule m  // trailing comment

/* block comment */
ENTRY %e {
  %p = f32[] parameter(0)
  // a whole-line comment
  ROOT %t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(%p, %p, %p, %p, %p, /*index=5*/%p)
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->operandCount(), 6);
  EXPECT_NE(printed(module).find("/*index=5*/"), std::string::npos);
}

// ---- Shapes ------------------------------------------------------------------------------------------

TEST(HloSyntax, ShapeLayoutTiles) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  ROOT %p = f32[8,256]{1,0:T(8,128)(2,1)} parameter(0)
}
)");
  ASSERT_TRUE(module);
  const Shape& shape = module->entry()->root()->shape();
  ASSERT_TRUE(shape.layout());
  EXPECT_EQ(shape.layout()->minorToMajor, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(shape.layout()->annotations, "T(8,128)(2,1)");
}

TEST(HloSyntax, ShapeLayoutElementSizeMemorySpaceAndMore) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = s4[256]{0:T(1024)(128)(2,1)E(4)S(1)} parameter(0)
  %b = f32[16,32]{1,0:T(8,128)L(1024)SC(0:8)M(8)} parameter(1)
  %c = f32[16]{0:D(C)#(u16)*(u32)} parameter(2)
  %d = f32[16]{0:T(2,*)} parameter(3)
  ROOT %t = (s4[256]{0:T(1024)(128)(2,1)E(4)S(1)}, f32[16,32]{1,0:T(8,128)L(1024)SC(0:8)M(8)}) tuple(%a, %b)
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(entryInstruction(*module, "a").shape().layout()->annotations, "T(1024)(128)(2,1)E(4)S(1)");
  EXPECT_EQ(entryInstruction(*module, "b").shape().layout()->annotations, "T(8,128)L(1024)SC(0:8)M(8)");
  EXPECT_EQ(entryInstruction(*module, "c").shape().layout()->annotations, "D(C)#(u16)*(u32)");
  EXPECT_EQ(entryInstruction(*module, "d").shape().layout()->annotations, "T(2,*)");
}

TEST(HloSyntax, ShapeDynamicDimensions) {
  auto module = parseStable("HloModule m\n\nENTRY %e {\n  ROOT %p = f32[<=4,?,3]{2,1,0} parameter(0)\n}\n");
  ASSERT_TRUE(module);
  const Shape& shape = module->entry()->root()->shape();
  EXPECT_TRUE(shape.isDynamicDimension(0));
  EXPECT_EQ(shape.dimension(0), 4);
  EXPECT_EQ(shape.dimension(1), -1);
  EXPECT_FALSE(shape.isDynamicDimension(2));
}

TEST(HloSyntax, ShapeTokensAndTuples) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %tok = token[] after-all()
  %p = ((f32[], s32[2]{0}), token[], ()) parameter(0)
  ROOT %g = (f32[], s32[2]{0}) get-tuple-element(%p), index=0
}
)");
  ASSERT_TRUE(module);
  EXPECT_TRUE(entryInstruction(*module, "tok").shape().isToken());
  const Shape& p = entryInstruction(*module, "p").shape();
  ASSERT_EQ(p.tupleSize(), 3);
  EXPECT_EQ(p.tupleElement(2).tupleSize(), 0);
}

TEST(HloSyntax, ShapeElementTypes) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  ROOT %p = (pred[], s2[2], s4[2], s8[], s16[], /*index=5*/s32[], s64[], u2[2], u4[2], u8[], /*index=10*/u16[], u32[], u64[], f16[], bf16[], /*index=15*/f32[], f64[], f8e5m2[], f8e4m3[], f8e4m3fn[], /*index=20*/f8e4m3b11fnuz[], f8e5m2fnuz[], f8e4m3fnuz[], f8e3m4[], f4e2m1fn[2], /*index=25*/f8e8m0fnu[], c64[], c128[], token[], opaque[]) parameter(0)
}
)");
  ASSERT_TRUE(module);
  const Shape& shape = module->entry()->root()->shape();
  ASSERT_EQ(shape.tupleSize(), 30);
  EXPECT_EQ(shape.tupleElement(24).elementType(), PrimitiveType::kF4E2M1FN);
  EXPECT_EQ(shape.tupleElement(25).elementType(), PrimitiveType::kF8E8M0FNU);
  EXPECT_EQ(shape.tupleElement(29).elementType(), PrimitiveType::kOpaque);
}

TEST(HloSyntax, ShapeBufferNotSupported) {
  EXPECT_EQ(firstErrorLine("HloModule m\n\nENTRY %e {\n  ROOT %p = b(f32[8]) parameter(0)\n}\n"),
            "syntax.hlo:4:13: error: unknown element type 'b'");
}

// ---- Instructions: common attributes -----------------------------------------------------------------

TEST(HloSyntax, OperandShapes) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = f32[2,3]{1,0:T(2,128)} parameter(0)
  %b = (f32[], s32[]) parameter(1)
  %g = f32[] get-tuple-element((f32[], s32[]) %b), index=0
  ROOT %s = f32[2,3]{1,0} add(f32[2,3]{1,0:T(2,128)} %a, f32[2,3]{1,0:T(2,128)} %a)
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->operand(1)->name(), "a");
}

TEST(HloSyntax, ParameterShardingAndReplication) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  ROOT %p = (f32[2]{0}, f32[]) parameter(0), sharding={{replicated}, {maximal device=0}}, parameter_replication={false,true}
}
)");
  ASSERT_TRUE(module);
  const HloInstruction& p = entryInstruction(*module, "p");
  EXPECT_EQ(*p.attributes().sharding, "{{replicated}, {maximal device=0}}");
  EXPECT_EQ(raw(*module, "p", "parameter_replication"), "{false,true}");
}

TEST(HloSyntax, Metadata) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p), metadata={op_type="neg" op_name="jit(f)/neg" source_file="/t/f.py" source_line=3 source_end_line=4 source_column=5 source_end_column=9 profile_type={1} deduplicated_name="fusion.1" preserve_layout=true scheduling_name="n.sched" stack_frame_id=7}
}
)");
  ASSERT_TRUE(module);
  const OpMetadata& metadata = *entryInstruction(*module, "n").attributes().metadata;
  EXPECT_EQ(metadata.opType, "neg");
  EXPECT_EQ(metadata.opName, "jit(f)/neg");
  EXPECT_EQ(metadata.sourceFile, "/t/f.py");
  EXPECT_EQ(metadata.sourceLine, 3);
  EXPECT_EQ(metadata.extra,
            "source_end_line=4 source_column=5 source_end_column=9 profile_type={1} deduplicated_name=\"fusion.1\" "
            "preserve_layout=true scheduling_name=\"n.sched\" stack_frame_id=7");
}

TEST(HloSyntax, Sharding) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = f32[4,4]{1,0} parameter(0), sharding={devices=[2,1]0,1}
  %b = f32[4,4]{1,0} copy(%a), sharding={devices=[2,2]<=[4]}
  %c = f32[4,4]{1,0} copy(%b), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  %d = f32[4,4]{1,0} copy(%c), sharding={devices=[2,1,2]0,1,2,3 last_tile_dims={manual} metadata={op_name="a"}}
  %f = f32[4,4]{1,0} copy(%d), sharding={unknown shard_as 1}
  %g = f32[4,4]{1,0} copy(%f), sharding={mesh[a=2,b=2], [{a},{b}]}
  ROOT %r = f32[4,4]{1,0} copy(%g), sharding={manual}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(*entryInstruction(*module, "b").attributes().sharding, "{devices=[2,2]<=[4]}");
  EXPECT_EQ(*entryInstruction(*module, "c").attributes().sharding,
            "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(*entryInstruction(*module, "g").attributes().sharding, "{mesh[a=2,b=2], [{a},{b}]}");
}

TEST(HloSyntax, ControlPredecessors) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[] parameter(0)
  %a = f32[] negate(%p)
  %b = f32[] exponential(%p), control-predecessors={%a}
  ROOT %t = (f32[], f32[]) tuple(%a, %b)
}
)");
  ASSERT_TRUE(module);
  const HloInstruction& b = entryInstruction(*module, "b");
  ASSERT_EQ(b.controlPredecessors().size(), 1u);
  EXPECT_EQ(b.controlPredecessors()[0]->name(), "a");
}

TEST(HloSyntax, BackendConfig) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} negate(%p), backend_config="opaque,text"
  ROOT %r = f32[4]{0} exponential(%q), backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"force_earliest_schedule":false}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(*entryInstruction(*module, "q").attributes().backendConfig, "\"opaque,text\"");
  EXPECT_EQ(*entryInstruction(*module, "r").attributes().backendConfig,
            "{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[],\"force_earliest_schedule\":false}");
}

TEST(HloSyntax, FrontendAttributes) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  ROOT %p = f32[4]{0} parameter(0), frontend_attributes={_xla_compute_type="host",_xla_stream_annotation="1"}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(*module->entry()->root()->attributes().frontendAttributes,
            "{_xla_compute_type=\"host\",_xla_stream_annotation=\"1\"}");
}

TEST(HloSyntax, Statistics) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  ROOT %p = f32[4]{0} parameter(0), statistics={visualizing_index=1,stat-0=0.5,stat-1=33}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "p", "statistics"), "{visualizing_index=1,stat-0=0.5,stat-1=33}");
}

TEST(HloSyntax, Origin) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = (f32[], f32[]) parameter(0), origin={({"p" {0}}, {"p" {1}})}
  ROOT %g = f32[] get-tuple-element(%p), index=0, origin={{"g"}}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "p", "origin"), "{({\"p\" {0}}, {\"p\" {1}})}");
  EXPECT_EQ(raw(*module, "g", "origin"), "{{\"g\"}}");
}

TEST(HloSyntax, ResultAccuracy) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4]{0} parameter(0)
  %x = f32[4]{0} exponential(%p), result_accuracy={mode=highest}
  ROOT %y = f32[4]{0} tanh(%x), result_accuracy={tolerance={atol=0.5,rtol=0,ulps=1}}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "x", "result_accuracy"), "{mode=highest}");
  EXPECT_EQ(raw(*module, "y", "result_accuracy"), "{tolerance={atol=0.5,rtol=0,ulps=1}}");
}

TEST(HloSyntax, UnknownAttributeKeptVerbatim) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p), future_attr={a=[1,2]<=[2], b="x,y"}, future_flag=SOME_ENUM, future_groups=[2,2]<=[4]
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "n", "future_attr"), "{a=[1,2]<=[2], b=\"x,y\"}");
  EXPECT_EQ(raw(*module, "n", "future_flag"), "SOME_ENUM");
  EXPECT_EQ(raw(*module, "n", "future_groups"), "[2,2]<=[4]");
}

TEST(HloSyntax, UnknownOpcode) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} future-op(%p), some_key=1
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->opcode(), HloOpcode::kUnknown);
  EXPECT_NE(printed(module).find("future-op(f32[4]{0} %p), some_key=1"), std::string::npos);
}

// ---- Instructions: per-opcode attributes --------------------------------------------------------------

TEST(HloSyntax, DimensionsSliceIotaIndex) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4,6]{1,0} parameter(0)
  %b = f32[3,4,6]{2,1,0} broadcast(%p), dimensions={1,2}
  %t = f32[6,4]{1,0} transpose(%p), dimensions={1,0}
  %s = f32[2,2]{1,0} slice(%p), slice={[0:4:2], [1:3]}
  %i = s32[4]{0} iota(), iota_dimension=0
  %tu = (f32[6,4]{1,0}) tuple(%t)
  ROOT %g = f32[6,4]{1,0} get-tuple-element(%tu), index=0
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(*entryInstruction(*module, "b").attributes().dimensions, (std::vector<int64_t>{1, 2}));
  const auto& slice = *entryInstruction(*module, "s").attributes().slice;
  EXPECT_EQ(slice[0], (SliceDim{0, 4, 2}));
  EXPECT_EQ(slice[1], (SliceDim{1, 3, 1}));
  EXPECT_EQ(*entryInstruction(*module, "i").attributes().iotaDimension, 0);
  EXPECT_EQ(*entryInstruction(*module, "g").attributes().tupleIndex, 0);
}

TEST(HloSyntax, Padding) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4,6]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %pad = f32[7,5]{1,0} pad(%p, %z), padding=0_0_1x-1_0
}
)");
  ASSERT_TRUE(module);
  const auto& padding = *module->entry()->root()->attributes().padding;
  EXPECT_EQ(padding[0], (PaddingDim{0, 0, 1}));
  EXPECT_EQ(padding[1], (PaddingDim{-1, 0, 0}));
}

TEST(HloSyntax, WindowAndReduceWindow) {
  auto module = parseStable(withAdd(R"(ENTRY %e {
  %p = f32[8,8]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %rw = f32[4,4]{1,0} reduce-window(%p, %z), window={size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, to_apply=%add
}
)"));
  ASSERT_TRUE(module);
  const Window& window = *module->entry()->root()->attributes().window;
  ASSERT_EQ(window.dims.size(), 2u);
  EXPECT_EQ(window.dims[0].size, 3);
  EXPECT_EQ(window.dims[1].padHigh, 1);
  EXPECT_EQ(window.dims[1].baseDilation, 2);
  EXPECT_EQ(window.dims[0].windowDilation, 2);
  EXPECT_TRUE(window.dims[1].reversal);
}

TEST(HloSyntax, Convolution) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %x = f32[1,8,8,4]{3,2,1,0} parameter(0)
  %k = f32[3,3,4,8]{3,2,1,0} parameter(1)
  ROOT %c = f32[1,8,8,8]{3,2,1,0} convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1, operand_precision={high,default}, conv_kind=fprop
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "c", "dim_labels"), "b01f_01io->b01f");
  EXPECT_EQ(raw(*module, "c", "feature_group_count"), "1");
  EXPECT_EQ(raw(*module, "c", "operand_precision"), "{high,default}");
  EXPECT_EQ(raw(*module, "c", "conv_kind"), "fprop");
}

TEST(HloSyntax, Dot) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = bf16[2,8,16]{2,1,0} parameter(0)
  %b = bf16[2,16,4]{2,1,0} parameter(1)
  %d = f32[2,8,4]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={highest,highest}, algorithm=dot_bf16_bf16_f32
  ROOT %s = f32[2,8,4]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, sparsity=L.2@2:4
}
)");
  ASSERT_TRUE(module);
  const DotDimensionNumbers& dot = *entryInstruction(*module, "d").attributes().dot;
  EXPECT_EQ(dot.lhsContracting, (std::vector<int64_t>{2}));
  EXPECT_EQ(dot.rhsBatch, (std::vector<int64_t>{0}));
  EXPECT_EQ(raw(*module, "d", "algorithm"), "dot_bf16_bf16_f32");
  EXPECT_EQ(raw(*module, "s", "sparsity"), "L.2@2:4");
}

TEST(HloSyntax, RaggedDot) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = f32[16,8]{1,0} parameter(0)
  %b = f32[4,8,6]{2,1,0} parameter(1)
  %g = s64[4]{0} parameter(2)
  ROOT %r = f32[16,6]{1,0} ragged-dot(%a, %b, %g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "r", "lhs_ragged_dims"), "{0}");
  EXPECT_EQ(raw(*module, "r", "rhs_group_dims"), "{0}");
}

TEST(HloSyntax, Compare) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = f32[4]{0} parameter(0)
  ROOT %c = pred[4]{0} compare(%a, %a), direction=LT, type=TOTALORDER
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(*module->entry()->root()->attributes().direction, ComparisonDirection::kLt);
  EXPECT_EQ(raw(*module, "c", "type"), "TOTALORDER");
}

TEST(HloSyntax, FusionKindCallsAliasing) {
  auto module = parseStable(R"(HloModule m

%fused (p0: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p0)
}

ENTRY %e {
  %p = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused, output_to_operand_aliasing={{}: (0, {})}
}
)");
  ASSERT_TRUE(module);
  const HloInstruction& f = entryInstruction(*module, "f");
  EXPECT_EQ(*f.attributes().fusionKind, FusionKind::kLoop);
  ASSERT_EQ(f.calledComputationRefs().size(), 1u);
  EXPECT_EQ(f.calledComputationRefs()[0].computations[0]->name(), "fused");
  EXPECT_EQ(raw(*module, "f", "output_to_operand_aliasing"), "{{}: (0, {})}");
}

TEST(HloSyntax, CallToApply) {
  auto module = parseStable(withAdd(R"(ENTRY %e {
  %a = f32[] parameter(0)
  ROOT %c = f32[] call(%a, %a), to_apply=%add, is_composite=true, frontend_attributes={composite.name="my.add",composite.version="1"}
}
)"));
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->calledComputationRefs()[0].key, "to_apply");
  EXPECT_EQ(raw(*module, "c", "is_composite"), "true");
}

TEST(HloSyntax, WhileConditionBody) {
  auto module = parseStable(R"(HloModule m

%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%s, %n), direction=LT
}

%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %next = s32[] add(%s, %one)
}

ENTRY %e {
  %z = s32[] constant(0)
  ROOT %w = s32[] while(%z), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"10"}}
}
)");
  ASSERT_TRUE(module);
  const auto& refs = module->entry()->root()->calledComputationRefs();
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].key, "condition");
  EXPECT_EQ(refs[1].computations[0]->name(), "body");
}

TEST(HloSyntax, ConditionalBranches) {
  auto module = parseStable(R"(HloModule m

%b0 (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %n = f32[] negate(%x)
}

%b1 (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %e = f32[] exponential(%x)
}

ENTRY %e {
  %i = s32[] parameter(0)
  %p = pred[] parameter(1)
  %x = f32[] parameter(2)
  %c = f32[] conditional(%i, %x, %x), branch_computations={%b0, %b1}
  ROOT %d = f32[] conditional(%p, %c, %c), true_computation=%b0, false_computation=%b1
}
)");
  ASSERT_TRUE(module);
  const auto& refs = entryInstruction(*module, "c").calledComputationRefs();
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_TRUE(refs[0].braced);
  EXPECT_EQ(refs[0].computations.size(), 2u);
  EXPECT_EQ(entryInstruction(*module, "d").calledComputationRefs().size(), 2u);
}

TEST(HloSyntax, CustomCall) {
  auto module = parseStable(withAdd(R"(ENTRY %e {
  %a = f32[4]{0} parameter(0)
  %c1 = f32[4]{0} custom-call(%a), custom_call_target="my_fn", api_version=API_VERSION_TYPED_FFI, custom_call_has_side_effect=true, schedule=SCHEDULE_LATEST, output_to_operand_aliasing={{}: (0, {})}, backend_config={attr = 1 : i32}
  %c2 = f32[4]{0} custom-call(%a), custom_call_target="layout_fn", operand_layout_constraints={f32[4]{0}}, padding_type=PADDING_VALID
  %c3 = f32[4]{0} custom-call(%a), custom_call_target="with_literal", literal=s32[2]{0} {1, 2}
  %c4 = f32[4]{0} custom-call(%a), custom_call_target="scalar_literal", literal=f32[] 1.5
  %c5 = f32[4]{0} custom-call(%a), custom_call_target="calls", called_computations={%add}
  ROOT %c6 = f32[4]{0} custom-call(%a), custom_call_target="reduce_like", to_apply=%add, window={size=2}, dim_labels=b0f_0io->b0f, feature_group_count=1
}
)"));
  ASSERT_TRUE(module);
  EXPECT_EQ(*entryInstruction(*module, "c1").attributes().customCallTarget, "my_fn");
  EXPECT_EQ(raw(*module, "c1", "api_version"), "API_VERSION_TYPED_FFI");
  EXPECT_EQ(raw(*module, "c1", "schedule"), "SCHEDULE_LATEST");
  EXPECT_EQ(raw(*module, "c2", "operand_layout_constraints"), "{f32[4]{0}}");
  EXPECT_EQ(raw(*module, "c3", "literal"), "s32[2]{0} {1, 2}");
  EXPECT_EQ(raw(*module, "c4", "literal"), "f32[] 1.5");
  EXPECT_EQ(entryInstruction(*module, "c5").calledComputationRefs()[0].key, "called_computations");
  EXPECT_EQ(entryInstruction(*module, "c6").calledComputationRefs()[0].key, "to_apply");
}

TEST(HloSyntax, CollectiveReplicaGroupsList) {
  auto module = parseStable(withAdd(R"(ENTRY %e {
  %a = f32[4]{0} parameter(0)
  %ar = f32[4]{0} all-reduce(%a), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %ag = f32[8]{0} all-gather(%ar), channel_id=2, replica_groups={}, dimensions={0}, constrain_layout=true
  ROOT %rs = f32[2]{0} reduce-scatter(%ar), replica_groups={{0,1}}, dimensions={0}, to_apply=%add, mode=cross_replica
}
)"));
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "ar", "replica_groups"), "{{0,1},{2,3}}");
  EXPECT_EQ(raw(*module, "ag", "replica_groups"), "{}");
  EXPECT_EQ(raw(*module, "ar", "use_global_device_ids"), "true");
  EXPECT_EQ(raw(*module, "rs", "mode"), "cross_replica");
}

TEST(HloSyntax, CollectiveReplicaGroupsIota) {
  auto module = parseStable(withAdd(R"(ENTRY %e {
  %a = f32[4]{0} parameter(0)
  %ar = f32[4]{0} all-reduce(%a), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add
  ROOT %a2a = f32[4]{0} all-to-all(%ar), channel_id=2, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}
}
)"));
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "ar", "replica_groups"), "[2,4]<=[8]");
  EXPECT_EQ(raw(*module, "a2a", "replica_groups"), "[2,4]<=[4,2]T(1,0)");
}

TEST(HloSyntax, CollectivePermuteAndBroadcast) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = f32[4]{0} parameter(0)
  %cp = f32[4]{0} collective-permute(%a), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %cps = (f32[4]{0}, f32[4]{0}) collective-permute-start(%cp), channel_id=2, source_target_pairs={{0,1}}
  %cpd = f32[4]{0} collective-permute-done(%cps)
  ROOT %cb = f32[4]{0} collective-broadcast(%cpd), replica_groups={{0,1}}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "cp", "source_target_pairs"), "{{0,1},{1,0}}");
}

TEST(HloSyntax, AsyncOps) {
  auto module = parseStable(withAdd(R"(ENTRY %e {
  %a = f32[4]{0} parameter(0)
  %ars = f32[4]{0} all-reduce-start(%a), replica_groups={}, to_apply=%add
  %ard = f32[4]{0} all-reduce-done(%ars)
  %cs = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-start(%ard), async_execution_thread="main", custom_call_target="foo"
  %cu = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-update(%cs)
  %cd = f32[4]{0} custom-call-done(%cu)
  %c0 = (f32[4]{0}, f32[4]{0}, u32[]) copy-start(%cd), cross_program_prefetch_index=0
  ROOT %c1 = f32[4]{0} copy-done(%c0)
}
)"));
  ASSERT_TRUE(module);
  EXPECT_EQ(entryInstruction(*module, "ars").opcode(), HloOpcode::kAllReduceStart);
  EXPECT_EQ(entryInstruction(*module, "cs").opcodeString(), "custom-call-start");
  EXPECT_EQ(raw(*module, "c0", "cross_program_prefetch_index"), "0");
}

TEST(HloSyntax, SendRecv) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %tok = token[] after-all()
  %data = f32[4]{0} parameter(0)
  %send = (f32[4]{0}, u32[], token[]) send(%data, %tok), channel_id=5, is_host_transfer=true, frontend_attributes={_xla_host_transfer_handler_name="h"}
  %send-done = token[] send-done(%send), channel_id=5, is_host_transfer=true
  %recv = (f32[4]{0}, u32[], token[]) recv(%send-done), channel_id=6
  %recv-done = (f32[4]{0}, token[]) recv-done(%recv), channel_id=6
  ROOT %g = f32[4]{0} get-tuple-element(%recv-done), index=0
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "send", "channel_id"), "5");
  EXPECT_EQ(raw(*module, "send", "is_host_transfer"), "true");
}

TEST(HloSyntax, GatherScatter) {
  auto module = parseStable(withAdd(R"(ENTRY %e {
  %op = f32[8,4]{1,0} parameter(0)
  %idx = s32[3,1]{1,0} parameter(1)
  %upd = f32[3,4]{1,0} parameter(2)
  %g = f32[3,4]{1,0} gather(%op, %idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true, operand_batching_dims={}, start_indices_batching_dims={}
  ROOT %s = f32[8,4]{1,0} scatter(%op, %idx, %upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, indices_are_sorted=true, unique_indices=true, to_apply=%add
}
)"));
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "g", "offset_dims"), "{1}");
  EXPECT_EQ(raw(*module, "g", "slice_sizes"), "{1,4}");
  EXPECT_EQ(raw(*module, "s", "unique_indices"), "true");
  EXPECT_EQ(entryInstruction(*module, "s").calledComputationRefs()[0].key, "to_apply");
}

TEST(HloSyntax, SortAndTopK) {
  auto module = parseStable(R"(HloModule m

%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}

ENTRY %e {
  %p = f32[8]{0} parameter(0)
  %s = f32[8]{0} sort(%p), dimensions={0}, is_stable=true, to_apply=%lt
  ROOT %t = (f32[2]{0}, s32[2]{0}) topk(%s), k=2, largest=true
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "s", "is_stable"), "true");
  EXPECT_EQ(raw(*module, "t", "k"), "2");
}

TEST(HloSyntax, DynamicSliceAndReshape) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[8]{0} parameter(0)
  %i = s32[] parameter(1)
  %ds = f32[2]{0} dynamic-slice(%p, %i), dynamic_slice_sizes={2}
  %dus = f32[8]{0} dynamic-update-slice(%p, %ds, %i)
  ROOT %r = f32[2,4]{1,0} reshape(%dus), inferred_dimension=1
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "ds", "dynamic_slice_sizes"), "{2}");
  EXPECT_EQ(raw(*module, "r", "inferred_dimension"), "1");
}

TEST(HloSyntax, RandomNumbers) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %r = f32[4]{0} rng(%lo, %hi), distribution=rng_uniform
  %state = u64[2]{0} parameter(0)
  %bits = (u64[2]{0}, u32[4]{0}) rng-bit-generator(%state), algorithm=rng_three_fry
  ROOT %s = u64[2]{0} rng-get-and-update-state(), delta=4
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "r", "distribution"), "rng_uniform");
  EXPECT_EQ(raw(*module, "bits", "algorithm"), "rng_three_fry");
  EXPECT_EQ(raw(*module, "s", "delta"), "4");
}

TEST(HloSyntax, NumericOpAttributes) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %x = f32[2,4]{1,0} parameter(0)
  %c = c64[8]{0} parameter(1)
  %f = c64[8]{0} fft(%c), fft_type=FFT, fft_length={8}
  %scale = f32[4]{0} parameter(2)
  %bn = (f32[2,4]{1,0}, f32[4]{0}, f32[4]{0}) batch-norm-training(%x, %scale, %scale), epsilon=0.001, feature_index=1
  %rp = f32[2,4]{1,0} reduce-precision(%x), exponent_bits=5, mantissa_bits=10
  %a = f32[4,4]{1,0} parameter(3)
  %ch = f32[4,4]{1,0} cholesky(%a), lower=true
  ROOT %ts = f32[4,4]{1,0} triangular-solve(%ch, %a), left_side=true, lower=true, unit_diagonal=false, transpose_a=NO_TRANSPOSE
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "f", "fft_type"), "FFT");
  EXPECT_EQ(raw(*module, "bn", "epsilon"), "0.001");
  EXPECT_EQ(raw(*module, "rp", "mantissa_bits"), "10");
  EXPECT_EQ(raw(*module, "ts", "transpose_a"), "NO_TRANSPOSE");
}

TEST(HloSyntax, InfeedOutfeed) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %tok = token[] after-all()
  %in = ((f32[4]{0}), token[]) infeed(%tok), infeed_config="cfg"
  %d = (f32[4]{0}) get-tuple-element(%in), index=0
  ROOT %out = token[] outfeed(%d, %tok), outfeed_shape=(f32[4]{0}), outfeed_config="x"
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "in", "infeed_config"), "\"cfg\"");
  EXPECT_EQ(raw(*module, "out", "outfeed_shape"), "(f32[4]{0})");
}

TEST(HloSyntax, Domain) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %p = f32[4]{0} parameter(0)
  ROOT %d = f32[4]{0} domain(%p), domain={kind="sharding", entry={maximal device=0}, exit={replicated}}
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(raw(*module, "d", "domain"), "{kind=\"sharding\", entry={maximal device=0}, exit={replicated}}");
}

TEST(HloSyntax, ScanAndSelectAndScatter) {
  auto module = parseStable(withAdd(R"(%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}

ENTRY %e {
  %x = f32[8]{0} parameter(0)
  %init = f32[] constant(0)
  %src = f32[4]{0} parameter(1)
  %ss = f32[8]{0} select-and-scatter(%x, %src, %init), window={size=2 stride=2}, select=%ge, scatter=%add
  ROOT %scan = (f32[8]{0}, f32[]) scan(%ss, %init), dimensions={0}, num_carries=1, is_reverse=false, is_associative=true, to_apply=%add
}
)"));
  ASSERT_TRUE(module);
  const auto& refs = entryInstruction(*module, "ss").calledComputationRefs();
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].key, "select");
  EXPECT_EQ(raw(*module, "scan", "num_carries"), "1");
}

// ---- Literals ----------------------------------------------------------------------------------------

TEST(HloSyntax, LiteralScalars) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %b = pred[] constant(true)
  %i = s32[] constant(-3)
  %u = u64[] constant(18446744073709551615)
  %f = f32[] constant(1.5)
  %h = bf16[] constant(1e-05)
  ROOT %t = (pred[], s32[], u64[], f32[], bf16[]) tuple(%b, %i, %u, %f, %h)
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(entryInstruction(*module, "b").literal()->integerValues()[0], 1);
  EXPECT_EQ(entryInstruction(*module, "u").literal()->toString(), "18446744073709551615");
  EXPECT_DOUBLE_EQ(entryInstruction(*module, "h").literal()->floatValues()[0], 1e-05);
}

TEST(HloSyntax, LiteralNestedArrays) {
  auto module = parseStable(R"(HloModule m

ENTRY %e {
  %a = f32[2,3]{1,0} constant({ { 1, 2, 3 }, { 4, 5, 6.5 } })
  %p = pred[2]{0} constant({true, false})
  ROOT %z = f32[0]{0} constant({})
}
)");
  ASSERT_TRUE(module);
  EXPECT_EQ(entryInstruction(*module, "a").literal()->floatValues(), (std::vector<double>{1, 2, 3, 4, 5, 6.5}));
  EXPECT_EQ(entryInstruction(*module, "a").literal()->toString(), "{ {1, 2, 3}, {4, 5, 6.5} }");
}

TEST(HloSyntax, LiteralElided) {
  auto module = parseStable("HloModule m\n\nENTRY %e {\n  ROOT %c = f32[1024,1024]{1,0} constant({...})\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->literal()->kind(), Literal::Kind::kElided);
}

TEST(HloSyntax, LiteralTuple) {
  auto module = parseStable("HloModule m\n\nENTRY %e {\n  ROOT %c = (s32[], f32[2]{0}) constant((1, {2.5, 3}))\n}\n");
  ASSERT_TRUE(module);
  const Literal& literal = *module->entry()->root()->literal();
  EXPECT_EQ(literal.kind(), Literal::Kind::kRaw);
  EXPECT_EQ(literal.rawText(), "(1, {2.5, 3})");
}

TEST(HloSyntax, LiteralInfAndNan) {
  auto module = parseStable("HloModule m\n\nENTRY %e {\n  ROOT %c = f32[4]{0} constant({inf, -inf, nan, -nan})\n}\n");
  ASSERT_TRUE(module);
  const Literal& literal = *module->entry()->root()->literal();
  EXPECT_TRUE(std::isinf(literal.floatValues()[1]) && literal.floatValues()[1] < 0);
  EXPECT_TRUE(std::isnan(literal.floatValues()[3]) && std::signbit(literal.floatValues()[3]));
  EXPECT_EQ(literal.toString(), "{inf, -inf, nan, -nan}");
}

TEST(HloSyntax, LiteralNanPayload) {
  auto module =
      parseStable("HloModule m\n\nENTRY %e {\n  ROOT %c = f32[3]{0} constant({nan(0x1), -nan(0x7f), nan})\n}\n");
  ASSERT_TRUE(module);
  const Literal& literal = *module->entry()->root()->literal();
  EXPECT_TRUE(std::isnan(literal.floatValues()[0]));
  EXPECT_EQ(literal.toString(), "{nan(0x1), -nan(0x7f), nan}");
  EXPECT_EQ(firstErrorLine("HloModule m\n\nENTRY %e {\n  ROOT %c = f32[] constant(nan(0xq))\n}\n"),
            "syntax.hlo:4:28: error: invalid NaN payload in 'nan(0xq)' (expected nan(0x1) .. nan(0xfffffffffffff))");
}

TEST(HloSyntax, LiteralComplex) {
  auto module = parseStable("HloModule m\n\nENTRY %e {\n  ROOT %c = c64[2]{0} constant({(1, -2), (0.5, inf)})\n}\n");
  ASSERT_TRUE(module);
  EXPECT_EQ(module->entry()->root()->literal()->floatValues()[1], -2);
}

TEST(HloSyntax, LiteralHexFloatRejected) {
  // XLA's lexer has no hex floats either.
  EXPECT_EQ(firstErrorLine("HloModule m\n\nENTRY %e {\n  ROOT %c = f32[] constant(0x1p3)\n}\n"),
            "syntax.hlo:4:28: error: invalid f32 value '0x1p3'");
}

// ---- Forms XLA's parser accepts but never prints, which we reject with a positioned error ---------------

TEST(HloSyntax, UnknownElementTypeStillNamed) {
  // A word before '[' is read as an element type (the shape-less form, an opcode followed by '(', is inferred:
  // hlo_parser_test.cpp).
  EXPECT_EQ(firstErrorLine("HloModule m\n\nENTRY %e {\n  %p = f32[] parameter(0)\n  ROOT %n = f31[] negate(%p)\n}\n"),
            "syntax.hlo:5:13: error: unknown element type 'f31'");
}

TEST(HloSyntax, NestedInstructionOperandNotSupported) {
  EXPECT_EQ(
      firstErrorLine(
          "HloModule m\n\nENTRY %e {\n  %p = f32[] parameter(0)\n  ROOT %n = f32[] negate(f32[] exponential(%p))\n}\n"),
      "syntax.hlo:5:43: error: expected ')' after the operand list, found '('");
}

TEST(HloSyntax, InlineComputationBodyNotSupported) {
  EXPECT_EQ(firstErrorLine("HloModule m\n\nENTRY %e {\n  %p = f32[4] parameter(0)\n  %z = f32[] constant(0)\n  ROOT "
                           "%r = f32[] reduce(%p, %z), dimensions={0}, to_apply={ %x = f32[] parameter(0) }\n}\n"),
            "syntax.hlo:6:65: error: invalid 'to_apply': expected ',' or '}' in name list");
}

TEST(HloSyntax, ModuleWithoutEntryNotSupported) {
  EXPECT_EQ(firstErrorLine("HloModule m\n\nmain {\n  ROOT %c = f32[] constant(1)\n}\n"),
            "syntax.hlo:3:1: error: no ENTRY computation: mark the computation the module runs with 'ENTRY'");
}

TEST(HloSyntax, SingleQuotedStringNotSupported) {
  EXPECT_EQ(firstErrorLine("HloModule m\n\nENTRY %e {\n  %p = f32[] parameter(0)\n  ROOT %c = f32[] custom-call(%p), "
                           "custom_call_target='foo'\n}\n"),
            "syntax.hlo:5:55: error: invalid 'custom_call_target': expected a quoted string");
}

}  // namespace
}  // namespace fusionscope::core
