#include "viewer/graph_view.h"

#include <QBuffer>
#include <QFileInfo>
#include <QFrame>
#include <QImage>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "viewer/graph_scene.h"

namespace fusionscope::viewer {

constexpr double kMinZoom = 0.005;
constexpr double kMaxZoom = 8.0;
constexpr int kMinimapSize = 150;
constexpr int kMinMinimapSize = 64;
constexpr double kMaxExportSide = 32000;
constexpr double kMaxExportPixels = 64e6;
// Below kMinReadableZoom node labels are hard to read; revealing a node zooms in to kReadableZoom.
constexpr double kMinReadableZoom = 0.6;
constexpr double kReadableZoom = 0.8;

// A second, non-interactive view of the same scene, scaled to fit, with the main viewport outlined.
class Minimap : public QGraphicsView {
 public:
  Minimap(GraphScene* scene, GraphView* main) : QGraphicsView(scene, main), m_main(main) {
    setInteractive(false);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setFrameShape(QFrame::Box);
    setCursor(Qt::PointingHandCursor);
    setToolTip(QStringLiteral("Minimap: click to move the view"));
    connect(scene, &QGraphicsScene::sceneRectChanged, this, [this] { refit(); });
  }
  void refit() {
    if (scene() != nullptr) fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
    viewport()->update();
  }

 protected:
  void drawForeground(QPainter* painter, const QRectF&) override {
    QRectF visible = m_main->mapToScene(m_main->viewport()->rect()).boundingRect();
    painter->setPen(QPen(QColor(QRgb(0xff6d00)), 0));
    QColor fill(0xff6d00);
    fill.setAlpha(40);
    painter->setBrush(fill);
    painter->drawRect(visible);
  }
  void mousePressEvent(QMouseEvent* event) override { m_main->centerOn(mapToScene(event->pos())); }
  void mouseMoveEvent(QMouseEvent* event) override {
    if (event->buttons() & Qt::LeftButton) m_main->centerOn(mapToScene(event->pos()));
  }
  void wheelEvent(QWheelEvent* event) override { event->ignore(); }
  void resizeEvent(QResizeEvent* event) override {
    QGraphicsView::resizeEvent(event);
    refit();
  }

 private:
  GraphView* m_main;
};

GraphView::GraphView(GraphScene* scene, QWidget* parent) : QGraphicsView(scene, parent) {
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlags(QGraphicsView::DontSavePainterState);
  m_minimap = new Minimap(scene, this);
  m_minimap->resize(kMinimapSize, kMinimapSize);
  connect(scene, &QGraphicsScene::changed, m_minimap->viewport(), qOverload<>(&QWidget::update));
  m_legend = new QLabel(this);
  m_legend->setAutoFillBackground(true);
  m_legend->setFrameShape(QFrame::Box);
  m_legend->setMargin(4);
  m_legend->hide();
  placeMinimap();
}

void GraphView::fitAll() {
  if (scene() == nullptr) return;
  fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
  // A small graph fitted would be drawn huge; never more than 1:1 on fit.
  if (zoom() > 1.0) actualSize();
  m_minimap->refit();
  emit viewportMoved();
}

void GraphView::fitReadable(double minZoom, double startX) {
  fitAll();
  if (scene() == nullptr || zoom() >= minZoom) return;
  // Too far out to read: zoom in to the smallest readable scale, on the top of the graph (where it starts), the
  // widest part in view; the minimap shows the rest.
  setTransform(QTransform::fromScale(minZoom, minZoom));
  const QRectF rect = scene()->sceneRect();
  const QSizeF seen = QSizeF(viewport()->width(), viewport()->height()) / minZoom;
  // Horizontally on `startX` (the graph's first node: a wide graph's start is rarely at its middle).
  const double half = seen.width() / 2;
  centerOn(std::clamp(startX, rect.left() + half, std::max(rect.left() + half, rect.right() - half)),
           rect.top() + seen.height() / 2);
  m_minimap->refit();
  emit viewportMoved();
}

void GraphView::actualSize() {
  QPointF center = mapToScene(viewport()->rect().center());
  setTransform(QTransform());
  centerOn(center);
  emit viewportMoved();
}

void GraphView::zoomBy(double factor) {
  double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
  double applied = target / zoom();
  scale(applied, applied);
  m_minimap->viewport()->update();
  emit viewportMoved();
}

void GraphView::centerOnRect(const QRectF& rect) {
  if (rect.isEmpty()) return;
  // Zoom in far enough that labels can be read, never out, unless the rect (a big fusion box) is larger than the
  // viewport: then zoom out just enough to show all of it.
  if (zoom() < kMinReadableZoom) zoomBy(kReadableZoom / zoom());
  const QSizeF viewport = QSizeF(this->viewport()->size()) / zoom();
  if (rect.width() > viewport.width() * 0.95 || rect.height() > viewport.height() * 0.95) {
    const double fit = std::min(this->viewport()->width() / rect.width(), this->viewport()->height() / rect.height());
    zoomBy(0.95 * fit / zoom());
  }
  // Centre unless the rect is already well inside the viewport (stepping through matches near each other should
  // not jump around).
  const QRectF visible = mapToScene(this->viewport()->rect()).boundingRect();
  const QRectF inner =
      visible.adjusted(visible.width() * 0.1, visible.height() * 0.1, -visible.width() * 0.1, -visible.height() * 0.1);
  if (!inner.contains(rect)) centerOn(rect.center());
  m_minimap->viewport()->update();
  emit viewportMoved();
}

void GraphView::setMinimapVisible(bool visible) {
  m_minimap->setVisible(visible);
}

bool GraphView::minimapVisible() const {
  return m_minimap->isVisible();
}

void GraphView::wheelEvent(QWheelEvent* event) {
  double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) {
    QGraphicsView::wheelEvent(event);
    return;
  }
  zoomBy(std::pow(1.2, steps));
  event->accept();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  placeMinimap();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  m_minimap->viewport()->update();
  emit viewportMoved();
}

