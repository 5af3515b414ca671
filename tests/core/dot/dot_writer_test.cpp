#include "core/dot/dot_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/dot/scope_groups.h"
#include "core/text/hlo_parser.h"
#include "tests/common/source_paths.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDotBinary = "/usr/bin/dot";

std::unique_ptr<HloModule> parse(std::string_view text) {
  auto module = parseHloModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.message();
  if (!module.ok()) return nullptr;
  return std::move(module).value();
}

// The statement line of the node drawn for instruction `name` (clusters carry fs_name too, but on a line
// without `[label=`). Empty when there is no such node.
std::string nodeLine(const std::string& dot, std::string_view name) {
  std::string key = "fs_name=\"" + std::string(name) + "\"";
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" [label=<") != std::string::npos && line.find(key) != std::string::npos) return line;
  }
  return {};
}

// The node id (`n3`) of instruction `name`.
std::string nodeId(const std::string& dot, std::string_view name) {
  std::string line = nodeLine(dot, name);
  size_t start = line.find_first_not_of(' ');
  if (start == std::string::npos) return {};
  return line.substr(start, line.find(' ', start) - start);
}

std::vector<std::string> edgeLines(const std::string& dot, const std::string& from, const std::string& to) {
  std::vector<std::string> result;
  std::string prefix = "  " + from + " -> " + to;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0 &&
        (line.size() == prefix.size() || line[prefix.size()] == ' ' || line[prefix.size()] == ';')) {
      result.push_back(line);
    }
  }
  return result;
}

// The text of the `subgraph cluster_N { ... }` block whose fs_name is `name`, nested blocks included.
std::string clusterBlock(const std::string& dot, std::string_view name) {
  size_t attr = dot.find("; fs_name=\"" + std::string(name) + "\"; fs_opcode=\"fusion\"");
  if (attr == std::string::npos) return {};
  size_t open = dot.rfind("subgraph cluster_", attr);
  if (open == std::string::npos) return {};
  int depth = 0;
  for (size_t i = dot.find('{', open); i < dot.size(); ++i) {
    // Braces also occur inside labels (`dims={0}`), but always balanced, so counting still works.
    if (dot[i] == '{') ++depth;
    if (dot[i] == '}' && --depth == 0) return dot.substr(open, i + 1 - open);
  }
  return {};
}

// Runs Graphviz on `dot`; returns its exit status and fills `errors` with what it printed. `engine` lets the
// caller pick a layout that scales when dot's own layered layout would take minutes on a huge graph.
int runGraphviz(const std::string& dot, const std::string& engine, std::string& errors) {
  fs::path dir = fs::temp_directory_path();
  // ctest may run several test processes at once, so the file names carry the process id.
  static int counter = 0;
  std::string stem = "fs_dot_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  fs::path input = dir / (stem + ".dot");
  fs::path log = dir / (stem + ".err");
  {
    std::ofstream out(input, std::ios::binary);
    out << dot;
  }
  std::string command = std::string(kDotBinary) + " -K" + engine + " -Tsvg -o /dev/null '" + input.string() + "' 2> '" +
                        log.string() + "'";
  int status = std::system(command.c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  errors = text.str();
  fs::remove(input);
  fs::remove(log);
  return status;
}

constexpr std::string_view kExample = R"(
HloModule m
%add_f32 (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %a = f32[] add(%x, %y)
}
%fused (p0: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  ROOT %e = f32[4]{0} exponential(%p0)
}
ENTRY %main (a: f32[4]) -> f32[] {
  %a = f32[4]{0} parameter(0)
  %f = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%f, %zero), dimensions={0}, to_apply=%add_f32
}
)";

TEST(DotWriterTest, WritesDigraphWithTitleAndDefaults) {
  auto module = parse(kExample);
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  EXPECT_EQ(dot.rfind("digraph G {\n", 0), 0u) << dot;
  EXPECT_NE(dot.find("rankdir=TB"), std::string::npos);
  EXPECT_NE(dot.find("label=<m, computation main>"), std::string::npos) << dot;
  EXPECT_NE(dot.find("node [shape=rect style=\"rounded,filled\" fontname=\"Helvetica\""), std::string::npos);

  DotOptions options;
  options.title = "before <fusion> & \"after\"";
  std::string titled = writeDot(*module, options);
  EXPECT_NE(titled.find("label=<before &lt;fusion&gt; &amp; &quot;after&quot;>"), std::string::npos) << titled;
}

