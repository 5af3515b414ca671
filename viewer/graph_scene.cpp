#include "viewer/graph_scene.h"

#include <QFontMetricsF>
#include <QGraphicsItem>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>
#include <utility>

#include "viewer/time_overlay.h"

namespace fusionscope::viewer {
namespace {

constexpr int kNodeItemType = QGraphicsItem::UserType + 1;
constexpr int kClusterItemType = QGraphicsItem::UserType + 2;
constexpr int kEdgeItemType = QGraphicsItem::UserType + 3;
// Below this many device pixels per text line, labels are skipped: they would be unreadable smudges, and
// skipping them keeps zoomed-out painting of big graphs fast.
constexpr double kMinReadableLinePixels = 4.0;
constexpr double kFontPixels = 10.0;
constexpr uint32_t kGroupFill = 0xe3f2fd;
constexpr uint32_t kGroupBorder = 0x5c7b99;

QColor rgb(uint32_t value) {
  return QColor::fromRgb(static_cast<QRgb>(value));
}

QFont labelFont(bool bold) {
  QFont font(QStringLiteral("Helvetica"));
  font.setPixelSize(static_cast<int>(kFontPixels));
  font.setBold(bold);
  return font;
}

// `scale` enlarges the font for boxes laid out for bigger text than ours (DOT files from other tools).
void drawLines(QPainter* painter, const QRectF& rect, const std::vector<std::string>& lines, const QColor& color,
               double lod, Qt::Alignment alignment, double scale = 1.0) {
  if (lines.empty() || lod * kFontPixels * scale < kMinReadableLinePixels) return;
  painter->setPen(color);
  double lineHeight = (kFontPixels + 2) * scale;
  double total = lineHeight * static_cast<double>(lines.size());
  double y = alignment & Qt::AlignTop ? rect.top() + 3 : rect.center().y() - total / 2;
  for (size_t i = 0; i < lines.size(); ++i) {
    QFont font = labelFont(i == 0);
    if (scale != 1.0) font.setPixelSize(static_cast<int>(kFontPixels * scale));
    painter->setFont(font);
    QFontMetricsF metrics(font);
    QString text = metrics.elidedText(QString::fromStdString(lines[i]), Qt::ElideMiddle, rect.width() - 6);
    QRectF line(rect.left() + 3, y, rect.width() - 6, lineHeight);
    painter->drawText(line, static_cast<int>((alignment & Qt::AlignHorizontal_Mask) | Qt::AlignVCenter), text);
    y += lineHeight;
    if (y > rect.bottom()) break;
  }
}

class NodeItem : public QGraphicsItem {
 public:
  NodeItem(const GraphScene* scene, int index, const GraphNode& node)
      : m_scene(scene), m_index(index), m_node(node), m_rect(node.x, node.y, node.width, node.height) {
    setZValue(2);
    setToolTip(QString::fromStdString(node.name));
  }
  int type() const override { return kNodeItemType; }
  int index() const { return m_index; }
  QRectF boundingRect() const override { return m_rect.adjusted(-4, -4, 4, 4); }

  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) override {
    const SceneTheme& theme = m_scene->theme();
    double lod = option->levelOfDetailFromTransform(painter->worldTransform());
    // A "from NAME" stub is drawn plain; a copy of a far-away source keeps the source's colours.
    bool stub = m_node.kind == GraphNode::Kind::kStub && m_node.opcode.empty();
    CategoryColors colors = colorsFor(m_node.category);
    QColor fill = stub ? theme.background : rgb(colors.fill);
    QColor border = stub ? theme.edge : rgb(colors.border);
    QColor text = stub ? theme.edge : rgb(colors.text);
    double textScale = 1.0;
    if (m_node.kind == GraphNode::Kind::kDotNode) {
      // Keep the DOT file's own colours, and size the text to the box it laid out.
      if (QColor c(QString::fromStdString(m_node.fillColor)); c.isValid()) fill = c;
      if (QColor c(QString::fromStdString(m_node.borderColor)); c.isValid()) border = c;
      if (QColor c(QString::fromStdString(m_node.textColor)); c.isValid()) text = c;
      double needed = (kFontPixels + 2) * static_cast<double>(std::max<size_t>(m_node.lines.size(), 1)) + 6;
      textScale = std::clamp(m_rect.height() / needed, 1.0, 2.0);
    }
    double width = m_node.root ? 2.5 : 1.0;
    const bool group = m_node.kind == GraphNode::Kind::kGroup;
    if (group) {
      // A collapsed scope group: a stack of cards (TensorBoard's namespace nodes), with a strip in the colour of
      // its most frequent op category.
      fill = rgb(kGroupFill);
      border = rgb(kGroupBorder);
      text = rgb(0x263238);
      width = 1.5;
      painter->setPen(QPen(border, 1.0));
      painter->setBrush(fill.darker(106));
      painter->drawRoundedRect(m_rect.translated(4, 4), 6, 6);
    }
    if (m_scene->kernelTimesShown() && !stub) {
      double ns = m_scene->kernelTimeOfNode(m_index);
      double fraction = kernelTimeFraction(ns, m_scene->maxKernelTime());
      fill = ns < 0 ? QColor(QRgb(0xeeeeee)) : GraphScene::kernelTimeColor(fraction);
      text = ns >= 0 && fraction > 0.7 ? QColor(Qt::white) : QColor(QRgb(0x424242));
    }
    Qt::PenStyle style = m_node.kind == GraphNode::Kind::kStub ? Qt::DashLine : Qt::SolidLine;
    if (m_scene->isAdded(m_index)) {
      border = theme.added;
      width = 3;
    }
    if (m_scene->isFusedNode(m_index)) {
      border = theme.fused;
      width = 3;
    }
    if (m_scene->isMatch(m_index)) {
      painter->setPen(Qt::NoPen);
      painter->setBrush(theme.match);
      painter->drawRoundedRect(m_rect.adjusted(-4, -4, 4, 4), 6, 6);
    }
    if (m_scene->selectedNode() == m_index) {
      border = theme.selection;
      width = 3.5;
    }
    QPen pen(border, width, style);
    pen.setCosmetic(lod < 0.5);
    painter->setPen(pen);
    painter->setBrush(fill);
    painter->drawRoundedRect(m_rect, group ? 6 : 4, group ? 6 : 4);
    if (group) {
      QRectF strip(m_rect.left() + 1, m_rect.top() + 1, 6, m_rect.height() - 2);
      painter->setPen(Qt::NoPen);
      painter->setBrush(rgb(colorsFor(m_node.category).fill));
      painter->drawRoundedRect(strip, 3, 3);
    }
    drawLines(painter, m_rect, m_node.lines, text, lod, Qt::AlignHCenter, textScale);
  }

