#include "core/graphviz/graphviz_renderer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace fusionscope::graphviz {
namespace {

struct PngSize {
  uint32_t width = 0;
  uint32_t height = 0;
};

uint32_t readBigEndian32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

// Checks the PNG signature and that the first chunk is IHDR, then returns its width and height.
PngSize pngSize(const std::string& png) {
  static const std::string kSignature("\x89PNG\r\n\x1a\n", 8);
  EXPECT_GE(png.size(), 33u);
  if (png.size() < 33) return {};
  EXPECT_EQ(png.substr(0, 8), kSignature);
  EXPECT_EQ(readBigEndian32(png, 8), 13u);  // IHDR data length
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  return {readBigEndian32(png, 16), readBigEndian32(png, 20)};
}

std::string chain(int length) {
  std::string dot = "digraph chain {\n";
  for (int i = 0; i + 1 < length; ++i) dot += "  n" + std::to_string(i) + " -> n" + std::to_string(i + 1) + ";\n";
  return dot + "}\n";
}

std::string fan(int width) {
  std::string dot = "digraph fan {\n";
  for (int i = 0; i < width; ++i) dot += "  root -> leaf" + std::to_string(i) + ";\n";
  return dot + "}\n";
}

const NodeLayout* findNode(const GraphLayout& layout, const std::string& name) {
  for (const NodeLayout& node : layout.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

const ClusterLayout* findCluster(const GraphLayout& layout, const std::string& name) {
  for (const ClusterLayout& cluster : layout.clusters) {
    if (cluster.name == name) return &cluster;
  }
  return nullptr;
}

bool inside(PointF p, PointF lowerLeft, PointF upperRight, double slack = 0.01) {
  return p.x >= lowerLeft.x - slack && p.x <= upperRight.x + slack && p.y >= lowerLeft.y - slack &&
         p.y <= upperRight.y + slack;
}

// The whole node box, not just its center, lies in the rectangle.
bool nodeInside(const NodeLayout& node, PointF lowerLeft, PointF upperRight) {
  const PointF ll{node.center.x - node.width / 2, node.center.y - node.height / 2};
  const PointF ur{node.center.x + node.width / 2, node.center.y + node.height / 2};
  return inside(ll, lowerLeft, upperRight, 0.5) && inside(ur, lowerLeft, upperRight, 0.5);
}

double distance(PointF a, PointF b) {
  return std::hypot(a.x - b.x, a.y - b.y);
}

constexpr const char* kClusterGraph = R"(digraph G {
  subgraph cluster_fusion {
    label="fusion.1";
    a [label="add"];
    b [label="mul"];
  }
  c;
  a -> b;
  b -> c [label="f32[4]"];
})";

TEST(GraphvizRendererTest, RenderersAreAvailable) {
  EXPECT_TRUE(renderersAvailable());
}

TEST(GraphvizRendererTest, PngHasSignatureAndSaneSize) {
  StatusOr<std::string> png = renderDot("digraph { a -> b }", ImageFormat::kPng);
  ASSERT_TRUE(png.ok()) << png.message();
  const PngSize size = pngSize(*png);
  EXPECT_GT(size.width, 10u);
  EXPECT_GT(size.height, 10u);
  EXPECT_LT(size.width, 2000u);
  EXPECT_LT(size.height, 2000u);
}

TEST(GraphvizRendererTest, PngGrowsWithGraphSize) {
  StatusOr<std::string> shortChain = renderDot(chain(2), ImageFormat::kPng);
  StatusOr<std::string> longChain = renderDot(chain(8), ImageFormat::kPng);
  StatusOr<std::string> wideFan = renderDot(fan(8), ImageFormat::kPng);
  ASSERT_TRUE(shortChain.ok()) << shortChain.message();
  ASSERT_TRUE(longChain.ok()) << longChain.message();
  ASSERT_TRUE(wideFan.ok()) << wideFan.message();
  const PngSize shortSize = pngSize(*shortChain);
  const PngSize longSize = pngSize(*longChain);
  const PngSize fanSize = pngSize(*wideFan);
  EXPECT_GT(longSize.height, 3 * shortSize.height);  // 8 ranks against 2
  EXPECT_GT(fanSize.width, 4 * shortSize.width);     // 8 nodes side by side against 1
}

TEST(GraphvizRendererTest, SvgLooksWellFormed) {
  StatusOr<std::string> svg = renderDot(kClusterGraph, ImageFormat::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.message();
  const std::string& text = *svg;
  EXPECT_EQ(text.rfind("<?xml", 0), 0u) << text.substr(0, 100);
  const size_t svgTag = text.find("<svg");
  ASSERT_NE(svgTag, std::string::npos);
  const std::string openTag = text.substr(svgTag, text.find('>', svgTag) - svgTag);
  EXPECT_NE(openTag.find("width=\""), std::string::npos) << openTag;
  EXPECT_NE(openTag.find("height=\""), std::string::npos) << openTag;
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  EXPECT_GT(text.find("</svg>"), svgTag);
  EXPECT_NE(text.find("<title>a&#45;&gt;b</title>"), std::string::npos);
  EXPECT_NE(text.find(">fusion.1</text>"), std::string::npos);
  EXPECT_NE(text.find(">add</text>"), std::string::npos);
}

TEST(GraphvizRendererTest, LayoutReportsNodesEdgesAndClusters) {
  StatusOr<GraphLayout> layout = layoutDot(kClusterGraph, "cluster.dot");
  ASSERT_TRUE(layout.ok()) << layout.message();
  const PointF ll = layout->lowerLeft;
  const PointF ur = layout->upperRight;
  EXPECT_GT(ur.x - ll.x, 10);
  EXPECT_GT(ur.y - ll.y, 10);

  ASSERT_EQ(layout->nodes.size(), 3u);
  std::set<std::string> names;
  for (const NodeLayout& node : layout->nodes) {
    names.insert(node.name);
    EXPECT_GT(node.width, 20) << node.name;  // points, not inches
    EXPECT_GT(node.height, 20) << node.name;
    EXPECT_TRUE(nodeInside(node, ll, ur)) << node.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"a", "b", "c"}));
  const NodeLayout* a = findNode(*layout, "a");
  const NodeLayout* b = findNode(*layout, "b");
  const NodeLayout* c = findNode(*layout, "c");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->label, "add");
  EXPECT_FALSE(a->labelIsHtml);
  EXPECT_EQ(c->label, "\\N");
  // Rank direction top to bottom with the origin at the bottom-left: a tail sits above its head.
  EXPECT_GT(a->center.y, b->center.y);
  EXPECT_GT(b->center.y, c->center.y);

  ASSERT_EQ(layout->edges.size(), 2u);
  for (const EdgeLayout& edge : layout->edges) {
    const NodeLayout* tail = findNode(*layout, edge.tail);
    const NodeLayout* head = findNode(*layout, edge.head);
    ASSERT_TRUE(tail && head) << edge.tail << " -> " << edge.head;
    const size_t n = edge.controlPoints.size();
    EXPECT_GE(n, 4u);
    EXPECT_EQ((n - 1) % 3, 0u) << n;
    for (const PointF& p : edge.controlPoints) EXPECT_TRUE(inside(p, ll, ur));
    // The spline starts at the tail's boundary and the arrow tip touches the head's boundary.
    EXPECT_LT(distance(edge.controlPoints.front(), tail->center), tail->height / 2 + 2);
    ASSERT_TRUE(edge.hasArrowHead);
    EXPECT_FALSE(edge.hasArrowTail);
    EXPECT_LT(distance(edge.arrowHead, head->center), head->height / 2 + 2);
    EXPECT_GT(distance(edge.arrowHead, edge.controlPoints.back()), 1);  // the arrow has a length
  }
  const auto labelled = std::find_if(layout->edges.begin(), layout->edges.end(),
                                     [](const EdgeLayout& e) { return e.tail == "b" && e.head == "c"; });
  ASSERT_NE(labelled, layout->edges.end());
  EXPECT_EQ(labelled->label, "f32[4]");

  ASSERT_EQ(layout->clusters.size(), 1u);
  const ClusterLayout& cluster = layout->clusters[0];
  EXPECT_EQ(cluster.name, "cluster_fusion");
  EXPECT_EQ(cluster.label, "fusion.1");
  EXPECT_TRUE(inside(cluster.lowerLeft, ll, ur));
  EXPECT_TRUE(inside(cluster.upperRight, ll, ur));
  EXPECT_TRUE(nodeInside(*a, cluster.lowerLeft, cluster.upperRight));
  EXPECT_TRUE(nodeInside(*b, cluster.lowerLeft, cluster.upperRight));
  EXPECT_FALSE(inside(c->center, cluster.lowerLeft, cluster.upperRight));
}