TEST(DotWriterTest, ColoursNodesByCategory) {
  auto module = parse(R"(
HloModule colours
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
%cond (c: (s32[], f32[4])) -> pred[] {
  %c = (s32[], f32[4]) parameter(0)
  ROOT %t = pred[] constant(true)
}
%body (b: (s32[], f32[4])) -> (s32[], f32[4]) {
  ROOT %b = (s32[], f32[4]) parameter(0)
}
ENTRY %main (p: f32[4], q: f32[4,4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4,4]{1,0} parameter(1)
  %ew = f32[4]{0} multiply(%p, %p)
  %bc = f32[4,4]{1,0} broadcast(%ew), dimensions={0}
  %init = f32[] constant(0)
  %red = f32[4]{0} reduce(%bc, %init), dimensions={1}, to_apply=%add
  %mm = f32[4]{0} dot(%q, %red), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ar = f32[4]{0} all-reduce(%mm), to_apply=%add
  %cc = f32[4]{0} custom-call(%ar), custom_call_target="my_kernel"
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %rn = f32[4]{0} rng(%lo, %hi), distribution=rng_uniform
  %i = s32[] constant(0)
  %tup = (s32[], f32[4]{0}) tuple(%i, %cc)
  %wh = (s32[], f32[4]{0}) while(%tup), condition=%cond, body=%body
  %gte = f32[4]{0} get-tuple-element(%wh), index=1
  %bn = f32[4]{0} batch-norm-inference(%gte, %p, %p, %p, %p), epsilon=0.001, feature_index=0
  ROOT %out = f32[4]{0} add(%bn, %rn)
}
)");
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  struct Expected {
    const char* name;
    const char* fill;
    const char* border;
    const char* category;
  };
  const Expected kExpected[] = {
      {"p", "#ffe0b2", "#cbae82", "parameter"},      {"ew", "white", "#9e9e9e", "elementwise"},
      {"bc", "#c8e6c9", "#97b498", "data-movement"}, {"red", "#e1bee7", "#af8eb5", "reduction"},
      {"mm", "#1565c0", "#003c8f", "contraction"},   {"ar", "#bcaaa4", "#8c7b75", "collective"},
      {"cc", "#ffcdd2", "#cb9ca1", "custom-call"},   {"rn", "#ffb74d", "#c88719", "random"},
      {"tup", "white", "#9e9e9e", "tuple"},          {"wh", "#2e7d32", "#005005", "control-flow"},
      {"gte", "white", "#9e9e9e", "tuple"},          {"bn", "#fff9c4", "#cbc693", "normalization"},
  };
  for (const Expected& e : kExpected) {
    std::string line = nodeLine(dot, e.name);
    ASSERT_FALSE(line.empty()) << "no node for " << e.name << "\n" << dot;
    EXPECT_NE(line.find(std::string("fillcolor=\"") + e.fill + "\""), std::string::npos) << line;
    EXPECT_NE(line.find(std::string("color=\"") + e.border + "\""), std::string::npos) << line;
    EXPECT_NE(line.find(std::string("fs_category=\"") + e.category + "\""), std::string::npos) << line;
  }
  // Dark fills need a light font to stay readable.
  EXPECT_NE(nodeLine(dot, "mm").find("fontcolor=\"white\""), std::string::npos);
  EXPECT_NE(nodeLine(dot, "wh").find("fontcolor=\"white\""), std::string::npos);
  EXPECT_EQ(nodeLine(dot, "ew").find("fontcolor"), std::string::npos);

  // Opcode details in the labels.
  EXPECT_NE(nodeLine(dot, "mm").find("contracting lhs={1} rhs={0}"), std::string::npos);
  EXPECT_NE(nodeLine(dot, "bc").find("broadcast dims={0}"), std::string::npos);
  EXPECT_NE(nodeLine(dot, "red").find("reduce dims={1}<br/>to_apply=add"), std::string::npos);
  EXPECT_NE(nodeLine(dot, "cc").find("custom-call my_kernel"), std::string::npos);
  EXPECT_NE(nodeLine(dot, "gte").find("get-tuple-element 1"), std::string::npos);
  EXPECT_NE(nodeLine(dot, "wh").find("condition=cond<br/>body=body"), std::string::npos);
  EXPECT_NE(nodeLine(dot, "p").find("parameter 0<br/>f32[4]{0}"), std::string::npos);
}

