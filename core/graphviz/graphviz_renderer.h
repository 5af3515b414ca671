#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace fusionscope::graphviz {

// fs_graphviz is the only code that includes Graphviz headers. Every call below takes one process-wide
// mutex because Graphviz (cgraph + gvc) keeps global state and is not thread-safe.

enum class ImageFormat { kPng, kSvg };

// The most nodes (instructions, plus the stubs and labels the DOT writer adds) handed to the `dot` layout. Beyond
// it Graphviz 2.43 takes minutes, runs out of memory or overflows its stack (a 200k-node chain crashes it), so
// layout and rendering refuse with a message instead. Real modules have 1-10k instructions.
inline constexpr int kMaxLayoutNodes = 20000;

// Renders DOT text to an image in memory with the `dot` layout engine. `sourceName` is used in error
// messages (e.g. "hlo_graph_0.dot:12: syntax error near 'x'").
// The text must hold exactly one graph. Anything Graphviz reports as an error (a syntax error, a malformed
// HTML-like label, an unknown output format) fails the call, even where the `dot` program would still draw
// something; Graphviz's warnings are swallowed, never printed to stderr.
StatusOr<std::string> renderDot(std::string_view dot, ImageFormat format, std::string_view sourceName = "<dot>");
// Lays the graph out once and renders it in every format asked for; images come back in the same order.
StatusOr<std::vector<std::string>> renderDot(std::string_view dot, const std::vector<ImageFormat>& formats,
                                             std::string_view sourceName = "<dot>");

// Positions from the `dot` layout, in points with the origin at the bottom-left (Graphviz convention).
struct PointF {
  double x = 0;
  double y = 0;
};

struct NodeLayout {
  std::string name;          // DOT node id
  std::string label;         // the `label` attribute, unrendered ("\N" when the node has none)
  bool labelIsHtml = false;  // label was written as an HTML-like label `<...>`; `label` is then the markup inside
  // The `fillcolor`, `color` and `fontcolor` attributes as written (e.g. "#ffb74d", "white"); empty when unset.
  std::string fillColor;
  std::string color;
  std::string fontColor;
  PointF center;
  double width = 0;   // points
  double height = 0;  // points
};

struct EdgeLayout {
  std::string tail;  // DOT node id
  std::string head;
  std::string label;
  bool labelIsHtml = false;
  std::vector<PointF> controlPoints;  // cubic B-spline control points of the first spline (3k+1 of them)
  bool hasArrowHead = false;
  PointF arrowHead;           // tip of the arrow at the head end, when hasArrowHead
  bool hasArrowTail = false;  // an arrow at the tail end (dir=back or dir=both)
  PointF arrowTail;
};

struct ClusterLayout {
  std::string name;  // subgraph name, e.g. "cluster_fusion_3"
  std::string label;
  bool labelIsHtml = false;
  PointF lowerLeft;
  PointF upperRight;
};

struct GraphLayout {
  PointF lowerLeft;
  PointF upperRight;
  std::vector<NodeLayout> nodes;
  std::vector<EdgeLayout> edges;
  std::vector<ClusterLayout> clusters;  // every cluster, nested ones included, parents before children
};

// How layoutDot places the nodes.
enum class LayoutEngine {
  kDot,  // Graphviz `dot`: ranks, crossing minimisation, splines
  // Graphviz `neato -n2` (the `nop2` engine): every node must carry `pos="x,y"` in points and stays there (the
  // drawing is only translated so that its bounding box starts at 0,0); Graphviz sizes the nodes and routes the
  // edges as the graph's `splines` attribute asks. Cluster boxes are not computed (ClusterLayout is left empty).
  kPinned,
};

// Lays DOT text out with `engine` and returns plain structs (no Graphviz types escape). Same input rules
// and errors as renderDot; a `layout=...` attribute in the graph does not switch engines.
StatusOr<GraphLayout> layoutDot(std::string_view dot, std::string_view sourceName = "<dot>",
                                LayoutEngine engine = LayoutEngine::kDot);

// True when the PNG and SVG render plugins are available (Graphviz's config was found).
bool renderersAvailable();

// One graph to render for renderDotBatch.
struct RenderJob {
  std::string_view dot;
  std::vector<ImageFormat> formats;
  std::string sourceName;
};

// Renders many graphs. Graphviz cannot run on two threads at once, so with `processes` > 1 each graph is
// rendered in a forked worker process (up to `processes` at a time) and the images come back through pipes;
// a worker that crashes inside Graphviz fails that graph with a message instead of taking the caller down.
// Call it where no other thread is using Graphviz (the CLI); `processes` <= 1 renders in this process.
// Results are in job order; the first failure (in job order) is returned.
StatusOr<std::vector<std::vector<std::string>>> renderDotBatch(const std::vector<RenderJob>& jobs, int processes);

}  // namespace fusionscope::graphviz