TEST(GraphvizRendererTest, LayoutFindsNestedClusters) {
  StatusOr<GraphLayout> layout = layoutDot(R"(digraph {
    subgraph cluster_outer {
      x;
      subgraph plain { subgraph cluster_inner { y; z; } }
    }
    subgraph cluster_other { w; }
    x -> y; y -> z; z -> w;
  })");
  ASSERT_TRUE(layout.ok()) << layout.message();
  ASSERT_EQ(layout->clusters.size(), 3u);
  const ClusterLayout* outer = findCluster(*layout, "cluster_outer");
  const ClusterLayout* inner = findCluster(*layout, "cluster_inner");
  const ClusterLayout* other = findCluster(*layout, "cluster_other");
  ASSERT_TRUE(outer && inner && other);
  EXPECT_LT(outer - layout->clusters.data(), inner - layout->clusters.data());  // parents first
  EXPECT_TRUE(inside(inner->lowerLeft, outer->lowerLeft, outer->upperRight));
  EXPECT_TRUE(inside(inner->upperRight, outer->lowerLeft, outer->upperRight));
  for (const char* name : {"y", "z"}) {
    const NodeLayout* node = findNode(*layout, name);
    ASSERT_TRUE(node);
    EXPECT_TRUE(nodeInside(*node, inner->lowerLeft, inner->upperRight)) << name;
  }
  const NodeLayout* x = findNode(*layout, "x");
  const NodeLayout* w = findNode(*layout, "w");
  ASSERT_TRUE(x && w);
  EXPECT_TRUE(nodeInside(*x, outer->lowerLeft, outer->upperRight));
  EXPECT_FALSE(inside(x->center, inner->lowerLeft, inner->upperRight));
  EXPECT_TRUE(nodeInside(*w, other->lowerLeft, other->upperRight));
  EXPECT_FALSE(inside(w->center, outer->lowerLeft, outer->upperRight));
}