void GraphView::placeMinimap() {
  int margin = 8;
  int scrollBar = verticalScrollBar()->isVisible() ? verticalScrollBar()->width() : 0;
  int scrollBarH = horizontalScrollBar()->isVisible() ? horizontalScrollBar()->height() : 0;
  // At most a fifth of the pane's width and a quarter of its height (a small window or a large scale factor left
  // it covering half the graph), between kMinMinimapSize and kMinimapSize.
  const int side = std::clamp(std::min(width() / 5, height() / 4), kMinMinimapSize, kMinimapSize);
  if (m_minimap->width() != side) m_minimap->resize(side, side);
  m_minimap->move(width() - side - margin - scrollBar, height() - side - margin - scrollBarH);
  if (m_legend != nullptr) m_legend->move(margin, height() - m_legend->height() - margin - scrollBarH);
}

namespace {

QString formatNs(double ns) {
  if (ns >= 1e6) return QStringLiteral("%1 ms").arg(ns / 1e6, 0, 'g', 3);
  if (ns >= 1e3) return QStringLiteral("%1 µs").arg(ns / 1e3, 0, 'g', 3);
  return QStringLiteral("%1 ns").arg(ns, 0, 'f', 0);
}

}  // namespace

void GraphView::setKernelTimeLegend(double minNs, double maxNs, int linked, const QString& title) {
  if (maxNs <= 0) {
    m_legend->hide();
    return;
  }
  // The scale as a gradient image: kernelTimeFraction 0..1 left to right.
  QImage bar(160, 12, QImage::Format_RGB32);
  for (int x = 0; x < bar.width(); ++x) {
    QRgb colour = GraphScene::kernelTimeColor(static_cast<double>(x) / (bar.width() - 1)).rgb();
    for (int y = 0; y < bar.height(); ++y) bar.setPixel(x, y, colour);
  }
  QByteArray png;
  QBuffer buffer(&png);
  buffer.open(QIODevice::WriteOnly);
  bar.save(&buffer, "PNG");
  m_legend->setText(QStringLiteral("<b>%5</b> (summed launches, log scale), %1 linked<br/>"
                                   "<img src=\"data:image/png;base64,%2\"/><br/>"
                                   "<table width=160><tr><td>%3</td><td align=right>%4</td></tr></table>"
                                   "<span style=\"background:#eeeeee\">&nbsp;grey&nbsp;</span> no kernel")
                        .arg(linked)
                        .arg(QString::fromLatin1(png.toBase64()))
                        .arg(formatNs(std::max(minNs, maxNs / 1e4)), formatNs(maxNs), title.toHtmlEscaped()));
  m_legend->adjustSize();
  m_legend->show();
  m_legend->raise();
  placeMinimap();
}

