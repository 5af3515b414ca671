#pragma once

#include <QPainterPath>
#include <QWidget>
#include <memory>
#include <vector>

#include "viewer/timeline_model.h"

class QScrollBar;

namespace fusionscope::viewer {

// Paints one or more TimelineModels stacked on a shared time axis (a comparison shows two, each shifted by its own
// alignment offset) and handles Perfetto-style navigation: W/S zoom, A/D pan, wheel zoom to the cursor, drag to
// pan, Shift+drag to select a range, `f` to fit the selection (or everything). Painting asks the model for
// level-of-detail runs, so a frame costs O(visible pixels), not O(events). Times on the axis ("view ns") are
// event ns minus the group's offset.
class TimelineView : public QWidget {
  Q_OBJECT

 public:
  struct Group {
    std::shared_ptr<const TimelineModel> model;
    int64_t offsetNs = 0;               // event ns - offset = view ns
    QString label;                      // "before: file.json"; empty for a single trace
    std::vector<uint32_t> highlighted;  // sorted event indices drawn with an outline (search, links)
  };
  struct Hit {
    int group = -1;
    int64_t event = -1;  // index into the group's trace events
  };

  explicit TimelineView(QWidget* parent = nullptr);

  void setGroups(std::vector<Group> groups);
  const std::vector<Group>& groups() const { return m_groups; }
  void setGroupLabel(int group, const QString& label);
  void setHighlighted(int group, std::vector<uint32_t> events);
  // Shifts the groups' offsets (comparison alignment) keeping the selection, highlights and zoom.
  void setOffsets(const std::vector<int64_t>& offsets);

  // The visible time window, in view ns.
  double visibleStartNs() const { return m_viewStart; }
  double visibleEndNs() const { return m_viewStart + m_viewSpan; }
  void setVisibleRange(double startNs, double endNs);
  void zoomBy(double factor, double anchorFraction = 0.5);  // factor > 1 zooms in
  void panBy(double fraction);                              // of the visible span; > 0 moves right
  void fitAll();
  void fitSelection();  // the selected range, else the selected event, else everything
  double nsPerPixel() const;
  int plotWidth() const;
  // The lane headers' width: fitted to the lane names (kHeaderWidth…kMaxHeaderWidth) when a trace is set, until the
  // user drags the headers' edge (double-click on it fits again); never more than 40% of the widget.
  int plotLeft() const;
  void setHeaderWidth(int width);
  // The full lane (thread and process) or group title under `pos` in the headers; empty elsewhere.
  QString headerToolTip(const QPoint& pos) const;

  void selectEvent(int group, int64_t event, bool reveal);
  Hit selection() const { return m_selected; }
  void selectRange(double fromViewNs, double toViewNs);
  bool hasRange() const { return m_rangeFrom < m_rangeTo; }
  double rangeFrom() const { return m_rangeFrom; }
  double rangeTo() const { return m_rangeTo; }

  // The event drawn at a widget position (slices, instants, async spans and their steps), for clicks, tooltips
  // and tests.
  Hit hitAt(const QPoint& pos) const;
  // Where an event is drawn (its box, in widget coordinates); empty when it is not in a lane.
  QRectF eventRect(int group, uint32_t event) const;

  // Statistics of the last paint, for the benchmark and tests.
  int lastRunsDrawn() const { return m_lastRuns; }
  int lastFlowsDrawn() const { return m_lastFlows; }
  int lastStepMarkersDrawn() const { return m_lastSteps; }  // async steps drawn as ticks on their spans
  // The curve a flow arrow is drawn as: a cubic from the end of the source slice to the start of the target
  // (widget coordinates); empty when either slice is not in a lane.
  QPainterPath flowCurve(int group, uint32_t from, uint32_t to) const;
  double lastPaintMilliseconds() const { return m_lastPaintMs; }
  void setDark(bool dark);

  static constexpr int kHeaderWidth = 190;
  static constexpr int kMinHeaderWidth = 60;
  static constexpr int kMaxHeaderWidth = 480;
  static constexpr int kHeaderGrip = 5;  // pixels left of the headers' edge that grab it
  static constexpr int kRulerHeight = 26;
  static constexpr int kRowHeight = 18;
  static constexpr int kCounterHeight = 40;
  static constexpr int kGroupHeader = 20;
  // Above this many flows in the visible window only the selected event's flows are drawn (level of detail).
  static constexpr size_t kMaxFlowsDrawn = 2000;

 signals:
  void eventSelected(int group, qint64 event);  // -1 when the selection was cleared
  void rangeSelected(double fromViewNs, double toViewNs);
  void viewChanged();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct LaneGeometry {
    int group = 0;
    int lane = -1;  // -1: the group's header
    int top = 0;    // content y (before scrolling)
    int height = 0;
  };
  // m_totalStart/m_totalEnd: the span of every group on the shared axis (after its offset), at least 1 us.
  void updateTotalExtent();
  QString laneHeaderText(int group, int lane) const;
  int fittedHeaderWidth() const;
  bool onHeaderEdge(int x) const;  // x grabs the headers' edge
  void relayout();
  int contentHeight() const;
  double xOf(double viewNs) const;
  double viewNsAt(double x) const;
  void clampView();
  void paintRuler(QPainter& p);
  void paintLanes(QPainter& p);
  void paintFlows(QPainter& p);

  std::vector<Group> m_groups;
  std::vector<LaneGeometry> m_geometry;
  std::vector<std::vector<int>> m_laneTop;  // per group, per lane: content y of the lane
  double m_viewStart = 0;
  double m_viewSpan = 1;
  double m_totalStart = 0;
  double m_totalEnd = 1;
  QScrollBar* m_vbar;
  Hit m_selected;
  double m_rangeFrom = 0;
  double m_rangeTo = 0;
  // Dragging.
  enum class Drag { kNone, kPan, kRange, kHeader };
  Drag m_drag = Drag::kNone;
  QPoint m_pressPos;
  double m_pressViewStart = 0;
  int m_pressScroll = 0;
  bool m_moved = false;
  bool m_dark = false;
  int m_headerWidth = kHeaderWidth;
  bool m_headerWidthChosen = false;  // dragged by the user: kept for the next trace
  int m_lastRuns = 0;
  int m_lastFlows = 0;
  int m_lastSteps = 0;
  int64_t m_hiddenFlows = 0;
  double m_lastPaintMs = 0;
  mutable std::vector<SliceRun> m_runs;
};

// "1.5 ms", "250 ns": the ruler's and tooltips' time text.
QString formatDuration(double ns);

}  // namespace fusionscope::viewer