 private:
  const GraphScene* m_scene;
  int m_index;
  const GraphNode& m_node;
  QRectF m_rect;
};

class ClusterItem : public QGraphicsItem {
 public:
  ClusterItem(const GraphScene* scene, int index, const GraphCluster& cluster, int depth)
      : m_scene(scene),
        m_index(index),
        m_cluster(cluster),
        m_depth(depth),
        m_rect(cluster.x, cluster.y, cluster.width, cluster.height) {
    setZValue(0.01 * depth);
    setToolTip(QString::fromStdString(cluster.fusionName));
  }
  int type() const override { return kClusterItemType; }
  int index() const { return m_index; }
  QRectF boundingRect() const override { return m_rect.adjusted(-3, -3, 3, 3); }

  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) override {
    const SceneTheme& theme = m_scene->theme();
    double lod = option->levelOfDetailFromTransform(painter->worldTransform());
    QColor border = rgb(kClusterBorder);
    double width = m_cluster.root ? 2.5 : 1.0;
    if (m_scene->isFusedCluster(m_index)) {
      border = theme.fused;
      width = 3;
    }
    if (m_scene->selectedCluster() == m_index) {
      border = theme.selection;
      width = 3.5;
    }
    QPen pen(border, width);
    pen.setCosmetic(lod < 0.5);
    painter->setPen(pen);
    if (!m_cluster.group.empty()) {
      // An expanded scope group: a light frame in the group colour, the fusion boxes inside stay grey.
      if (m_scene->selectedCluster() != m_index) border = rgb(kGroupBorder);
      QPen groupPen(border, m_scene->selectedCluster() == m_index ? width : 1.2, Qt::DashLine);
      groupPen.setCosmetic(lod < 0.5);
      painter->setPen(groupPen);
      painter->setBrush(theme.groupFill);
    } else if (double ns = m_scene->kernelTimeOfCluster(m_index); ns >= 0) {
      painter->setBrush(GraphScene::kernelTimeColor(kernelTimeFraction(ns, m_scene->maxKernelTime())).lighter(115));
    } else {
      painter->setBrush(m_depth == 0 ? theme.clusterFill : theme.nestedClusterFill);
    }
    painter->drawRoundedRect(m_rect, 8, 8);
    drawLines(painter, m_rect, m_cluster.lines, theme.clusterText, lod, Qt::AlignLeft | Qt::AlignTop);
  }