TEST(DotWriterTest, DrawsFusionAsClusterAndRoutesEdgesThroughFusedParametersAndRoot) {
  auto module = parse(kExample);
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);

  std::string cluster = clusterBlock(dot, "f");
  ASSERT_FALSE(cluster.empty()) << dot;
  EXPECT_NE(cluster.find("label=<<b>f</b><br/>fusion kLoop<br/>f32[4]{0}>"), std::string::npos) << cluster;
  EXPECT_NE(cluster.find("fs_name=\"p0\""), std::string::npos) << cluster;
  EXPECT_NE(cluster.find("fs_name=\"e\""), std::string::npos) << cluster;
  EXPECT_NE(cluster.find("fs_computation=\"fused\""), std::string::npos) << cluster;
  EXPECT_EQ(cluster.find("fs_name=\"a\""), std::string::npos) << "entry parameter drawn inside the fusion";
  EXPECT_EQ(cluster.find("fs_name=\"r\""), std::string::npos) << "fusion user drawn inside the fusion";
  // The fusion itself is the cluster, not a node.
  EXPECT_TRUE(nodeLine(dot, "f").empty()) << dot;

  std::string a = nodeId(dot, "a");
  std::string p0 = nodeId(dot, "p0");
  std::string e = nodeId(dot, "e");
  std::string r = nodeId(dot, "r");
  EXPECT_EQ(edgeLines(dot, a, p0).size(), 1u) << "operand 0 of the fusion enters at fused parameter 0\n" << dot;
  EXPECT_EQ(edgeLines(dot, p0, e).size(), 1u) << dot;
  ASSERT_EQ(edgeLines(dot, e, r).size(), 1u) << "users of the fusion leave from the fused root\n" << dot;
  EXPECT_NE(edgeLines(dot, e, r)[0].find("headlabel=\"0\""), std::string::npos);
  // The fused root is marked but thinner than the entry root.
  EXPECT_NE(nodeLine(dot, "e").find("<i>ROOT</i> <b>e</b>"), std::string::npos);
  EXPECT_NE(nodeLine(dot, "e").find("penwidth=2"), std::string::npos);
}

TEST(DotWriterTest, ExpandsNestedFusionsAndFeedsInlinedConstantsToFusedParameters) {
  auto module = parse(R"(
HloModule nested
%inner (i0: f32[4]) -> f32[4] {
  %i0 = f32[4]{0} parameter(0)
  ROOT %neg = f32[4]{0} negate(%i0)
}
%outer (o0: f32[4], o1: f32[]) -> f32[4] {
  %o0 = f32[4]{0} parameter(0)
  %o1 = f32[] parameter(1)
  %bo = f32[4]{0} broadcast(%o1), dimensions={}
  %mul = f32[4]{0} multiply(%o0, %bo)
  ROOT %in = f32[4]{0} fusion(%mul), kind=kLoop, calls=%inner
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %two = f32[] constant(2)
  %out = f32[4]{0} fusion(%x, %two), kind=kLoop, calls=%outer
  ROOT %abs = f32[4]{0} abs(%out)
}
)");
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  std::string outer = clusterBlock(dot, "out");
  std::string inner = clusterBlock(dot, "in");
  ASSERT_FALSE(outer.empty()) << dot;
  ASSERT_FALSE(inner.empty()) << dot;
  EXPECT_NE(outer.find(inner), std::string::npos) << "inner fusion cluster not nested in the outer one";
  EXPECT_NE(inner.find("fs_name=\"neg\""), std::string::npos);
  EXPECT_EQ(outer.find("fs_name=\"x\""), std::string::npos);

  EXPECT_TRUE(nodeLine(dot, "two").empty()) << "scalar constant drawn as a node";
  EXPECT_NE(nodeLine(dot, "o1").find("operand 1 = 2"), std::string::npos) << nodeLine(dot, "o1");
  EXPECT_EQ(edgeLines(dot, nodeId(dot, "x"), nodeId(dot, "o0")).size(), 1u) << dot;
  EXPECT_EQ(edgeLines(dot, nodeId(dot, "mul"), nodeId(dot, "i0")).size(), 1u) << dot;
  // `abs` uses `out`, whose root is the inner fusion, whose root is `neg`.
  EXPECT_EQ(edgeLines(dot, nodeId(dot, "neg"), nodeId(dot, "abs")).size(), 1u) << dot;
}

TEST(DotWriterTest, InlinesScalarConstantsIntoUserLabels) {
  auto module = parse(kExample);
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  EXPECT_TRUE(nodeLine(dot, "zero").empty()) << dot;
  std::string reduce = nodeLine(dot, "r");
  EXPECT_NE(reduce.find("operand 1 = 0<br/>"), std::string::npos) << reduce;
  EXPECT_NE(reduce.find("to_apply=add_f32"), std::string::npos) << reduce;

  // With inlining off the constant is an ordinary node with an edge.
  DotOptions options;
  options.inlineConstantMaxElements = 0;
  std::string plain = writeDot(*module, options);
  ASSERT_FALSE(nodeLine(plain, "zero").empty()) << plain;
  EXPECT_NE(nodeLine(plain, "zero").find("fs_category=\"constant\""), std::string::npos);
  EXPECT_EQ(edgeLines(plain, nodeId(plain, "zero"), nodeId(plain, "r")).size(), 1u) << plain;
}

