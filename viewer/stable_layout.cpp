#include "viewer/stable_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/graphviz/graphviz_renderer.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::viewer {
namespace {

// The gap kept between a placed node and the boxes it would otherwise overlap (points).
constexpr double kGapX = 14;
constexpr double kGapY = 6;
// Room around what a fusion or group box holds, and per label line above it (points), about what `dot` leaves.
constexpr double kClusterMargin = 8;
constexpr double kClusterLineHeight = 14;

struct Box {
  double x = 0, y = 0, width = 0, height = 0;
  bool overlaps(const Box& other) const {
    return x < other.x + other.width + kGapX && other.x < x + width + kGapX && y < other.y + other.height + kGapY &&
           other.y < y + height + kGapY;
  }
};

// stableIdentity of every node, in one pass over the edges.
std::vector<std::string> identityList(const GraphModel& model) {
  std::vector<int> userOf(model.nodes.size(), -1);
  for (const GraphEdge& edge : model.edges) {
    if (edge.from >= 0 && edge.to >= 0 && userOf[static_cast<size_t>(edge.from)] < 0)
      userOf[static_cast<size_t>(edge.from)] = edge.to;
  }
  std::vector<std::string> result(model.nodes.size());
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    const GraphNode& n = model.nodes[i];
    switch (n.kind) {
      case GraphNode::Kind::kGroup: result[i] = "g:" + n.name; break;
      case GraphNode::Kind::kInstruction:
      case GraphNode::Kind::kCollapsedFusion: result[i] = "i:" + n.computation + "/" + n.name; break;
      case GraphNode::Kind::kStub:
        // A stub stands next to its one user.
        if (userOf[i] >= 0) {
          const GraphNode& user = model.nodes[static_cast<size_t>(userOf[i])];
          result[i] = "s:" + n.name + ">" + user.computation + "/" + user.name;
        }
        break;
      case GraphNode::Kind::kDotNode: break;
    }
  }
  return result;
}

GraphPoint centreOf(const GraphNode& node) {
  return {node.x + node.width / 2, node.y + node.height / 2};
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Boxes every cluster around the nodes and clusters it holds, innermost first, with room for its label on top.
void boxClusters(GraphModel& model) {
  std::vector<int> depth(model.clusters.size(), 0);
  for (size_t c = 0; c < model.clusters.size(); ++c) {
    for (int parent = model.clusters[c].parent; parent >= 0;
         parent = model.clusters[static_cast<size_t>(parent)].parent)
      ++depth[c];
  }
  std::vector<int> order(model.clusters.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = static_cast<int>(c);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return depth[a] > depth[b]; });
  std::vector<std::vector<Box>> held(model.clusters.size());
  for (const GraphNode& node : model.nodes) {
    if (node.cluster >= 0) held[static_cast<size_t>(node.cluster)].push_back({node.x, node.y, node.width, node.height});
  }
  for (int c : order) {
    GraphCluster& box = model.clusters[static_cast<size_t>(c)];
    const std::vector<Box>& inside = held[static_cast<size_t>(c)];
    if (inside.empty()) continue;
    double left = inside.front().x, top = inside.front().y, right = left, bottom = top;
    for (const Box& b : inside) {
      left = std::min(left, b.x);
      top = std::min(top, b.y);
      right = std::max(right, b.x + b.width);
      bottom = std::max(bottom, b.y + b.height);
    }
    const double label = kClusterLineHeight * static_cast<double>(std::max<size_t>(1, box.lines.size())) + 4;
    box.x = left - kClusterMargin;
    box.y = top - kClusterMargin - label;
    box.width = right - left + 2 * kClusterMargin;
    box.height = bottom - top + 2 * kClusterMargin + label;
    if (box.parent >= 0) held[static_cast<size_t>(box.parent)].push_back({box.x, box.y, box.width, box.height});
  }
}