 private:
  const GraphScene* m_scene;
  int m_index;
  const GraphCluster& m_cluster;
  int m_depth;
  QRectF m_rect;
};

class EdgeItem : public QGraphicsItem {
 public:
  EdgeItem(const GraphScene* scene, const GraphEdge& edge) : m_scene(scene), m_edge(edge) {
    setZValue(1);
    const auto& points = edge.spline;
    if (!points.empty()) {
      m_path.moveTo(points[0].x, points[0].y);
      for (size_t i = 1; i + 2 < points.size(); i += 3) {
        m_path.cubicTo(points[i].x, points[i].y, points[i + 1].x, points[i + 1].y, points[i + 2].x, points[i + 2].y);
      }
    }
    if (edge.hasArrow && !points.empty()) {
      QPointF tip(edge.arrowTip.x, edge.arrowTip.y);
      QPointF base(points.back().x, points.back().y);
      QPointF direction = tip - base;
      double length = std::hypot(direction.x(), direction.y());
      if (length > 1e-6) {
        QPointF normal(-direction.y() / length, direction.x() / length);
        double half = std::max(2.5, length * 0.35);
        m_arrow << tip << base + normal * half << base - normal * half;
      }
    }
    m_bounds = m_path.boundingRect().united(m_arrow.boundingRect()).adjusted(-2, -2, 2, 2);
    if (edge.count > 1 && !m_path.isEmpty()) {
      QPointF middle = m_path.pointAtPercent(0.5);
      m_bounds = m_bounds.united(QRectF(middle.x(), middle.y() - 8, 66, 16));
    }
  }
  int type() const override { return kEdgeItemType; }
  QRectF boundingRect() const override { return m_bounds; }

  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) override {
    const SceneTheme& theme = m_scene->theme();
    QColor color = theme.edge;
    int selected = m_scene->selectedNode();
    bool touching = selected >= 0 && (m_edge.from == selected || m_edge.to == selected);
    if (touching) color = theme.selection;
    double width = (touching ? 2.0 : 1.0) + (m_edge.count > 1 ? std::min(2.5, 0.5 * std::log2(m_edge.count)) : 0.0);
    QPen pen(color, width, m_edge.control || m_edge.stub ? Qt::DashLine : Qt::SolidLine);
    painter->setPen(pen);
    painter->setBrush(Qt::NoBrush);
    painter->drawPath(m_path);
    if (!m_arrow.isEmpty()) {
      painter->setPen(QPen(color, 1.0));
      painter->setBrush(color);
      painter->drawPolygon(m_arrow);
    }
    if (m_edge.count > 1 && !m_edge.spline.empty() &&
        option->levelOfDetailFromTransform(painter->worldTransform()) * kFontPixels >= kMinReadableLinePixels) {
      // How many operand edges a merged edge to or from a scope group stands for, at the middle of its curve.
      QPointF middle = m_path.pointAtPercent(0.5);
      QFont font = labelFont(false);
      font.setPixelSize(static_cast<int>(kFontPixels * 0.9));
      painter->setFont(font);
      painter->setPen(color);
      painter->drawText(QRectF(middle.x() + 3, middle.y() - 7, 60, 14), Qt::AlignLeft | Qt::AlignVCenter,
                        QStringLiteral("\u00d7%1").arg(m_edge.count));
    }
  }

 private:
  const GraphScene* m_scene;
  const GraphEdge& m_edge;
  QPainterPath m_path;
  QPolygonF m_arrow;
  QRectF m_bounds;
};

}  // namespace