TEST(GraphvizRendererTest, LayoutAttributeCannotSwitchEngines) {
  StatusOr<GraphLayout> layout = layoutDot("digraph { layout=neato; subgraph cluster_k { a; b; } a -> b -> c; }");
  ASSERT_TRUE(layout.ok()) << layout.message();
  // Only `dot` ranks a chain top to bottom in one column and lays out clusters.
  const NodeLayout* a = findNode(*layout, "a");
  const NodeLayout* b = findNode(*layout, "b");
  const NodeLayout* c = findNode(*layout, "c");
  ASSERT_TRUE(a && b && c);
  EXPECT_GT(a->center.y, b->center.y);
  EXPECT_GT(b->center.y, c->center.y);
  EXPECT_NEAR(a->center.x, b->center.x, 0.5);  // neato draws this chain as a diagonal
  EXPECT_NEAR(b->center.x, c->center.x, 0.5);
  EXPECT_EQ(layout->clusters.size(), 1u);
}

TEST(GraphvizRendererTest, PinnedLayoutKeepsPositionsAndRoutesEdges) {
  // Three nodes where the caller put them (the viewer's stable layout across stages); `a` sits between `b` and
  // `c` on the straight line b-c, so a routed edge has to bend around it.
  constexpr std::string_view kDot = R"(digraph g { splines=true;
    a [pos="100,50"]; b [pos="0,50"]; c [pos="200,50"];
    b -> c; a -> c; })";
  StatusOr<GraphLayout> layout = layoutDot(kDot, "pinned.dot", LayoutEngine::kPinned);
  ASSERT_TRUE(layout.ok()) << layout.message();
  ASSERT_EQ(layout->nodes.size(), 3u);
  std::map<std::string, PointF> at;
  for (const NodeLayout& node : layout->nodes) at[node.name] = node.center;
  // Only translated: the offsets between nodes are the ones given.
  EXPECT_NEAR(at["a"].x - at["b"].x, 100, 0.01);
  EXPECT_NEAR(at["c"].x - at["b"].x, 200, 0.01);
  EXPECT_NEAR(at["a"].y - at["b"].y, 0, 0.01);
  EXPECT_NEAR(layout->lowerLeft.x, 0, 0.01);
  ASSERT_EQ(layout->edges.size(), 2u);
  for (const EdgeLayout& edge : layout->edges) {
    EXPECT_GE(edge.controlPoints.size(), 4u) << edge.tail << "->" << edge.head;
    EXPECT_TRUE(edge.hasArrowHead);
    if (edge.tail != "b") continue;
    // Routed around `a`, not through it: some control point leaves the line y = a.y.
    double bend = 0;
    for (const PointF& p : edge.controlPoints) bend = std::max(bend, std::abs(p.y - at["a"].y));
    EXPECT_GT(bend, 5);
  }

  // A node without a position is refused, not dropped at the origin.
  StatusOr<GraphLayout> missing =
      layoutDot("digraph g { a [pos=\"0,0\"]; b; a -> b }", "nopos.dot", LayoutEngine::kPinned);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("nopos.dot: node 'b' has no pos"), std::string::npos) << missing.message();
}

