#include "viewer/stable_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
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

// Where each node of `model` goes: kept nodes at their centre in `base`, new nodes at their place in `fresh`
// (model laid out by `dot`) moved by the median shift of their kept neighbours (of all kept nodes when they have
// none), then right until they overlap no node placed before them.
std::vector<GraphPoint> placeNodes(const GraphModel& model, const GraphModel* fresh, const GraphModel& base,
                                   const std::vector<int>& baseOf) {
  const size_t count = model.nodes.size();
  std::vector<GraphPoint> centre(count);
  std::vector<Box> placed;
  placed.reserve(count);
  std::vector<double> allDx, allDy;
  for (size_t i = 0; i < count; ++i) {
    if (baseOf[i] < 0) continue;
    const GraphNode& old = base.nodes[static_cast<size_t>(baseOf[i])];
    centre[i] = centreOf(old);
    placed.push_back({old.x, old.y, old.width, old.height});
    if (fresh != nullptr) {
      const GraphPoint at = centreOf(fresh->nodes[i]);
      allDx.push_back(centre[i].x - at.x);
      allDy.push_back(centre[i].y - at.y);
    }
  }
  if (fresh == nullptr) return centre;
  std::vector<std::vector<int>> neighbours(count);
  for (const GraphEdge& edge : fresh->edges) {
    if (edge.from < 0 || edge.to < 0) continue;
    neighbours[static_cast<size_t>(edge.from)].push_back(edge.to);
    neighbours[static_cast<size_t>(edge.to)].push_back(edge.from);
  }
  const double globalDx = median(allDx), globalDy = median(allDy);
  std::vector<int> added;
  for (size_t i = 0; i < count; ++i) {
    if (baseOf[i] < 0) added.push_back(static_cast<int>(i));
  }
  // Top to bottom, left to right in the fresh layout, so that pushing right keeps their order in a rank.
  std::sort(added.begin(), added.end(), [&](int a, int b) {
    const GraphNode& na = fresh->nodes[static_cast<size_t>(a)];
    const GraphNode& nb = fresh->nodes[static_cast<size_t>(b)];
    return na.y != nb.y ? na.y < nb.y : na.x < nb.x;
  });
  for (int i : added) {
    const GraphNode& node = fresh->nodes[static_cast<size_t>(i)];
    std::vector<double> dx, dy;
    for (int other : neighbours[static_cast<size_t>(i)]) {
      if (baseOf[static_cast<size_t>(other)] < 0) continue;
      const GraphPoint at = centreOf(fresh->nodes[static_cast<size_t>(other)]);
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
    centre[static_cast<size_t>(i)] = {box.x + box.width / 2, box.y + box.height / 2};
  }
  return centre;
}

// model.dot with every node's position (Graphviz points, y up) and the edge routing for the pinned engine.
std::string pinnedDot(const GraphModel& model, const std::vector<GraphPoint>& centre) {
  std::string dot = model.dot;
  const size_t close = dot.rfind('}');
  std::string tail;
  tail.reserve(model.nodes.size() * 40 + 64);
  tail += model.nodes.size() <= static_cast<size_t>(kRoutedEdgesMaxNodes) ? "  graph [splines=true];\n"
                                                                          : "  graph [splines=line];\n";
  char buffer[96];
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    std::snprintf(buffer, sizeof buffer, " [pos=\"%.3f,%.3f!\"];\n", centre[i].x, -centre[i].y);
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

  // New nodes need `dot`'s view of the new graph to be placed; a stage that only removed nodes does not.
  std::optional<GraphModel> fresh;
  if (kept < static_cast<int>(model.nodes.size())) {
    StatusOr<GraphModel> laidOut = layoutModule(module, options);
    if (!laidOut.ok()) return laidOut.status();
    fresh = std::move(*laidOut);
  }
  const std::vector<GraphPoint> centre = placeNodes(model, fresh ? &*fresh : nullptr, base, baseOf);
  StatusOr<graphviz::GraphLayout> layout =
      graphviz::layoutDot(pinnedDot(model, centre), module.name() + ".dot", graphviz::LayoutEngine::kPinned);
  if (!layout.ok()) return layout.status();
  FS_RETURN_IF_ERROR(applyLayout(model, *layout));

  // Graphviz translated the drawing to start at 0,0; move it back onto the coordinates of the graph before.
  size_t anchor = 0;
  while (baseOf[anchor] < 0) ++anchor;
  const GraphPoint now = centreOf(model.nodes[anchor]);
  translate(model, centre[anchor].x - now.x, centre[anchor].y - now.y);

  // What did not change keeps its old drawing: edges between kept nodes that were joined before.
  std::map<std::pair<std::string, std::string>, const GraphEdge*> oldEdges;
  for (const GraphEdge& edge : base.edges) {
    if (edge.from >= 0 && edge.to >= 0)
      oldEdges.emplace(std::make_pair(oldIds[static_cast<size_t>(edge.from)], oldIds[static_cast<size_t>(edge.to)]),
                       &edge);
  }
  // A kept node whose label changed (a group's counts) changed size around its centre: its old edges would end
  // in the air or inside it, so Graphviz's are kept for those.
  auto sameBox = [&](int node) {
    const int old = baseOf[static_cast<size_t>(node)];
    if (old < 0) return false;
    const GraphNode& a = model.nodes[static_cast<size_t>(node)];
    const GraphNode& b = base.nodes[static_cast<size_t>(old)];
    return std::abs(a.width - b.width) < 0.5 && std::abs(a.height - b.height) < 0.5;
  };
  for (GraphEdge& edge : model.edges) {
    if (edge.from < 0 || edge.to < 0 || !sameBox(edge.from) || !sameBox(edge.to)) continue;
    auto old = oldEdges.find({newIds[static_cast<size_t>(edge.from)], newIds[static_cast<size_t>(edge.to)]});
    if (old == oldEdges.end() || old->second->spline.empty()) continue;
    edge.spline = old->second->spline;
    edge.hasArrow = old->second->hasArrow;
    edge.arrowTip = old->second->arrowTip;
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