QColor GraphScene::kernelTimeColor(double fraction) {
  // Pale yellow -> orange -> deep red (Material amber 50, orange 300, red 800).
  const QColor stops[] = {QColor(QRgb(0xfff8e1)), QColor(QRgb(0xffb74d)), QColor(QRgb(0xc62828))};
  double t = std::clamp(fraction, 0.0, 1.0) * 2;
  const QColor& a = stops[t < 1 ? 0 : 1];
  const QColor& b = stops[t < 1 ? 1 : 2];
  double f = t < 1 ? t : t - 1;
  auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
  return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
}

void GraphScene::setKernelTimes(std::vector<double> nodeNs, std::vector<double> clusterNs, double maxNs) {
  m_nodeNs = std::move(nodeNs);
  m_clusterNs = std::move(clusterNs);
  m_maxNs = maxNs;
  if (m_graph && (m_nodeNs.size() != m_graph->nodes.size() || m_clusterNs.size() != m_graph->clusters.size())) {
    m_nodeNs.clear();
    m_clusterNs.clear();
  }
  update();
}

SceneTheme SceneTheme::dark() {
  SceneTheme theme;
  theme.background = QColor(QRgb(0x263238));
  theme.edge = QColor(QRgb(0xb0bec5));
  // Boxes a shade off the background, so that an expanded group or fusion reads as a region, not a white sheet;
  // their labels light. The nodes keep XLA's category colours (with their own dark text).
  theme.clusterText = QColor(QRgb(0xeceff1));
  theme.clusterFill = QColor(QRgb(0x37474f));
  theme.nestedClusterFill = QColor(QRgb(0x455a64));
  theme.groupFill = QColor(QRgb(0x2e3c43));
  return theme;
}

GraphScene::GraphScene(QObject* parent) : QGraphicsScene(parent) {
  setBackgroundBrush(m_theme.background);
  setItemIndexMethod(QGraphicsScene::BspTreeIndex);
}

void GraphScene::setGraph(std::shared_ptr<const GraphModel> graph) {
  // The old items point into the old model: keep it alive until they are gone.
  std::shared_ptr<const GraphModel> old = std::exchange(m_graph, std::move(graph));
  m_selected = -1;
  m_selectedCluster = -1;
  m_matches.clear();
  m_added.clear();
  m_fusedNodes.clear();
  m_fusedClusters.clear();
  m_ghosts.clear();
  m_nodeNs.clear();
  m_clusterNs.clear();
  rebuild();
}

void GraphScene::rebuild() {
  m_ghostItems.clear();
  clear();
  m_nodeItemCount = 0;
  m_clusterItemCount = 0;
  if (!m_graph) {
    setSceneRect(QRectF());
    return;
  }
  const GraphModel& graph = *m_graph;
  for (size_t i = 0; i < graph.clusters.size(); ++i) {
    int depth = 0;
    for (int parent = graph.clusters[i].parent; parent >= 0 && depth < 64;
         parent = graph.clusters[static_cast<size_t>(parent)].parent) {
      ++depth;
    }
    addItem(new ClusterItem(this, static_cast<int>(i), graph.clusters[i], depth));
    ++m_clusterItemCount;
  }
  for (const GraphEdge& edge : graph.edges) addItem(new EdgeItem(this, edge));
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    addItem(new NodeItem(this, static_cast<int>(i), graph.nodes[i]));
    if (graph.nodes[i].kind != GraphNode::Kind::kStub) ++m_nodeItemCount;
  }
  setSceneRect(QRectF(graph.left - 20, graph.top - 20, graph.width + 40, graph.height + 40));
}