TEST(GraphvizRendererTest, ArrowsAtBothEnds) {
  StatusOr<GraphLayout> layout = layoutDot("digraph { a -> b [dir=both]; b -> c [dir=none]; }");
  ASSERT_TRUE(layout.ok()) << layout.message();
  ASSERT_EQ(layout->edges.size(), 2u);
  for (const EdgeLayout& edge : layout->edges) {
    if (edge.tail == "a") {
      EXPECT_TRUE(edge.hasArrowHead);
      ASSERT_TRUE(edge.hasArrowTail);
      const NodeLayout* a = findNode(*layout, "a");
      ASSERT_TRUE(a);
      EXPECT_LT(distance(edge.arrowTail, a->center), a->height / 2 + 2);
    } else {
      EXPECT_FALSE(edge.hasArrowHead);
      EXPECT_FALSE(edge.hasArrowTail);
    }
  }
}

TEST(GraphvizRendererTest, SyntaxErrorNamesSourceAndLine) {
  const char* kBad = "digraph {\n  a -> b;\n  c d e -> ;\n}\n";
  StatusOr<GraphLayout> layout = layoutDot(kBad, "hlo_graph_3.dot");
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.message().rfind("hlo_graph_3.dot:3: ", 0), 0u) << layout.message();
  EXPECT_NE(layout.message().find("syntax error"), std::string::npos) << layout.message();

  StatusOr<std::string> png = renderDot(kBad, ImageFormat::kPng, "other.dot");
  ASSERT_FALSE(png.ok());
  EXPECT_EQ(png.message().rfind("other.dot:3: syntax error", 0), 0u) << png.message();

  // The parser recovers: the next call parses cleanly, and its line count starts again at 1.
  StatusOr<GraphLayout> good = layoutDot("digraph {\n\n\n\n\n\n a -> b\n}");
  ASSERT_TRUE(good.ok()) << good.message();
  EXPECT_EQ(good->nodes.size(), 2u);
  StatusOr<GraphLayout> firstLine = layoutDot("digraph { -> }", "one.dot");
  ASSERT_FALSE(firstLine.ok());
  EXPECT_EQ(firstLine.message().rfind("one.dot:1: ", 0), 0u) << firstLine.message();
}