TEST(DotWriterTest, DrawsLargeRootAndUnusedConstantsAsNodes) {
  auto module = parse(R"(
HloModule consts
ENTRY %main () -> f32[3] {
  %unused = f32[] constant(7)
  %elided = f32[] constant({...})
  %big = f32[3]{0} constant({1, 2, 3})
  %neg = f32[3]{0} negate(%big)
  %scale = f32[3]{0} multiply(%neg, %elided)
  ROOT %half = f32[] constant(0.5)
}
)");
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  std::string big = nodeLine(dot, "big");
  ASSERT_FALSE(big.empty()) << dot;
  EXPECT_NE(big.find("f32[3]{0}<br/>{1, 2, 3}"), std::string::npos) << big;
  EXPECT_FALSE(nodeLine(dot, "unused").empty()) << "a constant without users must stay visible";
  EXPECT_NE(nodeLine(dot, "half").find("penwidth=3"), std::string::npos) << "root constant";
  // An elided literal has no value to show, so its user names it.
  EXPECT_TRUE(nodeLine(dot, "elided").empty());
  EXPECT_NE(nodeLine(dot, "scale").find("operand 1 = elided"), std::string::npos) << nodeLine(dot, "scale");
}

TEST(DotWriterTest, LabelsEdgesOfMultiOperandUsersWithOperandIndex) {
  auto module = parse(R"(
HloModule edges
ENTRY %main (a: f32[2], b: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %b = f32[2]{0} parameter(1)
  %sq = f32[2]{0} multiply(%a, %a)
  %n = f32[2]{0} negate(%b)
  ROOT %s = f32[2]{0} subtract(%n, %sq)
}
)");
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  std::string a = nodeId(dot, "a");
  std::string b = nodeId(dot, "b");
  std::string sq = nodeId(dot, "sq");
  std::string n = nodeId(dot, "n");
  std::string s = nodeId(dot, "s");

  std::vector<std::string> twice = edgeLines(dot, a, sq);
  ASSERT_EQ(twice.size(), 2u) << "an operand used twice gives two edges\n" << dot;
  EXPECT_NE(twice[0].find("headlabel=\"0\""), std::string::npos);
  EXPECT_NE(twice[1].find("headlabel=\"1\""), std::string::npos);

  std::vector<std::string> single = edgeLines(dot, b, n);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].find("headlabel"), std::string::npos) << "single-operand edges carry no index";

  ASSERT_EQ(edgeLines(dot, n, s).size(), 1u);
  EXPECT_NE(edgeLines(dot, n, s)[0].find("headlabel=\"0\""), std::string::npos);
  ASSERT_EQ(edgeLines(dot, sq, s).size(), 1u);
  EXPECT_NE(edgeLines(dot, sq, s)[0].find("headlabel=\"1\""), std::string::npos);
  // Data flows downwards: no edge from a user back to its operand.
  EXPECT_TRUE(edgeLines(dot, s, n).empty());
}

TEST(DotWriterTest, DrawsControlDependenciesDashed) {
  auto module = parse(R"(
HloModule control
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %first = f32[2]{0} negate(%a)
  ROOT %second = f32[2]{0} abs(%a), control-predecessors={%first}
}
)");
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  std::vector<std::string> edges = edgeLines(dot, nodeId(dot, "first"), nodeId(dot, "second"));
  ASSERT_EQ(edges.size(), 1u) << dot;
  EXPECT_NE(edges[0].find("style=dashed"), std::string::npos) << edges[0];
}

TEST(DotWriterTest, MarksRootWithThickBorder) {
  auto module = parse(kExample);
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  std::string root = nodeLine(dot, "r");
  EXPECT_NE(root.find("<i>ROOT</i> <b>r</b>"), std::string::npos) << root;
  EXPECT_NE(root.find("penwidth=3"), std::string::npos) << root;
  EXPECT_EQ(nodeLine(dot, "a").find("penwidth"), std::string::npos);
}

