// What the parser accepts and how it stores it: forms XLA prints and forms XLA's tests write by hand.
#include "core/text/hlo_parser.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/text/hlo_printer.h"

namespace fusionscope::core {
namespace {

std::unique_ptr<HloModule> parseOrDie(std::string_view text) {
  auto module = parseHloModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.message();
  return module.ok() ? std::move(*module) : nullptr;
}

TEST(HloParser, BareNamesNoHeaderRootNotLast) {
  auto m = parseOrDie(R"(
%reducer {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT max = f32[] maximum(p0, p1)
}
ENTRY main {
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=%reducer
  a = f32[256] parameter(0)
  z = f32[] constant(-inf)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "module");
  ASSERT_EQ(m->computations().size(), 2u);
  HloComputation* entry = m->entry();
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->name(), "main");
  EXPECT_EQ(entry->root()->name(), "r");
  EXPECT_EQ(entry->root()->operand(0)->name(), "a");
  EXPECT_EQ(entry->root()->toApply()->name(), "reducer");
  EXPECT_EQ(entry->root()->attributes().dimensions, std::vector<int64_t>{0});
  const Literal* z = entry->findInstruction("z")->literal();
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(std::isinf(z->asDouble(0)) && z->asDouble(0) < 0);
  // Users are maintained from operands.
  ASSERT_EQ(entry->findInstruction("a")->users().size(), 1u);
  EXPECT_EQ(entry->findInstruction("a")->users()[0], entry->root());
}

TEST(HloParser, PercentNamesOperandShapesSignatureAndComments) {
  auto m = parseOrDie(R"(/* leading comment */
HloModule m.1:, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY %main.3 (p.1: f32[2]) -> f32[2] {
  %p.1 = f32[2]{0} parameter(0) // trailing comment
  ROOT %add.2 = f32[2]{0} add(f32[2]{0} %p.1, /*index=1*/f32[2]{0} %p.1)
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "m.1");
  ASSERT_NE(m->findHeaderAttribute("entry_computation_layout"), nullptr);
  EXPECT_EQ(*m->findHeaderAttribute("entry_computation_layout"), "{(f32[2]{0})->f32[2]{0}}");
  HloInstruction* add = m->entry()->root();
  ASSERT_EQ(add->operandCount(), 2);
  EXPECT_EQ(add->operand(0), add->operand(1));
  EXPECT_EQ(add->operand(0)->users().size(), 1u);  // one user, used twice
  EXPECT_EQ(add->shape().layout()->minorToMajor, std::vector<int64_t>{0});
}

TEST(HloParser, ShapesTuplesTilingDynamicToken) {
  auto m = parseOrDie(R"(HloModule s
ENTRY e {
  t = (f32[2,3]{1,0:T(8,128)}, (s32[], pred[<=4]), token[]) parameter(0)
  u = f32[?,8]{1,0} parameter(1)
  ROOT g = f32[2,3]{1,0:T(8,128)} get-tuple-element(t), index=0
}
)");
  ASSERT_TRUE(m);
  const Shape& t = m->entry()->findInstruction("t")->shape();
  ASSERT_TRUE(t.isTuple());
  ASSERT_EQ(t.tupleSize(), 3);
  EXPECT_EQ(t.tupleElement(0).layout()->annotations, "T(8,128)");
  EXPECT_EQ(t.tupleElement(1).tupleElement(1).elementType(), PrimitiveType::kPred);
  EXPECT_TRUE(t.tupleElement(1).tupleElement(1).isDynamicDimension(0));
  EXPECT_TRUE(t.tupleElement(2).isToken());
  EXPECT_EQ(t.toString(), "(f32[2,3]{1,0:T(8,128)}, (s32[], pred[<=4]), token[])");
  EXPECT_EQ(m->entry()->findInstruction("u")->shape().toString(), "f32[?,8]{1,0}");
  EXPECT_EQ(m->entry()->root()->attributes().tupleIndex, 0);
}

TEST(HloParser, Constants) {
  auto m = parseOrDie(R"(HloModule c
ENTRY e {
  a = f32[2,3] constant({ { 1, 2.5, -3 }, { 1e-07, inf, nan } })
  b = pred[3] constant({true, false, 1})
  c = u64[1] constant({18446744073709551615})
  d = c64[] constant((1, -2))
  e = f32[1000] constant({...})
  f = s32[0] constant({})
  g = bf16[] constant(0.1)
  ROOT t = (f32[2,3], pred[3]) tuple(a, b)
}
)");
  ASSERT_TRUE(m);
  HloComputation* e = m->entry();
  const Literal* a = e->findInstruction("a")->literal();
  ASSERT_EQ(a->valueCount(), 6);
  EXPECT_DOUBLE_EQ(a->asDouble(1), 2.5);
  EXPECT_TRUE(std::isnan(a->asDouble(5)));
  EXPECT_EQ(a->toString(), "{ {1, 2.5, -3}, {1e-07, inf, nan} }");
  EXPECT_EQ(e->findInstruction("b")->literal()->integerValues(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(e->findInstruction("b")->literal()->toString(), "{true, false, true}");
  EXPECT_EQ(e->findInstruction("c")->literal()->toString(), "{18446744073709551615}");
  EXPECT_EQ(e->findInstruction("d")->literal()->toString(), "(1, -2)");
  EXPECT_EQ(e->findInstruction("e")->literal()->kind(), Literal::Kind::kElided);
  EXPECT_EQ(e->findInstruction("e")->literal()->toString(), "{...}");
  EXPECT_EQ(e->findInstruction("f")->literal()->valueCount(), 0);
  EXPECT_EQ(e->findInstruction("g")->literal()->toString(), "0.1");
}

TEST(HloParser, TypedAttributes) {
  auto m = parseOrDie(R"(HloModule attrs
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p)
}
ENTRY %e (a: f32[4,8], b: f32[8,16]) -> f32[4,16] {
  %a = f32[4,8]{1,0} parameter(0), metadata={op_type="Param" op_name="x/\"quoted\"" source_file="model.py" source_line=12 stack_frame_id=3}
  %b = f32[8,16]{1,0} parameter(1), sharding={devices=[2,1]0,1}
  %d = f32[4,16]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, backend_config="{\"alpha\":1}"
  %s = f32[2,4]{1,0} slice(%a), slice={[0:4:2], [0:8:2]}
  %pd = f32[6,10]{1,0} pad(%a, %z), padding=1_1x0_2_0
  %z = f32[] constant(0)
  %cv = f32[4,8]{1,0} convolution(%a, %a), window={size=3x1 stride=2x1 pad=1_1x0_0 rhs_reversal=1x0}, dim_labels=b0f_0io->b0f
  %cmp = pred[4,8]{1,0} compare(%a, %a), direction=LT, type=TOTALORDER
  %f = f32[4]{0} fusion(%z4), kind=kLoop, calls=%fused
  %z4 = f32[4]{0} broadcast(%z), dimensions={}
  %cc = f32[4]{0} custom-call(%z4), custom_call_target="my$target", api_version=API_VERSION_STATUS_RETURNING, frontend_attributes={_xla_x="1"}
  %mystery = f32[4]{0} brand-new-op(%z4), some_attr={a, b}
  ROOT %r = f32[4,16]{1,0} add(%d, %d), control-predecessors={%cc}
}
)");
  ASSERT_TRUE(m);
  HloComputation* e = m->entry();
  const OpMetadata* md = e->findInstruction("a")->metadata();
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->opType, "Param");
  EXPECT_EQ(md->opName, "x/\"quoted\"");
  EXPECT_EQ(md->sourceFile, "model.py");
  EXPECT_EQ(md->sourceLine, 12);
  EXPECT_EQ(md->extra, "stack_frame_id=3");
  EXPECT_EQ(e->findInstruction("b")->attributes().sharding, "{devices=[2,1]0,1}");
  const auto& dot = e->findInstruction("d")->attributes().dot;
  ASSERT_TRUE(dot);
  EXPECT_EQ(dot->lhsContracting, std::vector<int64_t>{1});
  EXPECT_EQ(dot->rhsContracting, std::vector<int64_t>{0});
  EXPECT_EQ(e->findInstruction("d")->attributes().backendConfig, R"("{\"alpha\":1}")");
  const auto& slice = e->findInstruction("s")->attributes().slice;
  ASSERT_TRUE(slice);
  EXPECT_EQ((*slice)[1], (SliceDim{0, 8, 2}));
  const auto& pad = e->findInstruction("pd")->attributes().padding;
  ASSERT_TRUE(pad);
  EXPECT_EQ((*pad)[1], (PaddingDim{0, 2, 0}));
  const auto& window = e->findInstruction("cv")->attributes().window;
  ASSERT_TRUE(window);
  ASSERT_EQ(window->dims.size(), 2u);
  EXPECT_EQ(window->dims[0].size, 3);
  EXPECT_EQ(window->dims[0].stride, 2);
  EXPECT_EQ(window->dims[0].padLow, 1);
  EXPECT_TRUE(window->dims[0].reversal);
  EXPECT_EQ(*e->findInstruction("cv")->attributes().findRaw("dim_labels"), "b0f_0io->b0f");
  EXPECT_EQ(e->findInstruction("cmp")->attributes().direction, ComparisonDirection::kLt);
  EXPECT_EQ(*e->findInstruction("cmp")->attributes().findRaw("type"), "TOTALORDER");
  EXPECT_EQ(e->findInstruction("f")->attributes().fusionKind, FusionKind::kLoop);
  EXPECT_EQ(e->findInstruction("f")->fusedComputation(), m->findComputation("fused"));
  EXPECT_TRUE(m->findComputation("fused")->isFusionComputation());
  EXPECT_EQ(e->findInstruction("cc")->attributes().customCallTarget, "my$target");
  HloInstruction* mystery = e->findInstruction("mystery");
  EXPECT_EQ(mystery->opcode(), HloOpcode::kUnknown);
  EXPECT_EQ(mystery->opcodeString(), "brand-new-op");
  EXPECT_EQ(*mystery->attributes().findRaw("some_attr"), "{a, b}");
  ASSERT_EQ(e->root()->controlPredecessors().size(), 1u);
  EXPECT_EQ(e->root()->controlPredecessors()[0]->name(), "cc");
  // The unknown opcode and raw attributes print back verbatim.
  EXPECT_NE(printModule(*m).find("brand-new-op(f32[4]{0} %z4), some_attr={a, b}"), std::string::npos);
}

TEST(HloParser, ControlFlowComputations) {
  auto m = parseOrDie(R"(HloModule cf
%cond (s: (s32[], f32[])) -> pred[] {
  %s = (s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[])) -> (s32[], f32[]) {
  ROOT %s = (s32[], f32[]) parameter(0)
}
%b0 (x: f32[]) -> f32[] { ROOT %x = f32[] parameter(0) }
%b1 (x: f32[]) -> f32[] { ROOT %x = f32[] negate(%y) %y = f32[] parameter(0) }
ENTRY %e (init: (s32[], f32[]), k: s32[]) -> f32[] {
  %init = (s32[], f32[]) parameter(0)
  %w = (s32[], f32[]) while(%init), condition=%cond, body=%body
  %v = f32[] get-tuple-element(%w), index=1
  %k = s32[] parameter(1)
  ROOT %c = f32[] conditional(%k, %v, %v), branch_computations={%b0, %b1}
}
)");
  ASSERT_TRUE(m);
  HloInstruction* w = m->entry()->findInstruction("w");
  EXPECT_EQ(w->calledComputation("condition")->name(), "cond");
  EXPECT_EQ(w->calledComputation("body")->name(), "body");
  const auto& refs = m->entry()->root()->calledComputationRefs();
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_TRUE(refs[0].braced);
  ASSERT_EQ(refs[0].computations.size(), 2u);
  EXPECT_EQ(refs[0].computations[1]->name(), "b1");
  // Callees come before callers in post order.
  auto order = m->computationsPostOrder();
  EXPECT_EQ(order.back(), m->entry());
}

TEST(HloParser, PostOrderPutsOperandsFirst) {
  auto m = parseOrDie(R"(HloModule po
ENTRY e {
  ROOT c = f32[] add(b, a)
  b = f32[] negate(a)
  a = f32[] parameter(0)
}
)");
  ASSERT_TRUE(m);
  auto order = m->entry()->postOrder();
  ASSERT_TRUE(order.ok());
  std::vector<std::string> names;
  for (HloInstruction* i : *order) names.push_back(i->name());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(HloParser, MissingFileNamesThePath) {
  auto m = parseHloModuleFile("/nonexistent/dir/x.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "/nonexistent/dir/x.hlo: error: cannot read: No such file or directory");
}

// XLA's shape-less form (its tests write `ROOT add = add(lhs, rhs)`): the parser infers each result from the operands,
// the attributes and the called computations, in dependency order (operands written later, computations anywhere).
TEST(HloParser, ShapelessInstructionsGetTheirInferredShapes) {
  auto m = parseOrDie(R"(
HloModule shapeless

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = add(a, b)
}

argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = compare(v0, v1), direction=GT
  v = select(gt, v0, v1)
  i = select(gt, i0, i1)
  ROOT t = tuple(v, i)
}

cond {
  st = (s32[], f32[8,16]) parameter(0)
  k = get-tuple-element(st), index=0
  lim = s32[] constant(3)
  ROOT lt = compare(k, lim), direction=LT
}

body {
  st = (s32[], f32[8,16]) parameter(0)
  k = get-tuple-element(st), index=0
  v = get-tuple-element(st), index=1
  one = s32[] constant(1)
  k1 = add(k, one)
  v1 = exponential(v)
  ROOT t = tuple(k1, v1)
}

ENTRY main {
  ROOT out = tuple(t, d, r, cat, w, am, rw, p, ds)
  x = f32[8,16] parameter(0)
  y = f32[16,4] parameter(1)
  idx = s32[8,16] parameter(2)
  zero = f32[] constant(0)
  izero = s32[] constant(0)
  n = negate(x)
  t = transpose(n), dimensions={1,0}
  d = dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = reduce(x, zero), dimensions={1}, to_apply=add_f32
  c = compare(x, n), direction=GT
  s = select(c, x, n)
  sl = slice(s), slice={[0:8:3], [1:16]}
  cat = concatenate(sl, sl), dimensions={0}
  init = tuple(izero, x)
  loop = while(init), condition=cond, body=body
  w = get-tuple-element(loop), index=1
  am = reduce(x, idx, zero, izero), dimensions={1}, to_apply=argmax
  rw = reduce-window(x, zero), window={size=2x3 stride=2x1 pad=0_0x1_1}, to_apply=add_f32
  p = pad(x, zero), padding=1_2_1x0_0
  ds = dynamic-slice(x, izero, izero), dynamic_slice_sizes={2,5}
}
)");
  ASSERT_TRUE(m);
  auto shapeOf = [&](std::string_view name) {
    const HloInstruction* inst = m->entry()->findInstruction(name);
    return inst != nullptr ? inst->shape().toString(false) : std::string("<missing>");
  };
  EXPECT_EQ(shapeOf("n"), "f32[8,16]");
  EXPECT_EQ(shapeOf("t"), "f32[16,8]");
  EXPECT_EQ(shapeOf("d"), "f32[8,4]");
  EXPECT_EQ(shapeOf("r"), "f32[8]");
  EXPECT_EQ(shapeOf("c"), "pred[8,16]");
  EXPECT_EQ(shapeOf("sl"), "f32[3,15]");
  EXPECT_EQ(shapeOf("cat"), "f32[6,15]");
  EXPECT_EQ(shapeOf("loop"), "(s32[], f32[8,16])");
  EXPECT_EQ(shapeOf("w"), "f32[8,16]");
  EXPECT_EQ(shapeOf("am"), "(f32[8], s32[8])");
  EXPECT_EQ(shapeOf("rw"), "f32[4,16]");
  EXPECT_EQ(shapeOf("p"), "f32[18,16]");
  EXPECT_EQ(shapeOf("ds"), "f32[2,5]");
  EXPECT_EQ(shapeOf("out"), "(f32[16,8], f32[8,4], f32[8], f32[6,15], f32[8,16], /*index=5*/(f32[8], s32[8]), f32[4,16], "
                            "f32[18,16], f32[2,5])");
  EXPECT_EQ(m->findComputation("add_f32")->root()->shape().toString(false), "f32[]");
}

}  // namespace
}  // namespace fusionscope::core