TEST(GraphvizRendererTest, EmptyAndGarbageInputAreErrors) {
  const std::vector<std::string> inputs = {
      "",
      "   \n\t ",
      "hello world",
      "digraph {",
      "digraph { a -> }",
      "}}}{{{",
      std::string("digraph { a }\0digraph { b }", 27),
      std::string("\xff\xfe\x00\x01garbage\x80", 12),
      "digraph { a [label=<<b>unclosed] }",
      "strict strict graph",
  };
  for (const std::string& input : inputs) {
    StatusOr<GraphLayout> layout = layoutDot(input, "in.dot");
    EXPECT_FALSE(layout.ok()) << testing::PrintToString(input);
    if (!layout.ok()) {
      EXPECT_EQ(layout.message().rfind("in.dot:", 0), 0u) << layout.message();
    }
    StatusOr<std::string> svg = renderDot(input, ImageFormat::kSvg, "in.dot");
    EXPECT_FALSE(svg.ok()) << testing::PrintToString(input);
  }
  // None of that leaves state behind.
  StatusOr<GraphLayout> after = layoutDot("digraph { only }");
  ASSERT_TRUE(after.ok()) << after.message();
  ASSERT_EQ(after->nodes.size(), 1u);
  EXPECT_EQ(after->nodes[0].name, "only");
}

TEST(GraphvizRendererTest, TextAfterTheGraphIsAnError) {
  StatusOr<GraphLayout> two = layoutDot("digraph { a } digraph { p; q; r }", "two.dot");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.message().find("expected one graph, found 2"), std::string::npos) << two.message();

  StatusOr<GraphLayout> trailing = layoutDot("digraph { a }\n\ntrailing junk", "junk.dot");
  ASSERT_FALSE(trailing.ok());
  EXPECT_EQ(trailing.message().rfind("junk.dot:3: syntax error", 0), 0u) << trailing.message();

  // cgraph would otherwise hand the leftover "digraph { p; q; r }" to the next parse.
  StatusOr<GraphLayout> next = layoutDot("digraph { z }");
  ASSERT_TRUE(next.ok()) << next.message();
  ASSERT_EQ(next->nodes.size(), 1u);
  EXPECT_EQ(next->nodes[0].name, "z");
}

TEST(GraphvizRendererTest, HtmlLabelsRender) {
  const char* kHtml =
      "digraph { node [height=0.1]; n [shape=box, label=<<b>x</b><br/>y>]; n -> m [label=<<i>e</i>>]; }";
  StatusOr<std::string> png = renderDot(kHtml, ImageFormat::kPng);
  ASSERT_TRUE(png.ok()) << png.message();
  const PngSize size = pngSize(*png);
  EXPECT_GT(size.width, 0u);
  StatusOr<std::string> svg = renderDot(kHtml, ImageFormat::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.message();
  EXPECT_NE(svg->find("font-weight=\"bold\""), std::string::npos);
  EXPECT_NE(svg->find(">x</text>"), std::string::npos);
  EXPECT_NE(svg->find(">y</text>"), std::string::npos);

  StatusOr<GraphLayout> layout = layoutDot(kHtml);
  ASSERT_TRUE(layout.ok()) << layout.message();
  const NodeLayout* n = findNode(*layout, "n");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->label, "<b>x</b><br/>y");
  EXPECT_TRUE(n->labelIsHtml);
  ASSERT_EQ(layout->edges.size(), 1u);
  EXPECT_EQ(layout->edges[0].label, "<i>e</i>");
  EXPECT_TRUE(layout->edges[0].labelIsHtml);
  // Two lines of text make the box taller than a one-line node (both may shrink to their text).
  const NodeLayout* m = findNode(*layout, "m");
  ASSERT_TRUE(m);
  EXPECT_GT(n->height, m->height);
}

TEST(GraphvizRendererTest, MalformedHtmlLabelIsAnError) {
  StatusOr<std::string> png = renderDot("digraph { n [label=<<b>x</i>>] }", ImageFormat::kPng, "html.dot");
  ASSERT_FALSE(png.ok());
  EXPECT_EQ(png.message().rfind("html.dot: ", 0), 0u) << png.message();
  EXPECT_NE(png.message().find("label of node n"), std::string::npos) << png.message();
}