// Moves the whole drawing by (dx, dy).
void translate(GraphModel& model, double dx, double dy) {
  for (GraphNode& node : model.nodes) {
    node.x += dx;
    node.y += dy;
  }
  for (GraphEdge& edge : model.edges) {
    for (GraphPoint& p : edge.spline) {
      p.x += dx;
      p.y += dy;
    }
    edge.arrowTip.x += dx;
    edge.arrowTip.y += dy;
  }
}

// Boxes the clusters and sets the drawing's bounding box from what it holds.
void bound(GraphModel& model) {
  boxClusters(model);
  bool first = true;
  double left = 0, top = 0, right = 0, bottom = 0;
  auto grow = [&](double x, double y) {
    left = first ? x : std::min(left, x);
    right = first ? x : std::max(right, x);
    top = first ? y : std::min(top, y);
    bottom = first ? y : std::max(bottom, y);
    first = false;
  };
  for (const GraphNode& node : model.nodes) {
    grow(node.x, node.y);
    grow(node.x + node.width, node.y + node.height);
  }
  for (const GraphEdge& edge : model.edges) {
    for (const GraphPoint& p : edge.spline) grow(p.x, p.y);
  }
  for (const GraphCluster& box : model.clusters) {
    grow(box.x, box.y);
    grow(box.x + box.width, box.y + box.height);
  }
  model.left = left;
  model.top = top;
  model.width = right - left;
  model.height = bottom - top;
}

// A node's box from a layout of part of the graph (layoutLocally), y down like the scene; unset for nodes it left out.
using LocalBoxes = std::vector<std::optional<Box>>;

// What a step asks of layoutLocally for a node.
enum Wanted : char { kNothing = 0, kSize = 1, kPlace = 2 };

// Lays out with `dot` only the nodes a step added (kPlace), with their neighbours and the edges that join them,
// and the nodes it relabelled (kSize: a statement of their own, no edges, only to be sized), none of the clusters:
// what a step needs to size the nodes it added or relabelled and to place the added ones relative to their kept
// neighbours. The node statements are the graph's own (same labels, so Graphviz gives them the same size as in a
// whole layout); a step that adds ten nodes to a 2,000-node graph lays out a few dozen instead of 2,000.
StatusOr<LocalBoxes> layoutLocally(const GraphModel& model, const std::vector<char>& wanted, const std::string& source) {
  std::vector<char> in(wanted.size(), 0);
  for (size_t i = 0; i < wanted.size(); ++i) in[i] = wanted[i] != kNothing;
  auto placed = [&](int node) { return wanted[static_cast<size_t>(node)] == kPlace; };
  for (const GraphEdge& edge : model.edges) {
    if (edge.from < 0 || edge.to < 0) continue;
    if (placed(edge.from)) in[static_cast<size_t>(edge.to)] = 1;
    if (placed(edge.to)) in[static_cast<size_t>(edge.from)] = 1;
  }
  std::unordered_map<std::string_view, int> byName;
  for (size_t i = 0; i < model.nodes.size(); ++i) byName.emplace(model.nodes[i].dotName, static_cast<int>(i));
  std::string dot = "digraph G {\n";
  std::string statements;
  int found = 0;
  size_t start = 0;
  bool header = true;
  while (start < model.dot.size()) {
    size_t end = model.dot.find('\n', start);
    if (end == std::string::npos) end = model.dot.size();
    std::string_view line(model.dot.data() + start, end - start);
    start = end + 1;
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string_view::npos) continue;
    line.remove_prefix(first);
    // The writers' defaults come first: `graph [...]`, `node [...]`, `edge [...]`.
    if (header && (line.rfind("graph [", 0) == 0 || line.rfind("node [", 0) == 0 || line.rfind("edge [", 0) == 0)) {
      dot.append("  ").append(line).append("\n");
      continue;
    }
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || line.substr(space, 2) != " [") continue;
    auto node = byName.find(line.substr(0, space));
    if (node == byName.end()) continue;
    header = false;
    if (!in[static_cast<size_t>(node->second)]) continue;
    statements.append("  ").append(line).append("\n");
    ++found;
  }
  dot += statements;
  for (const GraphEdge& edge : model.edges) {
    if (edge.from < 0 || edge.to < 0 || !(placed(edge.from) || placed(edge.to))) continue;
    dot += "  " + model.nodes[static_cast<size_t>(edge.from)].dotName + " -> " +
           model.nodes[static_cast<size_t>(edge.to)].dotName + ";\n";
  }
  dot += "}\n";
  LocalBoxes boxes(model.nodes.size());
  if (found == 0) return boxes;
  StatusOr<graphviz::GraphLayout> layout = graphviz::layoutDot(dot, source);
  if (!layout.ok()) return layout.status();
  for (const graphviz::NodeLayout& node : layout->nodes) {
    auto id = byName.find(node.name);
    if (id == byName.end()) continue;
    boxes[static_cast<size_t>(id->second)] =
        Box{node.center.x - node.width / 2, -node.center.y - node.height / 2, node.width, node.height};
  }
  return boxes;
}

