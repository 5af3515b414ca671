#pragma once

#include <QGraphicsView>

class QLabel;

namespace fusionscope::viewer {

class GraphScene;
class Minimap;

// The graph's viewport: wheel zooms around the cursor, dragging the background pans, fit and 1:1, and a minimap
// in the corner that shows where the viewport is and recentres it on click.
class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);

  void fitAll();
  // fitAll, but never below `minZoom`: a graph too big to read fitted is shown from its top at `minZoom`,
  // horizontally centred on `startX` (scene coordinates).
  void fitReadable(double minZoom, double startX);
  void actualSize();
  void zoomBy(double factor);
  double zoom() const { return transform().m11(); }
  // Brings `rect` (a node or fusion box, scene coordinates) into view: zooms in until labels are readable (or out
  // until a box larger than the viewport fits) and centres it unless it is already well inside the viewport.
  void centerOnRect(const QRectF& rect);
  void setMinimapVisible(bool visible);
  // The time overlay's legend in the bottom-left corner: the colour scale (logarithmic, four decades below `maxNs`)
  // labelled from the shortest time shown, `minNs` (or maxNs / 10^4 if that is shorter), to `maxNs`, and grey for
  // "no kernel"; maxNs <= 0 hides it.
  void setKernelTimeLegend(double minNs, double maxNs, int linked,
                           const QString& title = QStringLiteral("Kernel time"));
  bool kernelTimeLegendVisible() const;
  QString kernelTimeLegendText() const;
  bool minimapVisible() const;
  // Writes the whole graph (not only what the viewport shows) as .png or .svg (by `path`'s suffix), titled `title`
  // in SVG. A PNG is drawn at `scale` pixels per scene unit (1: the view at 1:1), lowered by exportScale when the
  // image would be too large; an SVG is in scene units.
  bool exportScene(const QString& path, const QString& title, double scale, QString* error = nullptr);
  // The scale a PNG export at `requested` uses for the current graph.
  double exportScale(double requested) const;

 signals:
  void viewportMoved();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  void placeMinimap();
  Minimap* m_minimap = nullptr;
  QLabel* m_legend = nullptr;
};

}  // namespace fusionscope::viewer