TEST(DotWriterTest, EscapesNamesMetadataAndAttributes) {
  auto module = parse(R"(
HloModule esc
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  ROOT %cc = f32[2]{0} custom-call(%a), custom_call_target="a<b>&\"c", metadata={op_type="Mul<\"x\">" op_name="jit(f)/mul\\N" source_file="dir/<file>.py" source_line=12}
}
)");
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  std::string line = nodeLine(dot, "cc");
  ASSERT_FALSE(line.empty()) << dot;
  EXPECT_NE(line.find("custom-call a&lt;b&gt;&amp;&quot;c<br/>"), std::string::npos) << line;
  EXPECT_NE(line.find("op_type: Mul<\\\"x\\\">"), std::string::npos) << line;
  // A backslash is doubled so Graphviz does not expand `\N` to the node name.
  EXPECT_NE(line.find("op_name: jit(f)/mul\\\\N"), std::string::npos) << line;
  EXPECT_NE(line.find("\\ndir/<file>.py:12\""), std::string::npos) << line;

  std::string errors;
  if (fs::exists(kDotBinary)) {
    EXPECT_EQ(runGraphviz(dot, "dot", errors), 0) << errors << "\n" << dot;
    EXPECT_TRUE(errors.empty()) << errors;
  }
}

TEST(DotWriterTest, ShowsMetadataInTooltip) {
  auto module = parse(R"(
HloModule meta
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(%a), metadata={op_type="Neg" op_name="jit(f)/neg" source_file="f.py" source_line=3}
}
)");
  ASSERT_NE(module, nullptr);
  std::string line = nodeLine(writeDot(*module), "n");
  EXPECT_NE(line.find("tooltip=\"n = negate\\nop_type: Neg\\nop_name: jit(f)/neg\\nf.py:3\""), std::string::npos)
      << line;
}

TEST(DotWriterTest, AbbreviatesLongTupleShapes) {
  std::string text =
      "HloModule tuples\nENTRY %main (a: f32[2], b: s32[]) -> f32[2] {\n"
      "  %a = f32[2]{0} parameter(0)\n  %b = s32[] parameter(1)\n  %t = (";
  std::string operands;
  for (int i = 0; i < 40; ++i) {
    text += i == 0 ? "" : ", ";
    text += i % 2 == 0 ? "f32[2]{0}" : "s32[]";
    operands += i == 0 ? "" : ", ";
    operands += i % 2 == 0 ? "%a" : "%b";
  }
  text += ") tuple(" + operands + ")\n  ROOT %g = f32[2]{0} get-tuple-element(%t), index=38\n}\n";
  auto module = parse(text);
  ASSERT_NE(module, nullptr);
  std::string line = nodeLine(writeDot(*module), "t");
  EXPECT_NE(line.find("<br/>(f32[2], s32[] ... 40 elements)>"), std::string::npos) << line;
}

TEST(DotWriterTest, DrawsUnknownOpcodesAsGenericNodes) {
  auto module = parse(R"(
HloModule unknown
ENTRY %main (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %w = f32[2]{0} my-weird-op(%a), some_attr=3
  ROOT %n = f32[2]{0} negate(%w)
}
)");
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  std::string line = nodeLine(dot, "w");
  ASSERT_FALSE(line.empty()) << dot;
  EXPECT_NE(line.find("<b>w</b><br/>my-weird-op<br/>f32[2]{0}"), std::string::npos) << line;
  EXPECT_NE(line.find("fs_opcode=\"my-weird-op\""), std::string::npos) << line;
  EXPECT_NE(line.find("fs_category=\"other\""), std::string::npos) << line;
  EXPECT_NE(line.find("dashed"), std::string::npos) << line;
  EXPECT_EQ(edgeLines(dot, nodeId(dot, "a"), nodeId(dot, "w")).size(), 1u);
  EXPECT_EQ(edgeLines(dot, nodeId(dot, "w"), nodeId(dot, "n")).size(), 1u);
}

TEST(DotWriterTest, IsDeterministic) {
  auto first = parse(kExample);
  auto second = parse(kExample);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  std::string dot = writeDot(*first);
  EXPECT_EQ(dot, writeDot(*first));
  EXPECT_EQ(dot, writeDot(*second)) << "output depends on addresses, not only on the module";
}

TEST(DotWriterTest, WritesValidGraphForModuleWithoutEntry) {
  HloModule module("empty");
  std::string dot = writeDot(module);
  EXPECT_NE(dot.find("digraph G {"), std::string::npos);
  EXPECT_NE(dot.find("no ENTRY computation"), std::string::npos);
  std::string errors;
  if (fs::exists(kDotBinary)) {
    EXPECT_EQ(runGraphviz(dot, "dot", errors), 0) << errors;
  }
}

