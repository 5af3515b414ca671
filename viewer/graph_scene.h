#pragma once

#include <QColor>
#include <QGraphicsScene>
#include <memory>
#include <set>
#include <vector>

#include "viewer/graph_model.h"

namespace fusionscope::viewer {

// Colours the scene draws with that do not come from the HLO categories.
struct SceneTheme {
  QColor background = QColor(QRgb(0xffffff));
  QColor edge = QColor(QRgb(0x616161));
  QColor clusterText = QColor(QRgb(0x263238));
  QColor selection = QColor(QRgb(0xff6d00));
  QColor match = QColor(QRgb(0xffd600));
  QColor added = QColor(QRgb(0x00c853));
  QColor fused = QColor(QRgb(0x2962ff));
  QColor ghost = QColor(QRgb(0xd50000));
  // Boxes: an expanded fusion (nested one level or more), an expanded scope group.
  QColor clusterFill = QColor(QRgb(0xf5f5f5));
  QColor nestedClusterFill = QColor(QRgb(0xeceff1));
  QColor groupFill = QColor(QRgb(0xf7fbff));
  static SceneTheme light() { return {}; }
  static SceneTheme dark();
};

// Draws one laid-out GraphModel: a QGraphicsItem per node, cluster and edge. The model is shared and never
// changed here; highlight state (selection, search matches, diff) lives in the scene and items read it when
// they paint, so changing it does not rebuild items.
class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  explicit GraphScene(QObject* parent = nullptr);

  void setGraph(std::shared_ptr<const GraphModel> graph);
  const GraphModel* graph() const { return m_graph.get(); }
  std::shared_ptr<const GraphModel> sharedGraph() const { return m_graph; }
  // Node items (instructions, collapsed fusions, DOT nodes; not stubs) in the scene.
  int nodeItemCount() const { return m_nodeItemCount; }
  int clusterItemCount() const { return m_clusterItemCount; }

  void setTheme(const SceneTheme& theme);
  const SceneTheme& theme() const { return m_theme; }

  void setSelectedNode(int node);  // -1 clears
  int selectedNode() const { return m_selected; }
  void setSelectedCluster(int cluster);
  int selectedCluster() const { return m_selectedCluster; }
  void setMatches(const std::vector<int>& nodes);
  bool isMatch(int node) const { return m_matches.count(node) > 0; }

  // Diff with the previous stage: nodes that are new, nodes/clusters of newly made fusions, and removed nodes drawn
  // as ghosts at their place in the previous stage's layout.
  struct Ghost {
    QRectF rect;
    QString name;
  };
  void setDiff(std::set<int> addedNodes, std::set<int> fusedNodes, std::set<int> fusedClusters,
               std::vector<Ghost> ghosts);
  void clearDiff() { setDiff({}, {}, {}, {}); }
  bool isAdded(int node) const { return m_added.count(node) > 0; }
  bool isFusedNode(int node) const { return m_fusedNodes.count(node) > 0; }
  bool isFusedCluster(int cluster) const { return m_fusedClusters.count(cluster) > 0; }

  // The time overlay: every node and fusion box filled by its kernel time (KernelTimes, viewer/time_overlay.h) on a
  // pale-to-red logarithmic scale, grey where no kernel ran it. Empty vectors turn it off.
  void setKernelTimes(std::vector<double> nodeNs, std::vector<double> clusterNs, double maxNs);
  bool kernelTimesShown() const { return !m_nodeNs.empty(); }
  double kernelTimeOfNode(int node) const { return m_nodeNs.empty() ? -1 : m_nodeNs[static_cast<size_t>(node)]; }
  double kernelTimeOfCluster(int cluster) const {
    return m_clusterNs.empty() ? -1 : m_clusterNs[static_cast<size_t>(cluster)];
  }
  double maxKernelTime() const { return m_maxNs; }
  // The overlay's colour for `fraction` (kernelTimeFraction) of the largest time.
  static QColor kernelTimeColor(double fraction);

  QRectF nodeRect(int node) const;
  QRectF clusterRect(int cluster) const;  // a fusion's box; empty when there is none

 signals:
  void nodeClicked(int node);
  void nodeDoubleClicked(int node);
  void clusterClicked(int cluster);
  void clusterDoubleClicked(int cluster);
  void backgroundClicked();

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  // Returns (node, cluster) under `pos`; the innermost wins.
  std::pair<int, int> hit(const QPointF& pos) const;
  void rebuild();
  void refresh();

  std::shared_ptr<const GraphModel> m_graph;
  SceneTheme m_theme;
  int m_selected = -1;
  int m_selectedCluster = -1;
  std::set<int> m_matches;
  std::set<int> m_added;
  std::set<int> m_fusedNodes;
  std::set<int> m_fusedClusters;
  std::vector<Ghost> m_ghosts;
  std::vector<double> m_nodeNs;
  std::vector<double> m_clusterNs;
  double m_maxNs = 0;
  QList<QGraphicsItem*> m_ghostItems;
  int m_nodeItemCount = 0;
  int m_clusterItemCount = 0;
};

}  // namespace fusionscope::viewer
