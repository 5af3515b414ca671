#include "viewer/timeline_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QShortcut>
#include <QSplitter>
#include <QTableWidget>
#include <QTextBrowser>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "profiler/compare/trace_stats.h"
#include "viewer/timeline_view.h"

namespace fusionscope::viewer {
namespace {

QString qs(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

constexpr int kKernelRole = Qt::UserRole + 1;  // a mapping row's fused kernel
const QString kDetailsHint = QStringLiteral("<i>Click an event for its details; Shift+drag for a range summary.</i>");

QString prettyJson(std::string_view raw) {
  nlohmann::json parsed = nlohmann::json::parse(raw, nullptr, false);
  if (parsed.is_discarded()) return qs(raw);
  return QString::fromStdString(parsed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

TimelinePanel::TimelinePanel(QWidget* parent)
    : QWidget(parent),
      m_view(new TimelineView(this)),
      m_searchEdit(new QLineEdit(this)),
      m_searchStatus(new QLabel(this)),
      m_title(new QLabel(this)),
      m_details(new QTextBrowser(this)),
      m_table(new QTableWidget(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* bar = new QHBoxLayout;
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bar->addWidget(m_title, 1);
  m_searchEdit->setPlaceholderText(QStringLiteral("Search events (all, not only visible)"));
  m_searchEdit->setClearButtonEnabled(true);
  m_searchEdit->setMaximumWidth(320);
  bar->addWidget(m_searchEdit);
  auto* prev = new QToolButton(this);
  prev->setText(QStringLiteral("◀"));
  prev->setToolTip(QStringLiteral("Previous match"));
  auto* next = new QToolButton(this);
  next->setText(QStringLiteral("▶"));
  next->setToolTip(QStringLiteral("Next match"));
  bar->addWidget(prev);
  bar->addWidget(next);
  bar->addWidget(m_searchStatus);
  m_alignButton = new QToolButton(this);
  m_alignButton->setText(QStringLiteral("Align at selection"));
  m_alignButton->setToolTip(
      QStringLiteral("Comparison: put the selected event at time 0 and the other trace's event of the same name too"));
  m_alignButton->hide();
  bar->addWidget(m_alignButton);
  connect(m_alignButton, &QToolButton::clicked, this, [this] { alignAtSelection(); });
  m_alignKernelButton = new QToolButton(this);
  m_alignKernelButton->setText(QStringLiteral("Align at first kernel"));
  m_alignKernelButton->hide();
  bar->addWidget(m_alignKernelButton);
  connect(m_alignKernelButton, &QToolButton::clicked, this, &TimelinePanel::alignAtFirstKernel);
  m_renameButton = new QToolButton(this);
  m_renameButton->setObjectName(QStringLiteral("renameTraces"));
  m_renameButton->setText(QStringLiteral("Rename…"));
  m_renameButton->setToolTip(QStringLiteral("Name the trace (or the two traces) as the timeline and table show them"));
  m_renameButton->hide();
  bar->addWidget(m_renameButton);
  connect(m_renameButton, &QToolButton::clicked, this, [this] {
    QStringList names = m_names;
    for (int i = 0; i < names.size(); ++i) {
      bool ok = false;
      const QString role = names.size() == 2 ? (i == 0 ? QStringLiteral("before") : QStringLiteral("after")) : QString();
      const QString name = QInputDialog::getText(
          this, QStringLiteral("Rename Trace"),
          role.isEmpty() ? QStringLiteral("Name of the trace:") : QStringLiteral("Name of the %1 trace:").arg(role),
          QLineEdit::Normal, names[i], &ok);
      if (!ok) return;
      if (!name.trimmed().isEmpty()) names[i] = name.trimmed();
    }
    renameTraces(names);
  });
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(m_view);
  auto* side = new QSplitter(Qt::Vertical, split);
  m_details->setOpenLinks(false);
  side->addWidget(m_details);
  m_table->setColumnCount(4);
  m_table->setHorizontalHeaderLabels(
      {QStringLiteral("metric"), QStringLiteral("before"), QStringLiteral("after"), QStringLiteral("before / after")});
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Mapping rows ("fusion.2 ← a, b, c") can be long: the metric column is elided, the numbers stay visible.
  m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Interactive);
  m_table->setColumnWidth(0, 190);
  // Rows are as tall as their text: a mapping's replaced kernels wrap instead of being cut.
  m_table->setTextElideMode(Qt::ElideRight);
  m_table->setWordWrap(true);
  m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->verticalHeader()->hide();
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setToolTip(QStringLiteral("Click a fused kernel's row to select its first launch (and its fusion)"));
  connect(m_table, &QTableWidget::cellClicked, this, [this](int row) { selectComparisonRow(row); });
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->hide();
  side->addWidget(m_table);
  split->addWidget(side);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  m_details->setHtml(kDetailsHint);
  connect(m_searchEdit, &QLineEdit::returnPressed, this, [this] {
    if (m_matches.empty() || m_searchEdit->property("searched").toString() != m_searchEdit->text()) {
      search(m_searchEdit->text());
    } else {
      findNext();
    }
  });
  connect(next, &QToolButton::clicked, this, &TimelinePanel::findNext);
  connect(prev, &QToolButton::clicked, this, &TimelinePanel::findPrevious);
  connect(m_view, &TimelineView::eventSelected, this, &TimelinePanel::onEventSelected);
  connect(m_view, &TimelineView::rangeSelected, this, &TimelinePanel::onRangeSelected);
}

void TimelinePanel::resetForNewTrace() {
  m_matches.clear();
  m_matchCursor = -1;
  m_searchEdit->clear();
  m_searchEdit->setProperty("searched", QString());
  m_searchStatus->clear();
  m_details->setHtml(kDetailsHint);
}

void TimelinePanel::setTrace(std::shared_ptr<const TimelineModel> model, const QString& name) {
  m_comparison.reset();
  m_alignButton->hide();
  m_alignKernelButton->hide();
  m_table->hide();
  resetForNewTrace();
  const auto& m = *model;
  m_title->setText(QStringLiteral("<b>%1</b> — %2 lanes, %3 slices, %4 flows, %5 counter samples, %6 instants")
                       .arg(name.toHtmlEscaped())
                       .arg(m.lanes().size())
                       .arg(m.sliceCount())
                       .arg(m.flows().size())
                       .arg(m.counterSampleCount())
                       .arg(m.instantCount()));
  m_names = {name};
  m_renameButton->show();
  std::vector<TimelineView::Group> groups;
  groups.push_back({std::move(model), 0, QString(), {}});
  groups.back().offsetNs = groups.back().model->startNs();
  m_view->setGroups(std::move(groups));
}

void TimelinePanel::setComparison(std::shared_ptr<const TimelineModel> before, const QString& beforeName,
                                  std::shared_ptr<const TimelineModel> after, const QString& afterName,
                                  const profiler::FusionMembership* membership) {
  resetForNewTrace();
  m_comparison = profiler::compareTraces(before->trace(), after->trace(), membership);
  m_title->setText(
      QStringLiteral("<b>before</b> %1 vs <b>after</b> %2 — aligned at the first kernel%3")
          .arg(beforeName.toHtmlEscaped(), afterName.toHtmlEscaped(),
               membership != nullptr ? QStringLiteral("; fusion members from the open module") : QString()));
  m_names = {beforeName, afterName};
  m_renameButton->show();
  m_table->setHorizontalHeaderLabels(
      {QStringLiteral("metric"), QStringLiteral("before"), QStringLiteral("after"), QStringLiteral("before / after")});
  std::vector<TimelineView::Group> groups;
  const int64_t beforeOffset = before->firstKernelNs();
  const int64_t afterOffset = after->firstKernelNs();
  groups.push_back({std::move(before), beforeOffset, QStringLiteral("before: ") + beforeName, {}});
  groups.push_back({std::move(after), afterOffset, QStringLiteral("after: ") + afterName, {}});
  m_view->setGroups(std::move(groups));
  // Start on the device work of both runs (from the aligned first kernel to the later last kernel end).
  double kernelsEnd = 0;
  for (const TimelineView::Group& g : m_view->groups())
    kernelsEnd = std::max(kernelsEnd, static_cast<double>(g.model->lastKernelEndNs() - g.offsetNs));
  if (kernelsEnd > 0) m_view->setVisibleRange(-kernelsEnd * 0.02, kernelsEnd * 1.02);
  fillComparisonTable();
  m_table->show();
  m_alignButton->show();
  m_alignKernelButton->show();
}

void TimelinePanel::setFusionMembership(const profiler::FusionMembership* membership) {
  if (!m_comparison || m_view->groups().size() != 2 || m_names.size() != 2) return;
  const auto before = m_view->groups()[0].model;
  const auto after = m_view->groups()[1].model;
  const QStringList names = m_names;
  const double start = m_view->visibleStartNs();
  const double end = m_view->visibleEndNs();
  setComparison(before, names[0], after, names[1], membership);
  m_view->setVisibleRange(start, end);
}

void TimelinePanel::clear() {
  m_comparison.reset();
  m_alignButton->hide();
  m_alignKernelButton->hide();
  resetForNewTrace();
  m_table->hide();
  m_title->clear();
  m_names.clear();
  m_renameButton->hide();
  m_view->setGroups({});
}

void TimelinePanel::fillComparisonTable() {
  const profiler::TraceComparison& c = *m_comparison;
  struct Metric {
    QString name;
    int64_t before;
    int64_t after;
    bool time;
  };
  const std::vector<Metric> metrics = {
      {QStringLiteral("kernel count"), c.before.kernelCount, c.after.kernelCount, false},
      {QStringLiteral("kernel time"), c.before.kernelTimeNs, c.after.kernelTimeNs, true},
      {QStringLiteral("device time"), c.before.deviceTimeNs, c.after.deviceTimeNs, true},
      {QStringLiteral("busy"), c.before.busyNs, c.after.busyNs, true},
      {QStringLiteral("idle gaps"), c.before.gaps.totalNs, c.after.gaps.totalNs, true},
      {QStringLiteral("gap count"), c.before.gaps.count, c.after.gaps.count, false},
      {QStringLiteral("bytes moved"), c.before.bytes, c.after.bytes, false},
      {QStringLiteral("span"), c.before.spanNs, c.after.spanNs, true},
  };
  m_table->clearContents();
  m_table->setRowCount(static_cast<int>(metrics.size() + 1 + c.mappings.size()));
  auto cell = [&](int row, int column, const QString& text, qint64 raw, bool hasRaw) {
    auto* item = new QTableWidgetItem(text);
    item->setToolTip(text);
    if (hasRaw) item->setData(Qt::UserRole, raw);
    if (column > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_table->setItem(row, column, item);
  };
  auto valueText = [](int64_t v, bool time, const QString& name) {
    if (time) return formatDuration(static_cast<double>(v));
    if (name == QStringLiteral("bytes moved")) return QString::fromStdString(profiler::formatBytes(v));
    return QString::number(v);
  };
  int row = 0;
  for (const Metric& m : metrics) {
    cell(row, 0, m.name, 0, false);
    cell(row, 1, valueText(m.before, m.time, m.name), m.before, true);
    cell(row, 2, valueText(m.after, m.time, m.name), m.after, true);
    // As `fusionscope-cli compare` prints it: before / after (> 1: the after run has less of it).
    cell(row, 3,
         m.after > 0 ? QStringLiteral("%1×").arg(static_cast<double>(m.before) / m.after, 0, 'f', 2)
                     : QStringLiteral("–"),
         0, false);
    ++row;
  }
  // Speedup of device time, as the CLI's text report states it.
  const double speedup = c.after.deviceTimeNs > 0
                             ? static_cast<double>(c.before.deviceTimeNs) / static_cast<double>(c.after.deviceTimeNs)
                             : 0.0;
  // With iterations marked (fusionscope-cli run --trace), the spread of the per-iteration ratios: one figure from
  // two short runs says little on a busy machine.
  const profiler::IterationSpread spread = profiler::iterationSpeedups(c.before, c.after);
  cell(row, 0,
       spread.count > 0 ? QStringLiteral("speedup (device time; %1 iterations: median, range)").arg(spread.count)
                        : QStringLiteral("speedup (device time)"),
       0, false);
  cell(row, 3,
       speedup <= 0       ? QStringLiteral("–")
       : spread.count > 0 ? QStringLiteral("%1× (%2×, %3–%4×)")
                                .arg(speedup, 0, 'f', 2)
                                .arg(spread.median, 0, 'f', 2)
                                .arg(spread.min, 0, 'f', 2)
                                .arg(spread.max, 0, 'f', 2)
                          : QStringLiteral("%1×").arg(speedup, 0, 'f', 2),
       0, false);
  ++row;
  for (const profiler::KernelMapping& m : c.mappings) {
    QStringList before;
    for (const std::string& b : m.before) before << QString::fromStdString(b);
    cell(row, 0, QString::fromStdString(m.after) + QStringLiteral(" ← ") + before.join(QStringLiteral(", ")), 0, false);
    m_table->item(row, 0)->setData(kKernelRole, QString::fromStdString(m.after));
    cell(row, 1, formatDuration(static_cast<double>(m.beforeNs)), m.beforeNs, true);
    cell(row, 2, formatDuration(static_cast<double>(m.afterNs)), m.afterNs, true);
    cell(row, 3, m.speedup() > 0 ? QStringLiteral("%1×").arg(m.speedup(), 0, 'f', 2) : QStringLiteral("–"), 0, false);
    ++row;
  }
}

bool TimelinePanel::selectComparisonRow(int row) {
  const QTableWidgetItem* item = m_table->item(row, 0);
  const QString kernel = item != nullptr ? item->data(kKernelRole).toString() : QString();
  if (kernel.isEmpty() || m_view->groups().size() != 2) return false;
  // The fused kernel's first launch in the "after" trace; selecting it links it to the graph as a click would.
  const std::vector<uint32_t> launches = m_view->groups()[1].model->eventsNamed(kernel.toStdString());
  if (launches.empty()) return false;
  m_view->selectEvent(1, launches.front(), true);
  return true;
}

void TimelinePanel::onEventSelected(int group, qint64 event) {
  if (group < 0 || event < 0) {
    m_details->setHtml(QStringLiteral("<i>Nothing selected.</i>"));
    return;
  }
  const TimelineView::Group& g = m_view->groups()[group];
  const TimelineModel& model = *g.model;
  const profiler::TraceEvent& e = model.trace().events[static_cast<size_t>(event)];
  QString html = QStringLiteral("<h3>%1</h3><table cellspacing=2>").arg(qs(e.name).toHtmlEscaped());
  auto row = [&html](const QString& key, const QString& value) {
    html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(key, value.toHtmlEscaped());
  };
  if (!g.label.isEmpty()) row(QStringLiteral("trace"), g.label);
  row(QStringLiteral("category"), qs(e.cat));
  row(QStringLiteral("phase"), QString(QLatin1Char(e.phase)));
  const int lane = model.laneOf(static_cast<uint32_t>(event));
  if (lane >= 0) {
    row(QStringLiteral("process"), qs(model.lanes()[lane].processTitle));
    row(QStringLiteral("thread"), qs(model.lanes()[lane].title));
    row(QStringLiteral("depth"), QString::number(model.depthOf(static_cast<uint32_t>(event))));
  } else {
    row(QStringLiteral("pid / tid"), qs(profiler::trackText(e.pid) + " / " + profiler::trackText(e.tid)));
  }
  row(QStringLiteral("start"),
      formatDuration(static_cast<double>(e.tsNs - g.offsetNs)) + QStringLiteral("  (ts %1 ns)").arg(e.tsNs));
  if (e.durNs != profiler::kNoDuration) row(QStringLiteral("duration"), formatDuration(static_cast<double>(e.durNs)));
  if (!e.id.empty()) row(QStringLiteral("id"), qs(e.id));
  const int64_t bytes = profiler::argsBytes(e.args);
  if (bytes > 0) {
    row(QStringLiteral("bytes"), QString::fromStdString(profiler::formatBytes(bytes)));
    if (e.durNs > 0)
      row(QStringLiteral("bandwidth"),
          QStringLiteral("%1 GB/s").arg(static_cast<double>(bytes) / static_cast<double>(e.durNs), 0, 'f', 2));
  }
  html += QStringLiteral("</table>");
  if (!e.args.empty()) html += QStringLiteral("<b>args</b><pre>%1</pre>").arg(prettyJson(e.args).toHtmlEscaped());
  if (!e.extra.empty())
    html += QStringLiteral("<b>other fields</b><pre>%1</pre>")
                .arg(prettyJson("{" + std::string(e.extra) + "}").toHtmlEscaped());
  // An async span's steps (the ticks on it): time from the span's start, name, and args.
  for (const AsyncSlice& slice : model.asyncSlices()) {
    if (slice.begin != static_cast<uint32_t>(event) || slice.stepCount == 0) continue;
    html += QStringLiteral("<b>%1 steps</b><table cellspacing=2>").arg(slice.stepCount);
    for (uint32_t k = slice.firstStep; k < slice.firstStep + slice.stepCount; ++k) {
      const profiler::TraceEvent& step = model.trace().events[model.asyncSteps()[k]];
      html += QStringLiteral("<tr><td>+%1</td><td>%2</td><td><tt>%3</tt></td></tr>")
                  .arg(formatDuration(static_cast<double>(step.tsNs - slice.startNs)),
                       QString(QLatin1Char(step.phase)) + QLatin1Char(' ') + qs(step.name).toHtmlEscaped(),
                       qs(step.args).toHtmlEscaped());
    }
    html += QStringLiteral("</table>");
    break;
  }

  // Comparison: the kernels on the other side this one replaced or was replaced by.
  if (m_comparison && e.phase == 'X') {
    std::set<std::string> otherNames;
    const std::string name(e.name);
    for (const profiler::KernelMapping& m : m_comparison->mappings) {
      if (group == 1 && m.after == name) otherNames.insert(m.before.begin(), m.before.end());
      if (group == 0 && std::find(m.before.begin(), m.before.end(), name) != m.before.end()) otherNames.insert(m.after);
    }
    const int other = 1 - group;
    std::vector<uint32_t> hits;
    const auto& events = m_view->groups()[other].model->trace().events;
    for (uint32_t i = 0; i < events.size(); ++i)
      if (events[i].phase == 'X' && otherNames.count(std::string(events[i].name))) hits.push_back(i);
    QStringList names;
    for (const std::string& n : otherNames) names << QString::fromStdString(n);
    html +=
        QStringLiteral("<p><b>%1</b>: %2 (%3 launches highlighted)</p>")
            .arg(group == 1 ? QStringLiteral("replaced") : QStringLiteral("replaced by"),
                 names.isEmpty() ? QStringLiteral("nothing mapped") : names.join(QStringLiteral(", ")).toHtmlEscaped())
            .arg(hits.size());
    m_view->setHighlighted(other, std::move(hits));
  }
  m_details->setHtml(html);
  if (e.phase == 'X') emit kernelSelected(qs(model.instructionOf(static_cast<uint32_t>(event))));
}

void TimelinePanel::onRangeSelected(double from, double to) {
  QString html = QStringLiteral("<h3>Range %1 – %2</h3>").arg(formatDuration(from), formatDuration(to));
  for (const TimelineView::Group& g : m_view->groups()) {
    const RangeSummary s =
        g.model->summarize(static_cast<int64_t>(from) + g.offsetNs, static_cast<int64_t>(to) + g.offsetNs);
    if (!g.label.isEmpty()) html += QStringLiteral("<h4>%1</h4>").arg(g.label.toHtmlEscaped());
    html += QStringLiteral("<p>%1 slices, %2 in total (width %3)</p>")
                .arg(s.count)
                .arg(formatDuration(static_cast<double>(s.totalNs)), formatDuration(to - from));
    html += QStringLiteral("<table cellspacing=3><tr><th align=left>name</th><th>count</th><th>total</th></tr>");
    size_t shown = 0;
    for (const RangeSummary::Name& n : s.byName) {
      if (++shown > 40) break;
      html += QStringLiteral("<tr><td>%1</td><td align=right>%2</td><td align=right>%3</td></tr>")
                  .arg(QString::fromStdString(n.name).toHtmlEscaped())
                  .arg(n.count)
                  .arg(formatDuration(static_cast<double>(n.totalNs)));
    }
    html += QStringLiteral("</table>");
    if (s.byName.size() > 40) html += QStringLiteral("<p>… %1 more names</p>").arg(s.byName.size() - 40);
  }
  m_details->setHtml(html);
}

int TimelinePanel::search(const QString& text) {
  m_matches.clear();
  m_matchCursor = -1;
  m_searchEdit->setProperty("searched", text);
  if (m_searchEdit->text() != text) m_searchEdit->setText(text);
  const std::string needle = text.toStdString();
  const auto& groups = m_view->groups();
  for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
    std::vector<uint32_t> found = groups[g].model->search(needle);
    for (uint32_t e : found) m_matches.emplace_back(g, e);
    m_view->setHighlighted(g, std::move(found));
  }
  if (!m_matches.empty()) {
    m_matchCursor = 0;
    showMatch();
  } else {
    m_searchStatus->setText(text.isEmpty() ? QString() : QStringLiteral("no match"));
  }
  return static_cast<int>(m_matches.size());
}

void TimelinePanel::findNext() {
  if (m_matches.empty()) return;
  m_matchCursor = (m_matchCursor + 1) % static_cast<int>(m_matches.size());
  showMatch();
}

void TimelinePanel::findPrevious() {
  if (m_matches.empty()) return;
  m_matchCursor = (m_matchCursor - 1 + static_cast<int>(m_matches.size())) % static_cast<int>(m_matches.size());
  showMatch();
}

void TimelinePanel::showMatch() {
  const auto [group, event] = m_matches[static_cast<size_t>(m_matchCursor)];
  m_searchStatus->setText(QStringLiteral("%1 / %2").arg(m_matchCursor + 1).arg(m_matches.size()));
  m_view->selectEvent(group, event, true);
}

bool TimelinePanel::alignAtSelection() {
  const TimelineView::Hit hit = m_view->selection();
  const auto& groups = m_view->groups();
  if (hit.group < 0 || hit.event < 0 || groups.size() != 2) return false;
  const profiler::TraceEvent& chosen = groups[hit.group].model->trace().events[static_cast<size_t>(hit.event)];
  std::vector<int64_t> offsets = {groups[0].offsetNs, groups[1].offsetNs};
  offsets[hit.group] = chosen.tsNs;
  const int other = 1 - hit.group;
  for (const profiler::TraceEvent& e : groups[other].model->trace().events) {
    if (e.phase == chosen.phase && e.name == chosen.name) {
      offsets[other] = e.tsNs;
      break;
    }
  }
  m_view->setOffsets(offsets);
  m_title->setText(m_title->text().section(QStringLiteral(" — "), 0, 0) +
                   QStringLiteral(" — aligned at %1").arg(qs(chosen.name).toHtmlEscaped()));
  return true;
}

void TimelinePanel::renameTraces(const QStringList& names) {
  if (names.size() != m_names.size() || names.size() != static_cast<int>(m_view->groups().size())) return;
  m_names = names;
  const QString head = names.size() == 2
                           ? QStringLiteral("<b>before</b> %1 vs <b>after</b> %2")
                                 .arg(names[0].toHtmlEscaped(), names[1].toHtmlEscaped())
                           : QStringLiteral("<b>%1</b>").arg(names[0].toHtmlEscaped());
  m_title->setText(head + QStringLiteral(" — ") + m_title->text().section(QStringLiteral(" — "), 1));
  if (names.size() == 2) {
    m_view->setGroupLabel(0, QStringLiteral("before: ") + names[0]);
    m_view->setGroupLabel(1, QStringLiteral("after: ") + names[1]);
    m_table->setHorizontalHeaderLabels({QStringLiteral("metric"), QStringLiteral("before: %1").arg(names[0]),
                                        QStringLiteral("after: %1").arg(names[1]), QStringLiteral("before / after")});
  }
  emit tracesRenamed(names);
}

void TimelinePanel::alignAtFirstKernel() {
  const auto& groups = m_view->groups();
  std::vector<int64_t> offsets;
  for (const auto& g : groups) offsets.push_back(g.model->firstKernelNs());
  m_view->setOffsets(offsets);
}

int TimelinePanel::highlightKernel(const std::string& instruction) {
  return highlightKernels({instruction});
}

int TimelinePanel::highlightKernels(const std::vector<std::string>& instructions) {
  int total = 0;
  const auto& groups = m_view->groups();
  for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
    std::vector<uint32_t> found;
    for (const std::string& instruction : instructions) {
      std::vector<uint32_t> events = groups[g].model->eventsOfInstruction(instruction);
      found.insert(found.end(), events.begin(), events.end());
    }
    std::sort(found.begin(), found.end());  // setHighlighted takes sorted event indices
    found.erase(std::unique(found.begin(), found.end()), found.end());
    total += static_cast<int>(found.size());
    m_view->setHighlighted(g, std::move(found));
  }
  return total;
}

}  // namespace fusionscope::viewer