// Checks scale rather than speed (the benchmark measures that): a 20k-instruction chain with one fusion per
// step draws every node and edge, so nothing is silently dropped on big modules.
TEST(DotWriterTest, HandlesLargeModules) {
  constexpr int kSteps = 10000;
  std::string text =
      "HloModule big\n%f (q: f32[8]) -> f32[8] {\n  %q = f32[8]{0} parameter(0)\n"
      "  ROOT %t = f32[8]{0} tanh(%q)\n}\nENTRY %main (p: f32[8]) -> f32[8] {\n"
      "  %v0 = f32[8]{0} parameter(0)\n";
  for (int i = 1; i <= kSteps; ++i) {
    std::string prev = "%v" + std::to_string(i - 1);
    text += "  %n" + std::to_string(i) + " = f32[8]{0} negate(" + prev + ")\n";
    text += std::string(i == kSteps ? "  ROOT " : "  ") + "%v" + std::to_string(i) + " = f32[8]{0} fusion(%n" +
            std::to_string(i) + "), kind=kLoop, calls=%f\n";
  }
  text += "}\n";
  auto module = parse(text);
  ASSERT_NE(module, nullptr);
  std::string dot = writeDot(*module);
  size_t nodes = 0;
  size_t edges = 0;
  size_t clusters = 0;
  for (size_t at = dot.find(" [label=<"); at != std::string::npos; at = dot.find(" [label=<", at + 1)) ++nodes;
  for (size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1)) ++edges;
  for (size_t at = dot.find("subgraph cluster_"); at != std::string::npos; at = dot.find("subgraph cluster_", at + 1)) {
    ++clusters;
  }
  // Parameter, then per step a negate and a fusion's two fused nodes.
  EXPECT_EQ(nodes, 1u + 3u * kSteps);
  // Per step: into negate, negate → fused parameter, fused parameter → tanh.
  EXPECT_EQ(edges, 3u * kSteps);
  EXPECT_EQ(clusters, static_cast<size_t>(kSteps));
}

// Stock `dot` must accept what we write for every module of the shared corpus, without a single warning. The
// big training graphs lay out in seconds only because long edges are cut into stubs (see LongEdges tests).
TEST(DotWriterTest, GraphvizAcceptsEveryCorpusModule) {
  if (!fs::exists(kDotBinary)) GTEST_SKIP() << kDotBinary << " not found; install graphviz to run this test";
  fs::path corpus = fs::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus" / "hlo";
  if (!fs::is_directory(corpus)) GTEST_SKIP() << "corpus folder " << corpus << " is absent";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (entry.path().extension() == ".hlo" || entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no .hlo files in " << corpus;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto module = parseHloModule(text.str(), file.string());
    ASSERT_TRUE(module.ok()) << module.message();
    std::string dot = writeDot(**module);
    std::string engine = "dot";
    std::string errors;
    EXPECT_EQ(runGraphviz(dot, engine, errors), 0) << engine << ": " << errors;
    EXPECT_TRUE(errors.empty()) << engine << ": " << errors;
  }
}

// A chain long enough to pass DotOptions::longEdgeMinInstructions, where `first` is used right away and again
// at the very end, and `late` (a parameter) is used only at the end.
std::string longChainModule(int steps) {
  std::string text = "HloModule chain\nENTRY e {\n  p = f32[4] parameter(0)\n  late = f32[4] parameter(1)\n";
  text += "  first = f32[4] negate(p)\n  c0 = f32[4] exponential(first)\n";
  for (int i = 1; i < steps; ++i) text += fmt::format("  c{} = f32[4] exponential(c{})\n", i, i - 1);
  text += fmt::format("  tail = f32[4] add(c{}, first)\n", steps - 1);
  text += "  ROOT out = f32[4] multiply(tail, late)\n}\n";
  return text;
}

size_t countOf(const std::string& text, std::string_view needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

TEST(DotWriterTest, LongEdgesInBigGraphsBecomeStubsBesideTheUser) {
  auto module = parse(longChainModule(250));
  ASSERT_TRUE(module);
  std::string dot = writeDot(*module);
  // `first` keeps its short edge into c0, and reaches `tail` through a stub right above it.
  std::string first = nodeId(dot, "first");
  std::string tail = nodeId(dot, "tail");
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(edgeLines(dot, first, nodeId(dot, "c0")).size(), 1u);
  EXPECT_TRUE(edgeLines(dot, first, tail).empty());
  EXPECT_EQ(countOf(dot, "fs_stub_of=\"first\""), 1u);
  EXPECT_NE(dot.find("label=<from <b>first</b>>"), std::string::npos);
  std::vector<std::string> stubEdges = edgeLines(dot, "s0", tail);
  ASSERT_EQ(stubEdges.size(), 1u);
  EXPECT_NE(stubEdges[0].find("headlabel=\"1\""), std::string::npos) << stubEdges[0];
  // `late` is used only far down: it is drawn once, beside its user, not as an island at the top.
  EXPECT_EQ(countOf(dot, "fs_name=\"late\""), 1u);
  EXPECT_NE(nodeLine(dot, "late").find("fs_copy=\"true\""), std::string::npos);
  // Every other edge of the chain stays whole.
  EXPECT_EQ(countOf(dot, "fs_stub_of="), 1u);
}

TEST(DotWriterTest, SmallGraphsKeepEveryEdgeWhole) {
  auto module = parse(longChainModule(50));
  ASSERT_TRUE(module);
  std::string dot = writeDot(*module);
  EXPECT_EQ(countOf(dot, "fs_stub_of="), 0u);
  EXPECT_EQ(countOf(dot, "fs_copy="), 0u);
  EXPECT_EQ(edgeLines(dot, nodeId(dot, "first"), nodeId(dot, "tail")).size(), 1u);
  // The same when cutting is switched off for a big one.
  auto big = parse(longChainModule(250));
  DotOptions whole;
  whole.maxEdgeSpan = 0;
  EXPECT_EQ(countOf(writeDot(*big, whole), "fs_stub_of="), 0u);
}

}  // namespace
}  // namespace fusionscope::core