// Where each node of `model` goes (its centre and size): kept nodes at their centre in `base` (with the size the
// local layout gave them when their label changed), added nodes at their place in the local layout moved by the
// median shift of their kept neighbours (of all kept nodes of the local layout when they have none; below the
// drawing when it holds none), then right until they overlap no node placed before them.
std::vector<Box> placeNodes(const GraphModel& model, const LocalBoxes& local, const GraphModel& base,
                            const std::vector<int>& baseOf) {
  const size_t count = model.nodes.size();
  std::vector<Box> result(count);
  std::vector<Box> placed;
  placed.reserve(count);
  std::vector<double> allDx, allDy;
  auto centre = [](const Box& b) { return GraphPoint{b.x + b.width / 2, b.y + b.height / 2}; };
  for (size_t i = 0; i < count; ++i) {
    if (baseOf[i] < 0) continue;
    const GraphNode& old = base.nodes[static_cast<size_t>(baseOf[i])];
    Box box{old.x, old.y, old.width, old.height};
    if (local[i]) {
      const GraphPoint at = centre(*local[i]), was = centreOf(old);
      allDx.push_back(was.x - at.x);
      allDy.push_back(was.y - at.y);
      // A new label that fits the old box keeps it (a group's counts going down by a few does not redraw its
      // edges); a bigger one grows the box around its centre.
      if (local[i]->width > old.width + 0.01 || local[i]->height > old.height + 0.01)
        box = {was.x - local[i]->width / 2, was.y - local[i]->height / 2, local[i]->width, local[i]->height};
    }
    result[i] = box;
    placed.push_back(box);
  }
  std::vector<std::vector<int>> neighbours(count);
  for (const GraphEdge& edge : model.edges) {
    if (edge.from < 0 || edge.to < 0) continue;
    neighbours[static_cast<size_t>(edge.from)].push_back(edge.to);
    neighbours[static_cast<size_t>(edge.to)].push_back(edge.from);
  }
  double globalDx = median(allDx), globalDy = median(allDy);
  if (allDx.empty()) {
    globalDx = base.left;
    globalDy = base.top + base.height + 40;
  }
  std::vector<int> added;
  for (size_t i = 0; i < count; ++i) {
    if (baseOf[i] < 0 && local[i]) added.push_back(static_cast<int>(i));
  }
  // Top to bottom, left to right in the local layout, so that pushing right keeps their order in a rank.
  std::sort(added.begin(), added.end(), [&](int a, int b) {
    const Box& na = *local[static_cast<size_t>(a)];
    const Box& nb = *local[static_cast<size_t>(b)];
    return na.y != nb.y ? na.y < nb.y : na.x < nb.x;
  });
  for (int i : added) {
    const Box& node = *local[static_cast<size_t>(i)];
    std::vector<double> dx, dy;
    for (int other : neighbours[static_cast<size_t>(i)]) {
      if (baseOf[static_cast<size_t>(other)] < 0 || !local[static_cast<size_t>(other)]) continue;
      const GraphPoint at = centre(*local[static_cast<size_t>(other)]);
      const GraphPoint was = centreOf(base.nodes[static_cast<size_t>(baseOf[static_cast<size_t>(other)])]);
      dx.push_back(was.x - at.x);
      dy.push_back(was.y - at.y);
    }
    Box box{node.x + (dx.empty() ? globalDx : median(dx)), node.y + (dy.empty() ? globalDy : median(dy)), node.width,
            node.height};
    for (bool moved = true; moved;) {
      moved = false;
      for (const Box& other : placed) {
        if (!box.overlaps(other)) continue;
        box.x = other.x + other.width + kGapX;
        moved = true;
      }
    }
    placed.push_back(box);
    result[static_cast<size_t>(i)] = box;
  }
  return result;
}