bool GraphView::kernelTimeLegendVisible() const {
  return m_legend->isVisible();
}

QString GraphView::kernelTimeLegendText() const {
  return m_legend->text();
}

double GraphView::exportScale(double requested) const {
  const QRectF source = scene()->sceneRect();
  double scale = std::clamp(requested, 0.1, 16.0);
  // A PNG of a big graph at the asked scale could need gigabytes: keep each side within kMaxExportSide pixels
  // and the whole within kMaxExportPixels (256 MB of ARGB), as a smaller scale.
  scale = std::min(scale, kMaxExportSide / std::max(1.0, std::max(source.width(), source.height())));
  scale = std::min(scale, std::sqrt(kMaxExportPixels / std::max(1.0, source.width() * source.height())));
  return scale;
}

bool GraphView::exportScene(const QString& path, const QString& title, double scale, QString* error) {
  auto* scene = static_cast<GraphScene*>(this->scene());
  auto fail = [&](const QString& message) {
    if (error != nullptr) *error = message;
    return false;
  };
  if (scene->graph() == nullptr) return fail(QStringLiteral("nothing to export"));
  // The whole graph, whatever the viewport shows, as `dot -Tpng` / `dot -Tsvg` would draw it; the overlay's legend,
  // when shown, in a band below it. Written to a temporary file renamed over `path` once complete (QSaveFile), so
  // a failed export leaves no half-written image and an existing file as it was.
  const QRectF source = scene->sceneRect();
  const bool legend = !m_legend->isHidden();
  const QSizeF legendSize = legend ? QSizeF(m_legend->size()) : QSizeF(0, 0);
  constexpr double kLegendMargin = 8;
  const bool svg = path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive);
  // Pixels per scene unit for the graph, and for the legend (never below 1: it stays readable in a scaled-down PNG).
  const double graphScale = svg ? 1.0 : exportScale(scale);
  const double legendScale = svg ? 1.0 : std::max(1.0, graphScale);
  const QSizeF graphPixels = source.size() * graphScale;
  const QSizeF legendPixels = legend ? (legendSize + QSizeF(2 * kLegendMargin, 2 * kLegendMargin)) * legendScale
                                     : QSizeF(0, 0);
  const QSize size = QSizeF(std::max(graphPixels.width(), legendPixels.width()),
                            graphPixels.height() + legendPixels.height())
                         .toSize()
                         .expandedTo(QSize(1, 1));
  auto paint = [&](QPainter& painter) {
    painter.fillRect(QRect(QPoint(0, 0), size), scene->theme().background);
    scene->render(&painter, QRectF(QPointF(0, 0), graphPixels), source);
    if (!legend) return;
    painter.save();
    painter.translate(kLegendMargin * legendScale, graphPixels.height() + kLegendMargin * legendScale);
    painter.scale(legendScale, legendScale);
    m_legend->render(&painter, QPoint(), QRegion(), QWidget::DrawChildren);
    painter.restore();
  };
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return fail(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
  if (svg) {
    QSvgGenerator generator;
    generator.setOutputDevice(&file);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    generator.setTitle(title);
    QPainter painter;
    if (!painter.begin(&generator)) return fail(QStringLiteral("cannot write %1").arg(path));
    paint(painter);
    painter.end();
  } else {
    QImage image(size, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull())
      return fail(QStringLiteral("cannot allocate a %1×%2 image").arg(size.width()).arg(size.height()));
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    paint(painter);
    painter.end();
    if (!image.save(&file, "PNG")) return fail(QStringLiteral("cannot write %1").arg(path));
  }
  if (!file.commit()) return fail(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
  return true;
}

}  // namespace fusionscope::viewer