// Scope grouping is a transformation of the DOT graph, rendered by the one writer: collapsed groups are single
// nodes with merged, counted edges; expanded groups are clusters around what they hold.
namespace fusionscope::core {
namespace {

constexpr std::string_view kScoped = R"(
HloModule scoped
ENTRY %main (p0: f32[8], p1: f32[8]) -> f32[8] {
  %p0 = f32[8] parameter(0), metadata={op_name="jit(f)/layer0/x"}
  %p1 = f32[8] parameter(1)
  %a = f32[8] add(%p0, %p1), metadata={op_name="jit(f)/layer0/add"}
  %m = f32[8] multiply(%a, %p1), metadata={op_name="jit(f)/layer0/mul"}
  %s = f32[8] subtract(%a, %m), metadata={op_name="jit(f)/layer1/sub"}
  %e = f32[8] exponential(%s), metadata={op_name="jit(f)/layer1/exp"}
  ROOT %r = f32[8] add(%e, %m), metadata={op_name="jit(f)/out/add"}
}
)";

TEST(ScopeGroupingTest, CollapsedGroupsAreNodesWithCountedEdgesAndTheWriterDrawsThem) {
  auto module = parse(kScoped);
  ASSERT_NE(module, nullptr);
  const ScopeTree tree = buildScopeTree(*module->entry());
  ASSERT_EQ(tree.source, ScopeTree::Source::kOpName);
  const DotGraph grouped = groupByScope(buildDotGraph(*module), tree, {"jit(f)"});

  ASSERT_EQ(grouped.clusters.size(), 1u);
  EXPECT_EQ(grouped.clusters[0].group, "jit(f)");
  EXPECT_EQ(grouped.clusters[0].fusion, nullptr);
  auto groupNode = [&](const std::string& path) {
    for (size_t i = 0; i < grouped.nodes.size(); ++i)
      if (grouped.nodes[i].kind == DotNode::Kind::kGroup && grouped.nodes[i].group == path) return static_cast<int>(i);
    return -1;
  };
  const int layer0 = groupNode("jit(f)/layer0");
  const int layer1 = groupNode("jit(f)/layer1");
  ASSERT_GE(layer0, 0);
  ASSERT_GE(layer1, 0);
  EXPECT_EQ(grouped.nodes[static_cast<size_t>(layer0)].cluster, 0);
  EXPECT_EQ(grouped.nodes[static_cast<size_t>(layer0)].lines.front(), "layer0");
  // Hidden instructions point at their group; an unscoped parameter sits with its first user.
  EXPECT_EQ(grouped.heldBy.at("a"), layer0);
  EXPECT_EQ(grouped.heldBy.at("p1"), layer0);
  EXPECT_EQ(grouped.heldBy.at("s"), layer1);
  // s reads a and m: one edge layer0 -> layer1 standing for two.
  int merged = 0;
  for (const DotEdge& edge : grouped.edges) {
    EXPECT_NE(edge.from, edge.to);
    if (edge.from == layer0 && edge.to == layer1) merged = edge.count;
  }
  EXPECT_EQ(merged, 2);

  const std::string dot = renderDot(grouped);
  EXPECT_NE(dot.find("fs_group=\"jit(f)/layer0\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph cluster_0"), std::string::npos);
  EXPECT_NE(dot.find("headlabel=\"×2\""), std::string::npos) << dot;
  EXPECT_TRUE(nodeLine(dot, "a").empty()) << "a is inside the collapsed layer0";
  EXPECT_FALSE(nodeLine(dot, "r").empty()) << "the ROOT stays on its own";
  if (fs::exists(kDotBinary)) {
    std::string errors;
    EXPECT_EQ(runGraphviz(dot, "dot", errors), 0) << errors;
    EXPECT_TRUE(errors.empty()) << errors;
  }

  // layer0 expanded too: its instructions are drawn inside its box, which sits in jit(f)'s.
  const DotGraph open = groupByScope(buildDotGraph(*module), tree, {"jit(f)", "jit(f)/layer0"});
  ASSERT_EQ(open.clusters.size(), 2u);
  EXPECT_EQ(open.clusters[1].group, "jit(f)/layer0");
  EXPECT_EQ(open.clusters[1].parent, 0);
  EXPECT_EQ(open.heldBy.count("a"), 0u);
  const std::string openDot = renderDot(open);
  EXPECT_FALSE(nodeLine(openDot, "a").empty());
  EXPECT_FALSE(nodeLine(openDot, "m").empty());
  // Nothing expanded: the top group is one node and nothing else but the ROOT and its operands' edges.
  const DotGraph closed = groupByScope(buildDotGraph(*module), tree, {});
  EXPECT_TRUE(closed.clusters.empty());
  EXPECT_EQ(closed.nodes.size(), 2u);  // jit(f) and the ROOT
}

// A JAX program without named layers: every op directly in jit(f). Its 240 ops are cut into stretches of about
// 40, so the first view is a few nodes, not one box that opens into hundreds; a later stage (ops removed, one added)
// keeps the stretches by instruction name.
TEST(ScopeGroupingTest, ABigFlatScopeIsCutIntoStretchesThatHoldAcrossStages) {
  auto text = [](int removed) {
    std::string hlo = "HloModule flat\nENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8] parameter(0)\n";
    std::string last = "p";
    for (int i = 0; i < 240; ++i) {
      if (i >= 100 && i < 100 + removed) continue;
      const char* op = i % 3 == 0 ? "multiply" : "add";
      hlo += fmt::format("  %v{} = f32[8] {}(%{}, %p), metadata={{op_name=\"jit(f)/{}\"}}\n", i, op, last,
                         i % 3 == 0 ? "mul" : "add");
      last = fmt::format("v{}", i);
    }
    if (removed > 0) {
      hlo += fmt::format("  %new = f32[8] negate(%{}), metadata={{op_name=\"jit(f)/neg\"}}\n", last);
      last = "new";
    }
    return hlo + fmt::format("  ROOT %r = f32[8] negate(%{})\n}}\n", last);
  };
  auto first = parse(text(0));
  ASSERT_NE(first, nullptr);
  const ScopeTree reference = buildScopeTree(*first->entry());
  const int top = reference.find("jit(f)");
  ASSERT_GE(top, 0);
  const ScopeGroup& scope = reference.groups[static_cast<size_t>(top)];
  EXPECT_EQ(scope.directCount, 0) << "every op of jit(f) is in one of its stretches";
  EXPECT_GE(scope.children.size(), 4u);
  EXPECT_LE(scope.children.size(), 8u);
  for (int child : scope.children) {
    const ScopeGroup& stretch = reference.groups[static_cast<size_t>(child)];
    EXPECT_TRUE(stretch.stretch);
    EXPECT_EQ(stretch.path.rfind("jit(f)/#", 0), 0u) << stretch.path;
    EXPECT_LE(stretch.instructionCount, 60) << stretch.path;
    EXPECT_TRUE(stretch.label.rfind("mul", 0) == 0 || stretch.label.rfind("add", 0) == 0) << stretch.label;
  }
  const std::set<std::string> open = reference.autoExpanded(kFirstViewNodes);
  EXPECT_EQ(open.count("jit(f)"), 1u);
  EXPECT_LE(reference.visibleCount(open), 12);

  // A later stage: 30 ops gone, one new; each op stays in the stretch (same path) that held it, and the new one
  // (read only by the ungrouped ROOT) joins its operand's stretch.
  auto later = parse(text(30));
  ASSERT_NE(later, nullptr);
  const ScopeTree kept = buildScopeTree(*later->entry(), &reference);
  for (const auto& [inst, group] : kept.groupOf) {
    auto was = reference.groupOfName.find(inst->name());
    if (was == reference.groupOfName.end()) continue;
    EXPECT_EQ(kept.groups[static_cast<size_t>(group)].path, reference.groups[static_cast<size_t>(was->second)].path)
        << inst->name();
  }
  const HloInstruction* added = later->entry()->findInstruction("new");
  ASSERT_NE(added, nullptr);
  ASSERT_EQ(kept.groupOf.count(added), 1u);
  EXPECT_TRUE(kept.groups[static_cast<size_t>(kept.groupOf.at(added))].stretch);
}

}  // namespace
}  // namespace fusionscope::core