TEST(GraphvizRendererTest, WarningsAreNotErrorsAndStayOffStderr) {
  testing::internal::CaptureStderr();
  StatusOr<std::string> svg =
      renderDot("digraph { a:nosuchport -> b [arrowhead=nosucharrow]; a [shape=nosuchshape] }", ImageFormat::kSvg);
  StatusOr<std::string> bad = renderDot("digraph { -> }", ImageFormat::kSvg);
  const std::string stderrText = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(svg.ok()) << svg.message();
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(stderrText, "");
}

TEST(GraphvizRendererTest, LargeGraphParsesCompletely) {
  // Far beyond the lexer's read buffer, so the input arrives in several chunks.
  std::string dot = "digraph big {\n";
  for (int i = 0; i < 600; ++i) {
    dot += "  node_with_a_long_name_" + std::to_string(i) + " -> node_with_a_long_name_" + std::to_string(i + 1) +
           " [label=\"edge " + std::to_string(i) + "\"];\n";
  }
  dot += "}\n";
  ASSERT_GT(dot.size(), 40000u);
  StatusOr<GraphLayout> layout = layoutDot(dot);
  ASSERT_TRUE(layout.ok()) << layout.message();
  EXPECT_EQ(layout->nodes.size(), 601u);
  EXPECT_EQ(layout->edges.size(), 600u);
  StatusOr<GraphLayout> next = layoutDot("digraph { z }");
  ASSERT_TRUE(next.ok()) << next.message();
  EXPECT_EQ(next->nodes.size(), 1u);
}