// A straight edge from `from`'s border to `to`'s (what Graphviz draws with splines=line), as a one-piece B-spline
// ending where the arrowhead starts.
void straightEdge(GraphEdge& edge, const GraphNode& from, const GraphNode& to) {
  const GraphPoint a = centreOf(from), b = centreOf(to);
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double length = std::hypot(dx, dy);
  edge.spline.clear();
  if (length < 1e-6) return;
  // The fraction of the centre line inside a box of half-size (w, h) around its end.
  auto inside = [&](const GraphNode& n) {
    const double tx = std::abs(dx) > 1e-9 ? (n.width / 2) / std::abs(dx) : 1e9;
    const double ty = std::abs(dy) > 1e-9 ? (n.height / 2) / std::abs(dy) : 1e9;
    return std::min(tx, ty);
  };
  const double t0 = inside(from), t1 = 1 - inside(to);
  constexpr double kArrow = 7;  // arrowsize 0.7 of Graphviz's 10 points
  const double tEnd = t1 - kArrow / length;
  if (tEnd <= t0) return;
  const GraphPoint p{a.x + dx * t0, a.y + dy * t0}, q{a.x + dx * tEnd, a.y + dy * tEnd};
  edge.spline = {p, {p.x + (q.x - p.x) / 3, p.y + (q.y - p.y) / 3}, {p.x + 2 * (q.x - p.x) / 3, p.y + 2 * (q.y - p.y) / 3}, q};
  edge.hasArrow = true;
  edge.arrowTip = {a.x + dx * t1, a.y + dy * t1};
}

// model.dot with every node's position (Graphviz points, y up) and the edge routing for the pinned engine, keeping
// only the edges statements of `route` (pairs of DOT names): every node is an obstacle, only those edges are routed.
std::string pinnedDot(const GraphModel& model, const std::vector<Box>& boxes,
                      const std::set<std::pair<std::string, std::string>>& route) {
  std::string dot;
  dot.reserve(model.dot.size());
  size_t start = 0;
  while (start < model.dot.size()) {
    size_t end = model.dot.find('\n', start);
    end = end == std::string::npos ? model.dot.size() : end + 1;
    std::string_view line(model.dot.data() + start, end - start);
    start = end;
    const size_t arrow = line.find(" -> ");
    const size_t first = line.find_first_not_of(' ');
    if (arrow != std::string_view::npos && first < arrow && line.find(' ', first) == arrow) {
      // "  TAIL -> HEAD [...];": an edge statement (an arrow inside a label comes after a '[').
      const size_t headStart = arrow + 4;
      size_t headEnd = line.find_first_of(" ;[", headStart);
      if (headEnd == std::string_view::npos) headEnd = line.size();
      const std::string tail(line.substr(first, arrow - first)), head(line.substr(headStart, headEnd - headStart));
      if (route.count({tail, head}) == 0) continue;
    }
    dot.append(line);
  }
  const size_t close = dot.rfind('}');
  std::string tail;
  tail.reserve(model.nodes.size() * 40 + 64);
  tail += model.nodes.size() <= static_cast<size_t>(kRoutedEdgesMaxNodes) ? "  graph [splines=true];\n"
                                                                          : "  graph [splines=line];\n";
  char buffer[96];
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    const Box& b = boxes[i];
    std::snprintf(buffer, sizeof buffer, " [pos=\"%.3f,%.3f!\"];\n", b.x + b.width / 2, -(b.y + b.height / 2));
    tail += "  " + model.nodes[i].dotName + buffer;
  }
  dot.insert(close == std::string::npos ? dot.size() : close, tail);
  return dot;
}

}  // namespace