void GraphScene::refresh() {
  update();
}

void GraphScene::setTheme(const SceneTheme& theme) {
  m_theme = theme;
  setBackgroundBrush(theme.background);
  refresh();
}

void GraphScene::setSelectedNode(int node) {
  m_selected = node;
  m_selectedCluster = -1;
  refresh();
}

void GraphScene::setSelectedCluster(int cluster) {
  m_selectedCluster = cluster;
  m_selected = -1;
  refresh();
}

void GraphScene::setMatches(const std::vector<int>& nodes) {
  m_matches = std::set<int>(nodes.begin(), nodes.end());
  refresh();
}

void GraphScene::setDiff(std::set<int> addedNodes, std::set<int> fusedNodes, std::set<int> fusedClusters,
                         std::vector<Ghost> ghosts) {
  m_added = std::move(addedNodes);
  m_fusedNodes = std::move(fusedNodes);
  m_fusedClusters = std::move(fusedClusters);
  m_ghosts = std::move(ghosts);
  for (QGraphicsItem* item : m_ghostItems) {
    removeItem(item);
    delete item;
  }
  m_ghostItems.clear();
  QColor ghost = m_theme.ghost;
  QColor fill = ghost;
  fill.setAlpha(40);
  for (const Ghost& g : m_ghosts) {
    auto* rect = addRect(g.rect, QPen(ghost, 1.5, Qt::DashLine), fill);
    rect->setZValue(3);
    rect->setToolTip(QStringLiteral("removed: ") + g.name);
    auto* text = addSimpleText(g.name, labelFont(false));
    text->setBrush(ghost);
    text->setPos(g.rect.left() + 3, g.rect.top() + 2);
    text->setZValue(3);
    m_ghostItems << rect << text;
  }
  refresh();
}

QRectF GraphScene::nodeRect(int node) const {
  if (!m_graph || node < 0 || static_cast<size_t>(node) >= m_graph->nodes.size()) return {};
  const GraphNode& n = m_graph->nodes[static_cast<size_t>(node)];
  return QRectF(n.x, n.y, n.width, n.height);
}

QRectF GraphScene::clusterRect(int cluster) const {
  if (!m_graph || cluster < 0 || static_cast<size_t>(cluster) >= m_graph->clusters.size()) return {};
  const GraphCluster& c = m_graph->clusters[static_cast<size_t>(cluster)];
  return QRectF(c.x, c.y, c.width, c.height);
}

std::pair<int, int> GraphScene::hit(const QPointF& pos) const {
  int cluster = -1;
  double clusterZ = -1;
  for (QGraphicsItem* item : items(pos)) {
    if (item->type() == kNodeItemType) return {static_cast<NodeItem*>(item)->index(), -1};
    if (item->type() == kClusterItemType && item->zValue() > clusterZ) {
      cluster = static_cast<ClusterItem*>(item)->index();
      clusterZ = item->zValue();
    }
  }
  return {-1, cluster};
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (event->button() != Qt::LeftButton) {
    QGraphicsScene::mousePressEvent(event);
    return;
  }
  auto [node, cluster] = hit(event->scenePos());
  if (node >= 0) {
    emit nodeClicked(node);
    event->accept();
  } else if (cluster >= 0) {
    emit clusterClicked(cluster);
    event->accept();
  } else {
    emit backgroundClicked();
    // Not accepted: the view starts a hand-drag pan.
    event->ignore();
  }
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  auto [node, cluster] = hit(event->scenePos());
  if (node >= 0) {
    emit nodeDoubleClicked(node);
  } else if (cluster >= 0) {
    emit clusterDoubleClicked(cluster);
  }
  event->accept();
}

}  // namespace fusionscope::viewer