TEST(GraphvizRendererTest, ConcurrentCallsAllSucceed) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 6;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      // Each thread has its own graph, so a result that leaked between threads would show wrong nodes.
      const size_t nodes = static_cast<size_t>(t) + 2;
      const std::string dot = chain(t + 2);
      for (int i = 0; i < kIterations; ++i) {
        StatusOr<GraphLayout> layout = layoutDot(dot, "thread.dot");
        if (!layout.ok() || layout->nodes.size() != nodes || layout->edges.size() != nodes - 1) {
          ++failures[t];
        }
        StatusOr<std::string> image = renderDot(dot, i % 2 == 0 ? ImageFormat::kPng : ImageFormat::kSvg);
        if (!image.ok() || image->empty()) ++failures[t];
        StatusOr<GraphLayout> bad = layoutDot("digraph {\n -> }", "bad.dot");
        if (bad.ok() || bad.message().rfind("bad.dot:2: ", 0) != 0) ++failures[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

// One layout, several images: order follows the request, and capping the PNG never shrinks the SVG.
TEST(GraphvizRendererTest, RendersSeveralFormatsFromOneLayoutAndCapsOnlyThePng) {
  // 400 wide nodes side by side: about 40k points wide, beyond the 16k-pixel PNG cap.
  std::string dot = "digraph G { node [shape=box width=1.4]; ";
  for (int i = 0; i < 400; ++i) dot += "r -> c" + std::to_string(i) + "; ";
  dot += "}";
  auto images = renderDot(dot, {ImageFormat::kSvg, ImageFormat::kPng}, "wide.dot");
  ASSERT_TRUE(images.ok()) << images.message();
  ASSERT_EQ(images->size(), 2u);
  const std::string& svg = (*images)[0];
  const std::string& png = (*images)[1];
  ASSERT_NE(svg.find("<svg"), std::string::npos);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  EXPECT_LE(be32(16), 16001u);
  EXPECT_GE(be32(16), 10000u);  // scaled to the cap (less Graphviz's margins), not shrunk away
  // The SVG keeps the full width in points.
  size_t at = svg.find("width=\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stod(svg.substr(at + 7)), 30000.0);
}

// A graph that is big in both directions is capped by area (40 Mpx), not only by its longest side, so that
// image viewers with default limits can still open the overview.
TEST(GraphvizRendererTest, CapsPngAreaOfGraphsBigInBothDirections) {
  // 60 columns of 60-node chains: roughly 6k x 6k pixels unscaled would pass the side cap; make it bigger.
  std::string dot = "digraph G { node [shape=box width=2 height=1]; ";
  for (int c = 0; c < 60; ++c) {
    for (int r = 0; r + 1 < 60; ++r)
      dot += "n" + std::to_string(c) + "_" + std::to_string(r) + " -> n" + std::to_string(c) + "_" +
             std::to_string(r + 1) + "; ";
  }
  dot += "}";
  auto png = renderDot(dot, ImageFormat::kPng, "grid.dot");
  ASSERT_TRUE(png.ok()) << png.message();
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>((*png)[at + i]);
    return v;
  };
  double width = be32(16);
  double height = be32(20);
  EXPECT_LE(width * height, 40.5e6) << width << " x " << height;
  EXPECT_GE(width * height, 30e6) << "scaled to the cap, not far below it: " << width << " x " << height;
}

}  // namespace

// ---- renderDotBatch: many graphs in worker processes ------------------------------------------------------

std::vector<std::string> chainGraphs(int count) {
  std::vector<std::string> graphs;
  for (int g = 0; g < count; ++g) {
    std::string dot = "digraph G {\n";
    for (int i = 0; i < 3 + g; ++i) dot += "  n" + std::to_string(i) + " -> n" + std::to_string(i + 1) + ";\n";
    graphs.push_back(dot + "}\n");
  }
  return graphs;
}

TEST(RenderBatchTest, WorkerProcessesGiveTheSameImagesAsInProcess) {
  std::vector<std::string> graphs = chainGraphs(5);
  std::vector<RenderJob> jobs;
  for (size_t i = 0; i < graphs.size(); ++i) {
    jobs.push_back({graphs[i], {ImageFormat::kSvg, ImageFormat::kPng}, "g" + std::to_string(i) + ".dot"});
  }
  auto sequential = renderDotBatch(jobs, 1);
  auto parallel = renderDotBatch(jobs, 3);
  ASSERT_TRUE(sequential.ok()) << sequential.message();
  ASSERT_TRUE(parallel.ok()) << parallel.message();
  ASSERT_EQ(parallel->size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_EQ((*parallel)[i].size(), 2u);
    EXPECT_EQ((*parallel)[i][0], (*sequential)[i][0]) << "svg of job " << i;
    EXPECT_EQ((*parallel)[i][1].substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << "png of job " << i;
    EXPECT_EQ((*parallel)[i][1].size(), (*sequential)[i][1].size()) << "png of job " << i;
  }
}

TEST(RenderBatchTest, AFailingGraphIsReportedByName) {
  std::vector<std::string> graphs = chainGraphs(3);
  graphs[1] = "digraph G { a -> ; }";
  std::vector<RenderJob> jobs;
  for (size_t i = 0; i < graphs.size(); ++i) {
    jobs.push_back({graphs[i], {ImageFormat::kSvg}, "stage_" + std::to_string(i) + ".dot"});
  }
  for (int processes : {1, 2}) {
    auto result = renderDotBatch(jobs, processes);
    ASSERT_FALSE(result.ok()) << processes;
    EXPECT_NE(result.message().find("stage_1.dot"), std::string::npos) << result.message();
  }
}

TEST(RenderBatchTest, LargeImagesComeBackWhole) {
  // More than a pipe buffer (64 KiB) per image: the parent must keep reading while workers write.
  std::string dot = "digraph G {\n";
  for (int i = 0; i < 400; ++i) dot += "  n" + std::to_string(i) + " -> n" + std::to_string(i + 1) + ";\n";
  dot += "}\n";
  std::vector<RenderJob> jobs(4, RenderJob{dot, {ImageFormat::kSvg}, "big.dot"});
  auto parallel = renderDotBatch(jobs, 4);
  ASSERT_TRUE(parallel.ok()) << parallel.message();
  auto single = renderDot(dot, ImageFormat::kSvg);
  ASSERT_TRUE(single.ok()) << single.message();
  ASSERT_GT(single->size(), 64u * 1024);
  for (const auto& images : *parallel) EXPECT_EQ(images[0], *single);
}

}  // namespace fusionscope::graphviz