std::string stableIdentity(const GraphModel& model, int node) {
  if (node < 0 || static_cast<size_t>(node) >= model.nodes.size()) return {};
  return identityList(model)[static_cast<size_t>(node)];
}

StatusOr<GraphModel> layoutModuleStable(const core::HloModule& module, const GraphOptions& options,
                                        const GraphModel& base) {
  GraphModel model = buildGraph(module, options);
  const std::vector<std::string> oldIds = identityList(base);
  const std::vector<std::string> newIds = identityList(model);
  std::unordered_map<std::string, int> before;
  for (size_t i = 0; i < oldIds.size(); ++i) {
    if (!oldIds[i].empty()) before.emplace(oldIds[i], static_cast<int>(i));
  }
  std::vector<int> baseOf(model.nodes.size(), -1);
  int kept = 0;
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    auto found = newIds[i].empty() ? before.end() : before.find(newIds[i]);
    if (found == before.end()) continue;
    baseOf[i] = found->second;
    ++kept;
  }
  const double need = kStableKeepFraction * static_cast<double>(std::max(model.nodes.size(), base.nodes.size()));
  if (!base.laidOut || kept == 0 || static_cast<double>(kept) < need) return layoutModule(module, options);

  // Nodes with no place yet (added) or a new size (a kept node whose label changed) are sized and placed from a
  // `dot` layout of just them and their neighbours.
  std::vector<char> wanted(model.nodes.size(), 0);
  bool anyWanted = false;
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    const int old = baseOf[i];
    if (old < 0) {
      wanted[i] = kPlace;
    } else if (model.nodes[i].lines != base.nodes[static_cast<size_t>(old)].lines ||
               model.nodes[i].root != base.nodes[static_cast<size_t>(old)].root) {
      wanted[i] = kSize;
    }
    anyWanted = anyWanted || wanted[i] != kNothing;
  }
  LocalBoxes local(model.nodes.size());
  if (anyWanted) {
    StatusOr<LocalBoxes> laidOut = layoutLocally(model, wanted, module.name() + ".dot");
    if (!laidOut.ok()) return laidOut.status();
    local = std::move(*laidOut);
  }
  const std::vector<Box> boxes = placeNodes(model, local, base, baseOf);

  // What did not change keeps its old drawing: edges between kept, same-size nodes that were joined before. The
  // others are routed: by Graphviz's pinned engine around the nodes on small graphs, as straight lines on big ones
  // (what that engine draws there too, without handing it the whole graph).
  std::map<std::pair<std::string, std::string>, const GraphEdge*> oldEdges;
  for (const GraphEdge& edge : base.edges) {
    if (edge.from >= 0 && edge.to >= 0)
      oldEdges.emplace(std::make_pair(oldIds[static_cast<size_t>(edge.from)], oldIds[static_cast<size_t>(edge.to)]),
                       &edge);
  }
  auto sameBox = [&](int node) {
    const int old = baseOf[static_cast<size_t>(node)];
    if (old < 0) return false;
    const Box& a = boxes[static_cast<size_t>(node)];
    const GraphNode& b = base.nodes[static_cast<size_t>(old)];
    return std::abs(a.width - b.width) < 0.5 && std::abs(a.height - b.height) < 0.5;
  };
  auto keptEdge = [&](const GraphEdge& edge) -> const GraphEdge* {
    if (edge.from < 0 || edge.to < 0 || !sameBox(edge.from) || !sameBox(edge.to)) return nullptr;
    auto old = oldEdges.find({newIds[static_cast<size_t>(edge.from)], newIds[static_cast<size_t>(edge.to)]});
    return old == oldEdges.end() || old->second->spline.empty() ? nullptr : old->second;
  };
  std::set<std::pair<std::string, std::string>> route;
  for (const GraphEdge& edge : model.edges) {
    if (edge.from >= 0 && edge.to >= 0 && keptEdge(edge) == nullptr)
      route.emplace(model.nodes[static_cast<size_t>(edge.from)].dotName, model.nodes[static_cast<size_t>(edge.to)].dotName);
  }
  if (!route.empty() && model.nodes.size() <= static_cast<size_t>(kRoutedEdgesMaxNodes) &&
      route.size() <= static_cast<size_t>(kRoutedEdgesPerStep)) {
    StatusOr<graphviz::GraphLayout> layout = graphviz::layoutDot(pinnedDot(model, boxes, route),
                                                                 module.name() + ".dot", graphviz::LayoutEngine::kPinned);
    if (!layout.ok()) return layout.status();
    // Graphviz drew only the routed edges: the graph keeps all of its edges, the routed ones with its drawing.
    std::vector<GraphEdge> edges = model.edges;
    FS_RETURN_IF_ERROR(applyLayout(model, *layout));
    std::map<std::pair<int, int>, std::vector<const GraphEdge*>> drawn;
    for (const GraphEdge& edge : model.edges) drawn[{edge.from, edge.to}].push_back(&edge);
    for (GraphEdge& edge : edges) {
      auto found = drawn.find({edge.from, edge.to});
      if (found == drawn.end() || found->second.empty()) continue;
      const GraphEdge* routed = found->second.back();
      found->second.pop_back();
      edge.spline = routed->spline;
      edge.hasArrow = routed->hasArrow;
      edge.arrowTip = routed->arrowTip;
    }
    model.edges = std::move(edges);
    // Graphviz translated the drawing to start at 0,0; move it back onto the coordinates of the graph before.
    size_t anchor = 0;
    while (baseOf[anchor] < 0) ++anchor;
    const GraphPoint now = centreOf(model.nodes[anchor]);
    const Box& was = boxes[anchor];
    translate(model, was.x + was.width / 2 - now.x, was.y + was.height / 2 - now.y);
  } else {
    for (size_t i = 0; i < model.nodes.size(); ++i) {
      GraphNode& node = model.nodes[i];
      node.x = boxes[i].x;
      node.y = boxes[i].y;
      node.width = boxes[i].width;
      node.height = boxes[i].height;
    }
    for (GraphEdge& edge : model.edges) {
      if (edge.from >= 0 && edge.to >= 0)
        straightEdge(edge, model.nodes[static_cast<size_t>(edge.from)], model.nodes[static_cast<size_t>(edge.to)]);
    }
    model.laidOut = true;
  }
  for (GraphEdge& edge : model.edges) {
    const GraphEdge* old = keptEdge(edge);
    if (old == nullptr) continue;
    edge.spline = old->spline;
    edge.hasArrow = old->hasArrow;
    edge.arrowTip = old->arrowTip;
  }
  bound(model);
  // The drawing keeps at least the area of the one before: a smaller scene would clamp the view's scroll range
  // and move the view although no kept node moved.
  const double right = std::max(model.left + model.width, base.left + base.width);
  const double bottom = std::max(model.top + model.height, base.top + base.height);
  model.left = std::min(model.left, base.left);
  model.top = std::min(model.top, base.top);
  model.width = right - model.left;
  model.height = bottom - model.top;
  model.pinnedNodes = kept;
  return model;
}

}  // namespace fusionscope::viewer
