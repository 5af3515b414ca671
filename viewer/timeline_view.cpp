#include "viewer/timeline_view.h"

#include <QElapsedTimer>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "profiler/compare/trace_stats.h"

namespace fusionscope::viewer {
namespace {

constexpr double kMinSpanNs = 20;
constexpr int kMaxHighlightsPerFrame = 20000;

QColor colourFor(std::string_view name) {
  // The colour depends only on the name's hash; converting HSV is the costly part, so it is cached by hash.
  const size_t h = std::hash<std::string_view>{}(name);
  thread_local std::unordered_map<size_t, QColor> cache;
  auto it = cache.find(h);
  if (it != cache.end()) return it->second;
  if (cache.size() > 100000) cache.clear();
  const QColor colour = QColor::fromHsv(static_cast<int>(h % 360), 90 + static_cast<int>((h >> 9) % 60),
                                        200 + static_cast<int>((h >> 17) % 40));
  cache.emplace(h, colour);
  return colour;
}

QString qs(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

}  // namespace

QString formatDuration(double ns) {
  const double a = std::abs(ns);
  auto fmt = [](double v, const char* unit) {
    QString text = QString::number(v, 'f', std::abs(v) < 10 ? 3 : (std::abs(v) < 100 ? 2 : 1));
    if (text.contains(QLatin1Char('.'))) {
      while (text.endsWith(QLatin1Char('0'))) text.chop(1);
      if (text.endsWith(QLatin1Char('.'))) text.chop(1);
    }
    return text + QLatin1Char(' ') + QString::fromUtf8(unit);
  };
  if (a >= 1e9) return fmt(ns / 1e9, "s");
  if (a >= 1e6) return fmt(ns / 1e6, "ms");
  if (a >= 1e3) return fmt(ns / 1e3, "µs");
  return fmt(ns, "ns");
}

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), m_vbar(new QScrollBar(Qt::Vertical, this)) {
  setFocusPolicy(Qt::StrongFocus);
  setMinimumHeight(120);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMouseTracking(true);  // the resize cursor over the lane headers' edge
  connect(m_vbar, &QScrollBar::valueChanged, this, [this] { update(); });
}

void TimelineView::setGroups(std::vector<Group> groups) {
  m_groups = std::move(groups);
  m_selected = Hit{};
  m_rangeFrom = m_rangeTo = 0;
  if (!m_headerWidthChosen) m_headerWidth = fittedHeaderWidth();
  updateTotalExtent();
  relayout();
  fitAll();
}

void TimelineView::setGroupLabel(int group, const QString& label) {
  if (group < 0 || group >= static_cast<int>(m_groups.size())) return;
  m_groups[static_cast<size_t>(group)].label = label;
  update();
}

QString TimelineView::laneHeaderText(int group, int lane) const {
  const TimelineLane& l = m_groups[group].model->lanes()[lane];
  return qs(l.title) + QStringLiteral("  ·  ") + qs(l.processTitle);
}

int TimelineView::fittedHeaderWidth() const {
  const QFontMetrics fm(font());
  int widest = 0;
  for (int g = 0; g < static_cast<int>(m_groups.size()); ++g) {
    const int lanes = static_cast<int>(m_groups[g].model->lanes().size());
    for (int l = 0; l < lanes && l < 2000; ++l) widest = std::max(widest, fm.horizontalAdvance(laneHeaderText(g, l)));
  }
  return std::clamp(widest + 16, kHeaderWidth, kMaxHeaderWidth);
}

int TimelineView::plotLeft() const {
  // Never more than 40% of the widget, so a narrow dock keeps room for the plot.
  return std::clamp(m_headerWidth, kMinHeaderWidth, std::max(kMinHeaderWidth, width() * 2 / 5));
}

bool TimelineView::onHeaderEdge(int x) const {
  // Only on the headers' side: the plot's first pixels belong to events starting at the left edge.
  return x < plotLeft() && x >= plotLeft() - kHeaderGrip;
}

void TimelineView::setHeaderWidth(int width) {
  m_headerWidth = std::clamp(width, kMinHeaderWidth, kMaxHeaderWidth);
  m_headerWidthChosen = true;
  update();
  emit viewChanged();
}

QString TimelineView::headerToolTip(const QPoint& pos) const {
  if (pos.x() >= plotLeft() || pos.y() < kRulerHeight) return {};
  const int contentY = pos.y() - kRulerHeight + m_vbar->value();
  for (const LaneGeometry& geo : m_geometry) {
    if (contentY < geo.top || contentY >= geo.top + geo.height) continue;
    if (geo.lane < 0) return m_groups[geo.group].label;
    const TimelineLane& lane = m_groups[geo.group].model->lanes()[geo.lane];
    return qs(lane.title) + QLatin1Char('\n') + qs(lane.processTitle);
  }
  return {};
}

void TimelineView::setHighlighted(int group, std::vector<uint32_t> events) {
  if (group < 0 || group >= static_cast<int>(m_groups.size())) return;
  std::sort(events.begin(), events.end());
  m_groups[group].highlighted = std::move(events);
  update();
}

void TimelineView::setOffsets(const std::vector<int64_t>& offsets) {
  for (size_t g = 0; g < m_groups.size() && g < offsets.size(); ++g) m_groups[g].offsetNs = offsets[g];
  updateTotalExtent();
  clampView();
  update();
  emit viewChanged();
}

void TimelineView::updateTotalExtent() {
  m_totalStart = 0;
  m_totalEnd = 0;
  bool first = true;
  for (const Group& g : m_groups) {
    const double s = static_cast<double>(g.model->startNs() - g.offsetNs);
    const double e = static_cast<double>(g.model->endNs() - g.offsetNs);
    m_totalStart = first ? s : std::min(m_totalStart, s);
    m_totalEnd = first ? e : std::max(m_totalEnd, e);
    first = false;
  }
  if (m_totalEnd <= m_totalStart) m_totalEnd = m_totalStart + 1000;
}

void TimelineView::relayout() {
  m_geometry.clear();
  m_laneTop.assign(m_groups.size(), {});
  int y = 0;
  for (int g = 0; g < static_cast<int>(m_groups.size()); ++g) {
    if (!m_groups[g].label.isEmpty()) {
      m_geometry.push_back({g, -1, y, kGroupHeader});
      y += kGroupHeader;
    }
    const auto& lanes = m_groups[g].model->lanes();
    for (int l = 0; l < static_cast<int>(lanes.size()); ++l) {
      const int h = lanes[l].kind == LaneKind::kCounter ? kCounterHeight
                                                        : static_cast<int>(lanes[l].rows.size()) * kRowHeight + 4;
      m_geometry.push_back({g, l, y, h});
      m_laneTop[g].push_back(y);
      y += h;
    }
  }
  const int visible = std::max(0, height() - kRulerHeight);
  m_vbar->setRange(0, std::max(0, y - visible));
  m_vbar->setPageStep(std::max(1, visible));
  m_vbar->setSingleStep(kRowHeight);
}

int TimelineView::contentHeight() const {
  return m_geometry.empty() ? 0 : m_geometry.back().top + m_geometry.back().height;
}

int TimelineView::plotWidth() const {
  return std::max(1, width() - plotLeft() - m_vbar->sizeHint().width());
}

double TimelineView::nsPerPixel() const {
  return m_viewSpan / plotWidth();
}

double TimelineView::xOf(double viewNs) const {
  return plotLeft() + (viewNs - m_viewStart) / nsPerPixel();
}

double TimelineView::viewNsAt(double x) const {
  return m_viewStart + (x - plotLeft()) * nsPerPixel();
}

void TimelineView::clampView() {
  const double total = m_totalEnd - m_totalStart;
  m_viewSpan = std::clamp(m_viewSpan, kMinSpanNs, std::max(kMinSpanNs, total * 1.5));
  const double minStart = m_totalStart - m_viewSpan * 0.5;
  const double maxStart = m_totalEnd - m_viewSpan * 0.5;
  m_viewStart = std::clamp(m_viewStart, minStart, std::max(minStart, maxStart));
}

void TimelineView::setVisibleRange(double startNs, double endNs) {
  if (endNs < startNs) std::swap(startNs, endNs);
  m_viewSpan = std::max(kMinSpanNs, endNs - startNs);
  m_viewStart = startNs;
  clampView();
  update();
  emit viewChanged();
}

void TimelineView::zoomBy(double factor, double anchorFraction) {
  if (factor <= 0) return;
  const double anchor = m_viewStart + m_viewSpan * anchorFraction;
  const double span = m_viewSpan / factor;
  setVisibleRange(anchor - span * anchorFraction, anchor - span * anchorFraction + span);
}

void TimelineView::panBy(double fraction) {
  setVisibleRange(m_viewStart + m_viewSpan * fraction, visibleEndNs() + m_viewSpan * fraction);
}

void TimelineView::fitAll() {
  const double margin = (m_totalEnd - m_totalStart) * 0.01;
  setVisibleRange(m_totalStart - margin, m_totalEnd + margin);
}

void TimelineView::fitSelection() {
  if (hasRange()) {
    const double margin = (m_rangeTo - m_rangeFrom) * 0.05;
    setVisibleRange(m_rangeFrom - margin, m_rangeTo + margin);
    return;
  }
  if (m_selected.group >= 0 && m_selected.event >= 0) {
    const Group& g = m_groups[m_selected.group];
    const profiler::TraceEvent& e = g.model->trace().events[m_selected.event];
    const double s = static_cast<double>(e.tsNs - g.offsetNs);
    const double d = std::max<double>(static_cast<double>(e.endNs() - e.tsNs), 1000.0);
    setVisibleRange(s - d * 0.25, s + d * 1.25);
    return;
  }
  fitAll();
}

void TimelineView::selectEvent(int group, int64_t event, bool reveal) {
  if (group < 0 || group >= static_cast<int>(m_groups.size()) || event < 0 ||
      event >= static_cast<int64_t>(m_groups[group].model->trace().events.size())) {
    m_selected = Hit{};
    update();
    emit eventSelected(-1, -1);
    return;
  }
  m_selected = Hit{group, event};
  if (reveal) {
    const Group& g = m_groups[group];
    const profiler::TraceEvent& e = g.model->trace().events[event];
    const double s = static_cast<double>(e.tsNs - g.offsetNs);
    const double end = static_cast<double>(e.endNs() - g.offsetNs);
    if (end < m_viewStart || s > visibleEndNs() || (end - s) > m_viewSpan) {
      const double d = std::max(end - s, m_viewSpan * 0.2);
      setVisibleRange(s - d * 0.5, s + d * 1.5);
    }
    const int lane = g.model->laneOf(static_cast<uint32_t>(event));
    for (const LaneGeometry& geo : m_geometry) {
      if (geo.group == group && geo.lane == lane) {
        const int rowTop = geo.top + g.model->depthOf(static_cast<uint32_t>(event)) * kRowHeight;
        const int visible = height() - kRulerHeight;
        if (rowTop < m_vbar->value() || rowTop + kRowHeight > m_vbar->value() + visible)
          m_vbar->setValue(rowTop - visible / 3);
      }
    }
  }
  update();
  emit eventSelected(group, event);
}

void TimelineView::selectRange(double fromViewNs, double toViewNs) {
  m_rangeFrom = std::min(fromViewNs, toViewNs);
  m_rangeTo = std::max(fromViewNs, toViewNs);
  update();
  emit rangeSelected(m_rangeFrom, m_rangeTo);
}

TimelineView::Hit TimelineView::hitAt(const QPoint& pos) const {
  if (pos.x() < plotLeft() || pos.y() < kRulerHeight) return {};
  const int contentY = pos.y() - kRulerHeight + m_vbar->value();
  const double slack = 3 * nsPerPixel();
  for (const LaneGeometry& geo : m_geometry) {
    if (geo.lane < 0 || contentY < geo.top || contentY >= geo.top + geo.height) continue;
    const Group& g = m_groups[geo.group];
    const TimelineLane& lane = g.model->lanes()[geo.lane];
    if (lane.kind == LaneKind::kCounter) return {};
    const int64_t ns = static_cast<int64_t>(std::llround(viewNsAt(pos.x()))) + g.offsetNs;
    const int row = (contentY - geo.top) / kRowHeight;
    // Instants sit on the top row: check them first, within a few pixels.
    if (row == 0 && !lane.instantTs.empty()) {
      auto it = std::lower_bound(lane.instantTs.begin(), lane.instantTs.end(), ns - static_cast<int64_t>(slack));
      if (it != lane.instantTs.end() && std::abs(*it - ns) <= slack)
        return {geo.group, static_cast<int64_t>(lane.instants[static_cast<size_t>(it - lane.instantTs.begin())])};
    }
    const int64_t item = g.model->itemAt(geo.lane, row, ns, static_cast<int64_t>(slack));
    if (item < 0) return {};
    if (lane.kind == LaneKind::kAsync) {
      // A step tick within a few pixels wins over its span, so steps can be hovered and selected.
      const AsyncSlice& slice = g.model->asyncSlices()[static_cast<size_t>(item)];
      const auto& events = g.model->trace().events;
      int64_t best = -1;
      double bestDistance = slack;
      for (uint32_t k = slice.firstStep; k < slice.firstStep + slice.stepCount; ++k) {
        const uint32_t step = g.model->asyncSteps()[k];
        const double distance = std::abs(static_cast<double>(events[step].tsNs - ns));
        if (distance <= bestDistance) {
          best = step;
          bestDistance = distance;
        }
      }
      if (best >= 0) return {geo.group, best};
    }
    return {geo.group, static_cast<int64_t>(g.model->itemEvent(lane, static_cast<uint32_t>(item)))};
  }
  return {};
}

QRectF TimelineView::eventRect(int group, uint32_t event) const {
  if (group < 0 || group >= static_cast<int>(m_groups.size())) return {};
  const Group& g = m_groups[group];
  const int lane = g.model->laneOf(event);
  if (lane < 0 || lane >= static_cast<int>(m_laneTop[group].size())) return {};
  const profiler::TraceEvent& e = g.model->trace().events[event];
  const double x0 = xOf(static_cast<double>(e.tsNs - g.offsetNs));
  const double x1 = std::max(x0 + 1, xOf(static_cast<double>(e.endNs() - g.offsetNs)));
  const double y = kRulerHeight + m_laneTop[group][lane] - m_vbar->value() + g.model->depthOf(event) * kRowHeight + 1;
  return QRectF(x0, y, x1 - x0, kRowHeight - 2);
}

void TimelineView::setDark(bool dark) {
  m_dark = dark;
  update();
}

void TimelineView::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  QPainter p(this);
  p.fillRect(rect(), m_dark ? QColor(0x20, 0x22, 0x26) : QColor(0xfa, 0xfa, 0xfa));
  m_lastRuns = 0;
  m_lastSteps = 0;
  if (m_groups.empty()) {
    p.setPen(m_dark ? Qt::lightGray : Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, QStringLiteral("No trace: File → Open Trace… (Ctrl+T)"));
    m_lastPaintMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    return;
  }
  paintLanes(p);
  paintFlows(p);
  paintRuler(p);
  m_lastPaintMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

void TimelineView::paintRuler(QPainter& p) {
  const QColor bg = m_dark ? QColor(0x2c, 0x2f, 0x35) : QColor(0xee, 0xee, 0xee);
  const QColor fg = m_dark ? QColor(0xdd, 0xdd, 0xdd) : QColor(0x33, 0x33, 0x33);
  p.fillRect(QRect(0, 0, width(), kRulerHeight), bg);
  p.setPen(fg);
  // Adaptive units: the smallest 1-2-5 step that leaves ~90 px between labels.
  const double target = nsPerPixel() * 90;
  double step = std::pow(10.0, std::floor(std::log10(std::max(target, 1.0))));
  if (step * 2 >= target)
    step *= 2;
  else if (step * 5 >= target)
    step *= 5;
  else
    step *= 10;
  const double first = std::ceil(m_viewStart / step) * step;
  for (double t = first; t <= visibleEndNs(); t += step) {
    const int x = static_cast<int>(std::lround(xOf(t)));
    p.drawLine(x, kRulerHeight - 7, x, kRulerHeight);
    p.drawText(QRect(x + 3, 2, 120, kRulerHeight - 6), Qt::AlignLeft | Qt::AlignVCenter, formatDuration(t));
    p.setPen(m_dark ? QColor(255, 255, 255, 20) : QColor(0, 0, 0, 18));
    p.drawLine(x, kRulerHeight, x, height());
    p.setPen(fg);
  }
  p.fillRect(QRect(0, 0, plotLeft(), kRulerHeight), bg);
  p.drawText(QRect(6, 0, plotLeft() - 8, kRulerHeight), Qt::AlignLeft | Qt::AlignVCenter,
             QStringLiteral("%1 / px").arg(formatDuration(nsPerPixel())));
  if (m_hiddenFlows > 0) {
    p.drawText(QRect(width() - 330, 0, 300, kRulerHeight), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("%1 flows: zoom in to draw them").arg(m_hiddenFlows));
  }
  if (hasRange()) {
    const double x0 = xOf(m_rangeFrom), x1 = xOf(m_rangeTo);
    p.fillRect(QRectF(x0, kRulerHeight - 5, std::max(1.0, x1 - x0), 5), QColor(0x1e, 0x88, 0xe5));
  }
}

void TimelineView::paintLanes(QPainter& p) {
  const int scroll = m_vbar->value();
  const int plotRight = plotLeft() + plotWidth();
  const QColor text = m_dark ? QColor(0xe0, 0xe0, 0xe0) : QColor(0x20, 0x20, 0x20);
  const QColor headerBg = m_dark ? QColor(0x28, 0x2a, 0x30) : QColor(0xf0, 0xf0, 0xf0);
  const QColor merged = m_dark ? QColor(0x70, 0x78, 0x88) : QColor(0x9a, 0xa4, 0xb4);
  const QFontMetrics fm(font());
  const double charWidth = std::max(3, fm.horizontalAdvance(QLatin1Char('i')));
  p.setClipRect(QRect(0, kRulerHeight, width(), height() - kRulerHeight));

  // Highlighted events in the visible window, per lane: one pass over each highlight list per frame, capped.
  std::vector<std::vector<std::vector<uint32_t>>> visibleHighlights(m_groups.size());
  int highlightBudget = kMaxHighlightsPerFrame;
  for (size_t gi = 0; gi < m_groups.size(); ++gi) {
    const Group& g = m_groups[gi];
    visibleHighlights[gi].resize(g.model->lanes().size());
    const int64_t from = static_cast<int64_t>(std::floor(m_viewStart)) + g.offsetNs;
    const int64_t to = static_cast<int64_t>(std::ceil(visibleEndNs())) + g.offsetNs;
    for (uint32_t ev : g.highlighted) {
      const int lane = g.model->laneOf(ev);
      if (lane < 0) continue;
      const profiler::TraceEvent& e = g.model->trace().events[ev];
      if (e.endNs() < from || e.tsNs > to) continue;
      if (--highlightBudget < 0) break;
      visibleHighlights[gi][static_cast<size_t>(lane)].push_back(ev);
    }
  }

  for (const LaneGeometry& geo : m_geometry) {
    const int top = kRulerHeight + geo.top - scroll;
    if (top > height() || top + geo.height < kRulerHeight) continue;
    const Group& g = m_groups[geo.group];
    if (geo.lane < 0) {
      p.fillRect(QRect(0, top, width(), geo.height), m_dark ? QColor(0x33, 0x44, 0x66) : QColor(0xd6, 0xe4, 0xf5));
      p.setPen(text);
      p.drawText(QRect(6, top, width() - 12, geo.height), Qt::AlignLeft | Qt::AlignVCenter, g.label);
      continue;
    }
    const TimelineLane& lane = g.model->lanes()[geo.lane];
    const int64_t from = static_cast<int64_t>(std::floor(m_viewStart)) + g.offsetNs;
    const int64_t to = static_cast<int64_t>(std::ceil(visibleEndNs())) + g.offsetNs;
    const double npp = nsPerPixel();
    auto x = [&](int64_t ns) { return xOf(static_cast<double>(ns - g.offsetNs)); };

    p.setClipRect(QRect(plotLeft(), kRulerHeight, plotWidth(), height() - kRulerHeight));
    if (lane.kind == LaneKind::kCounter) {
      // Area chart; per pixel column the maximum of the samples falling into it (level of detail).
      const auto& s = lane.samples;
      auto it =
          std::upper_bound(s.begin(), s.end(), from, [](int64_t v, const CounterSample& c) { return v < c.tsNs; });
      if (it != s.begin()) --it;
      const double scale = lane.counterMax > 0 ? (geo.height - 6) / lane.counterMax : 0;
      const int base = top + geo.height - 2;
      for (size_t k = 0; k < lane.series.size(); ++k) {
        QColor c = colourFor(lane.series[k]);
        c.setAlpha(160);
        QPainterPath path;
        path.moveTo(std::max<double>(plotLeft(), x(it != s.end() ? it->tsNs : from)), base);
        for (auto cur = it; cur != s.end() && cur->tsNs <= to;) {
          const double px = std::floor(x(cur->tsNs));
          double v = cur->values[k];
          auto next = cur + 1;
          while (next != s.end() && std::floor(x(next->tsNs)) <= px) v = std::max(v, (next++)->values[k]);
          const double nextX = next != s.end() ? std::min<double>(x(next->tsNs), plotRight) : plotRight;
          const double y = base - std::max(0.0, v) * scale;
          path.lineTo(std::max<double>(px, plotLeft()), y);
          path.lineTo(std::max(nextX, px + 1), y);
          cur = next;
          ++m_lastRuns;
        }
        path.lineTo(path.currentPosition().x(), base);
        path.closeSubpath();
        p.fillPath(path, c);
      }
    } else {
      std::vector<QLineF> stepTicks;
      for (int r = 0; r < static_cast<int>(lane.rows.size()); ++r) {
        const int y = top + r * kRowHeight + 1;
        if (y > height() || y + kRowHeight < kRulerHeight) continue;
        g.model->runs(geo.lane, r, from, to, npp, m_runs);
        m_lastRuns += static_cast<int>(m_runs.size());
        // Merged runs that touch (less than a pixel apart) are painted as one box.
        double pendingX0 = 0, pendingX1 = -1e18;
        auto flushMerged = [&] {
          if (pendingX1 > pendingX0) p.fillRect(QRectF(pendingX0, y, pendingX1 - pendingX0, kRowHeight - 2), merged);
          pendingX1 = -1e18;
        };
        for (const SliceRun& run : m_runs) {
          const double x0 = std::max<double>(x(run.startNs), plotLeft() - 2);
          const double x1 = std::min<double>(std::max(x(run.endNs), x0 + 1), plotRight + 2);
          if (run.count > 1) {
            if (x0 - pendingX1 < 1.0) {
              pendingX1 = std::max(pendingX1, x1);
            } else {
              flushMerged();
              pendingX0 = x0;
              pendingX1 = x1;
            }
            continue;
          }
          flushMerged();
          const QRectF box(x0, y, x1 - x0, kRowHeight - 2);
          const std::string_view name = g.model->itemName(lane, run.item);
          p.fillRect(box, colourFor(name));
          if (lane.kind == LaneKind::kAsync) {
            // Async steps (T/p/n) as ticks with a notch on their span, one per pixel column.
            const AsyncSlice& slice = g.model->asyncSlices()[run.item];
            const auto& steps = g.model->asyncSteps();
            const auto& events = g.model->trace().events;
            double lastX = -1e9;
            for (uint32_t k = slice.firstStep; k < slice.firstStep + slice.stepCount; ++k) {
              const double px = x(events[steps[k]].tsNs);
              if (px < box.left() || px > box.right() || px - lastX < 1) continue;
              lastX = px;
              stepTicks.emplace_back(QPointF(px, y), QPointF(px, y + kRowHeight - 2));
              stepTicks.emplace_back(QPointF(px - 3, y), QPointF(px, y + 4));
              stepTicks.emplace_back(QPointF(px + 3, y), QPointF(px, y + 4));
              ++m_lastSteps;
            }
          }
          if (box.width() > 30) {
            // Shape only what can fit: kernel names can be hundreds of characters long.
            const size_t fits = static_cast<size_t>(box.width() / charWidth) + 2;
            p.setPen(Qt::black);
            p.drawText(box.adjusted(3, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter,
                       fm.elidedText(qs(name.substr(0, fits)), Qt::ElideRight, static_cast<int>(box.width()) - 5));
          }
        }
        flushMerged();
        if (!stepTicks.empty()) {
          p.setPen(QPen(m_dark ? QColor(0xff, 0xff, 0xff, 220) : QColor(0x10, 0x10, 0x10, 220), 1.5));
          p.drawLines(stepTicks.data(), static_cast<int>(stepTicks.size()));
          stepTicks.clear();
        }
      }
      // Instants: small diamonds on the top row, one per pixel column.
      if (!lane.instantTs.empty()) {
        auto it = std::lower_bound(lane.instantTs.begin(), lane.instantTs.end(), from);
        double lastX = -1e9;
        p.setPen(Qt::NoPen);
        p.setBrush(m_dark ? QColor(0xff, 0xc1, 0x07) : QColor(0xd8, 0x43, 0x15));
        for (; it != lane.instantTs.end() && *it <= to; ++it) {
          const double px = x(*it);
          if (px - lastX < 1) continue;
          lastX = px;
          const double cy = top + kRowHeight / 2.0;
          const QPointF pts[4] = {{px, cy - 6}, {px + 4, cy}, {px, cy + 6}, {px - 4, cy}};
          p.drawPolygon(pts, 4);
          ++m_lastRuns;
        }
        p.setBrush(Qt::NoBrush);
      }
    }

    // Highlights (search matches, linked kernels) and the selection.
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(m_dark ? QColor(0xff, 0xee, 0x58) : QColor(0xf5, 0x7f, 0x17), 2));
    for (uint32_t ev : visibleHighlights[geo.group][geo.lane]) {
      const profiler::TraceEvent& e = g.model->trace().events[ev];
      const double x0 = x(e.tsNs);
      const double yy = top + g.model->depthOf(ev) * kRowHeight + 1;
      p.drawRect(QRectF(x0, yy, std::max(2.0, x(e.endNs()) - x0), kRowHeight - 2));
    }
    if (m_selected.group == geo.group && m_selected.event >= 0 &&
        g.model->laneOf(static_cast<uint32_t>(m_selected.event)) == geo.lane) {
      const profiler::TraceEvent& e = g.model->trace().events[m_selected.event];
      const double x0 = x(e.tsNs);
      const double yy = top + g.model->depthOf(static_cast<uint32_t>(m_selected.event)) * kRowHeight;
      p.setPen(QPen(m_dark ? Qt::white : Qt::black, 2.5));
      p.drawRect(QRectF(x0 - 1, yy, std::max(3.0, x(e.endNs()) - x0 + 2), kRowHeight));
    }

    // Lane header (drawn last so boxes never cover it).
    p.setClipRect(QRect(0, kRulerHeight, width(), height() - kRulerHeight));
    p.fillRect(QRect(0, top, plotLeft(), geo.height), headerBg);
    p.setPen(m_dark ? QColor(255, 255, 255, 40) : QColor(0, 0, 0, 30));
    p.drawLine(0, top + geo.height - 1, width(), top + geo.height - 1);
    p.setPen(text);
    // Elided in the middle: TF's lanes differ only at the end ("…/gpu:0 Compute", "…/stream:12 Tensors").
    p.drawText(QRect(6, top, plotLeft() - 10, std::min(geo.height, kRowHeight + 2)), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(laneHeaderText(geo.group, geo.lane), Qt::ElideMiddle, plotLeft() - 12));
  }
  p.setClipping(false);
}

QPainterPath TimelineView::flowCurve(int group, uint32_t from, uint32_t to) const {
  const QRectF ra = eventRect(group, from);
  const QRectF rb = eventRect(group, to);
  if (ra.isEmpty() || rb.isEmpty()) return {};
  // From the end of the source slice to the start of the target, leaving and arriving horizontally; the
  // control points reach out at least 24 px so a target that starts before the source ends loops back visibly.
  const QPointF p0(ra.right(), ra.center().y());
  const QPointF p1(rb.left(), rb.center().y());
  const double reach = std::max(24.0, std::abs(p1.x() - p0.x()) / 2);
  QPainterPath path(p0);
  path.cubicTo(p0 + QPointF(reach, 0), p1 - QPointF(reach, 0), p1);
  return path;
}

void TimelineView::paintFlows(QPainter& p) {
  m_lastFlows = 0;
  p.setClipRect(QRect(plotLeft(), kRulerHeight, plotWidth(), height() - kRulerHeight));
  QPainterPath curves;
  std::vector<QLineF> heads;
  auto addArrow = [&](int gi, const FlowArrow& f) {
    const QPainterPath curve = flowCurve(gi, f.from, f.to);
    if (curve.isEmpty()) return;
    const QRectF bounds = curve.controlPointRect();
    if (bounds.bottom() < kRulerHeight || bounds.top() > height()) return;
    curves.addPath(curve);
    const QPointF p1 = curve.currentPosition();
    heads.emplace_back(p1, p1 + QPointF(-5, -3));
    heads.emplace_back(p1, p1 + QPointF(-5, 3));
    ++m_lastFlows;
  };
  m_hiddenFlows = 0;
  for (int gi = 0; gi < static_cast<int>(m_groups.size()); ++gi) {
    const Group& g = m_groups[gi];
    const int64_t from = static_cast<int64_t>(std::floor(m_viewStart)) + g.offsetNs;
    const int64_t to = static_cast<int64_t>(std::ceil(visibleEndNs())) + g.offsetNs;
    const auto& events = g.model->trace().events;
    const auto& flows = g.model->flows();
    const auto [first, last] = g.model->flowsInRange(from, to);
    if (last - first <= kMaxFlowsDrawn) {
      for (size_t i = first; i < last; ++i) {
        const FlowArrow& f = flows[i];
        if (std::max(events[f.from].endNs(), events[f.to].endNs()) < from) continue;
        addArrow(gi, f);
      }
    } else {
      // Too dense to read: only the selected event's flows (zoom in to see the others).
      m_hiddenFlows += static_cast<int64_t>(last - first);
      if (m_selected.group == gi && m_selected.event >= 0) {
        const auto sel = static_cast<uint32_t>(m_selected.event);
        for (const FlowArrow& f : flows)
          if (f.from == sel || f.to == sel) addArrow(gi, f);
      }
    }
  }
  p.setPen(QPen(m_dark ? QColor(0x90, 0xca, 0xf9, 200) : QColor(0x1e, 0x40, 0xaf, 170), 1));
  p.setBrush(Qt::NoBrush);
  p.drawPath(curves);
  p.drawLines(heads.data(), static_cast<int>(heads.size()));
  p.setClipping(false);
}

void TimelineView::resizeEvent(QResizeEvent*) {
  const int w = m_vbar->sizeHint().width();
  m_vbar->setGeometry(width() - w, kRulerHeight, w, height() - kRulerHeight);
  relayout();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const QPoint cursor = mapFromGlobal(QCursor::pos());
  const double anchor = rect().contains(cursor) && cursor.x() >= plotLeft()
                            ? std::clamp((cursor.x() - plotLeft()) / static_cast<double>(plotWidth()), 0.0, 1.0)
                            : 0.5;
  switch (event->key()) {
    case Qt::Key_W: zoomBy(1.5, anchor); break;
    case Qt::Key_S: zoomBy(1 / 1.5, anchor); break;
    case Qt::Key_A: panBy(-0.15); break;
    case Qt::Key_D: panBy(0.15); break;
    case Qt::Key_F: fitSelection(); break;
    case Qt::Key_Escape:
      m_rangeFrom = m_rangeTo = 0;
      selectEvent(-1, -1, false);
      break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (event->modifiers() & (Qt::ShiftModifier | Qt::AltModifier)) {
    m_vbar->setValue(m_vbar->value() - static_cast<int>(steps * kRowHeight * 3));
  } else {
    const double anchor = std::clamp((event->position().x() - plotLeft()) / static_cast<double>(plotWidth()), 0.0, 1.0);
    zoomBy(std::pow(1.25, steps), anchor);
  }
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  setFocus();
  if (event->button() != Qt::LeftButton) return;
  m_pressPos = event->position().toPoint();
  m_pressViewStart = m_viewStart;
  m_pressScroll = m_vbar->value();
  m_moved = false;
  if (onHeaderEdge(m_pressPos.x())) {
    m_drag = Drag::kHeader;
    return;
  }
  m_drag = (event->modifiers() & Qt::ShiftModifier) || m_pressPos.y() < kRulerHeight ? Drag::kRange : Drag::kPan;
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
  // Double-click on the headers' edge: fit the headers to the lane names again.
  if (onHeaderEdge(event->position().toPoint().x())) {
    m_headerWidthChosen = false;
    m_headerWidth = fittedHeaderWidth();
    update();
    return;
  }
  QWidget::mouseDoubleClickEvent(event);
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (m_drag == Drag::kNone) {
    if (onHeaderEdge(pos.x())) {
      setCursor(Qt::SplitHCursor);
    } else {
      unsetCursor();
    }
    return;
  }
  if (m_drag == Drag::kHeader) {
    setHeaderWidth(pos.x());
    return;
  }
  if ((pos - m_pressPos).manhattanLength() > 3) m_moved = true;
  if (!m_moved) return;
  if (m_drag == Drag::kPan) {
    const double dx = pos.x() - m_pressPos.x();
    setVisibleRange(m_pressViewStart - dx * nsPerPixel(), m_pressViewStart - dx * nsPerPixel() + m_viewSpan);
    m_vbar->setValue(m_pressScroll - (pos.y() - m_pressPos.y()));
  } else {
    m_rangeFrom = std::min(viewNsAt(m_pressPos.x()), viewNsAt(pos.x()));
    m_rangeTo = std::max(viewNsAt(m_pressPos.x()), viewNsAt(pos.x()));
    update();
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  const Drag drag = m_drag;
  m_drag = Drag::kNone;
  if (event->button() != Qt::LeftButton || drag == Drag::kHeader) return;
  if (!m_moved) {
    const Hit hit = hitAt(event->position().toPoint());
    selectEvent(hit.group, hit.event, false);
    return;
  }
  if (drag == Drag::kRange) selectRange(m_rangeFrom, m_rangeTo);
}

bool TimelineView::event(QEvent* event) {
  if (event->type() == QEvent::ShortcutOverride) {
    // The window binds single letters too (D: diff, F: fit the graph); with the timeline focused, its keys win.
    auto* key = static_cast<QKeyEvent*>(event);
    switch (key->key()) {
      case Qt::Key_W:
      case Qt::Key_S:
      case Qt::Key_A:
      case Qt::Key_D:
      case Qt::Key_F:
      case Qt::Key_Escape:
        if ((key->modifiers() & ~Qt::KeypadModifier) == Qt::NoModifier) {
          event->accept();
          return true;
        }
        break;
      default: break;
    }
  }
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (const QString header = headerToolTip(help->pos()); !header.isEmpty()) {
      QToolTip::showText(help->globalPos(), header, this);
      return true;
    }
    const Hit hit = hitAt(help->pos());
    if (hit.group < 0) {
      QToolTip::hideText();
      event->ignore();
      return true;
    }
    const profiler::TraceEvent& e = m_groups[hit.group].model->trace().events[hit.event];
    QString tip = QStringLiteral("<b>%1</b><br>%2").arg(qs(e.name).toHtmlEscaped(), qs(e.cat).toHtmlEscaped());
    if (e.durNs != profiler::kNoDuration)
      tip += QStringLiteral("<br>duration %1").arg(formatDuration(static_cast<double>(e.durNs)));
    tip +=
        QStringLiteral("<br>start %1").arg(formatDuration(static_cast<double>(e.tsNs - m_groups[hit.group].offsetNs)));
    QToolTip::showText(help->globalPos(), tip, this);
    return true;
  }
  return QWidget::event(event);
}

}  // namespace fusionscope::viewer
