#include "viewer/time_attribution_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "profiler/hlo_link/op_attribution.h"
#include "viewer/timeline_model.h"

namespace fusionscope::viewer {
namespace {

constexpr int kRowRole = Qt::UserRole + 1;   // index into TimeAttribution::rows
constexpr int kSortRole = Qt::UserRole + 2;  // numbers sort as numbers

QStandardItem* numberItem(const QString& text, double value) {
  auto* item = new QStandardItem(text);
  item->setData(value, kSortRole);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

}  // namespace

TimeAttributionPanel::TimeAttributionPanel(QWidget* parent) : QWidget(parent) {
  m_by = new QComboBox(this);
  m_by->addItem(QStringLiteral("Source line"), static_cast<int>(profiler::AttributionKey::kSource));
  m_by->addItem(QStringLiteral("Scope"), static_cast<int>(profiler::AttributionKey::kScope));
  m_by->addItem(QStringLiteral("Op"), static_cast<int>(profiler::AttributionKey::kOp));
  m_by->addItem(QStringLiteral("Fusion"), static_cast<int>(profiler::AttributionKey::kFusion));
  m_by->setToolTip(
      QStringLiteral("Group the kernel time by the program's source lines, op_name scopes, framework "
                     "ops or fusions (as fusionscope-cli stats --by)"));
  m_summary = new QLabel(QStringLiteral("Open a trace of this module to see where its time goes."), this);
  m_summary->setWordWrap(true);
  m_model = new QStandardItemModel(0, 5, this);
  m_model->setHorizontalHeaderLabels({QStringLiteral("Source line"), QStringLiteral("ms"), QStringLiteral("Share"),
                                      QStringLiteral("Launches"), QStringLiteral("How")});
  m_model->horizontalHeaderItem(4)->setToolTip(
      QStringLiteral("exact: the row's kernels ran only its operations; ≈: a fused kernel's time shared among its "
                     "operations by estimated cost"));
  m_sorted = new QSortFilterProxyModel(this);
  m_sorted->setSourceModel(m_model);
  m_sorted->setSortRole(kSortRole);
  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("timeAttributionTable"));
  m_table->setModel(m_sorted);
  m_table->setSortingEnabled(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->verticalHeader()->hide();
  m_table->setWordWrap(false);
  m_table->setTextElideMode(Qt::ElideLeft);  // a source line's file:line is at its end
  m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  for (int c = 1; c < 5; ++c) m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  m_table->sortByColumn(1, Qt::DescendingOrder);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(QStringLiteral("By:"), this));
  top->addWidget(m_by);
  top->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(m_summary);
  layout->addWidget(m_table, 1);

  connect(m_by, &QComboBox::currentIndexChanged, this, [this] { recompute(); });
  connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] { onCurrentRowChanged(); });
}

void TimeAttributionPanel::setData(std::shared_ptr<const TimelineModel> trace,
                                   std::shared_ptr<const core::HloModule> module) {
  if (trace == m_trace && module == m_module) return;
  m_trace = std::move(trace);
  m_module = std::move(module);
  // Only a trace needs the module's operations: stepping through stages without one costs nothing here.
  m_ops = m_module && m_trace ? profiler::opAttribution(*m_module) : profiler::OpAttribution{};
  recompute();
}

void TimeAttributionPanel::setKey(profiler::AttributionKey key) {
  const int index = m_by->findData(static_cast<int>(key));
  if (index >= 0) m_by->setCurrentIndex(index);
}

void TimeAttributionPanel::recompute() {
  const auto key = static_cast<profiler::AttributionKey>(m_by->currentData().toInt());
  m_attribution = m_trace && m_module
                      ? profiler::attributeTime(m_trace->trace(), m_ops, key, profiler::kOpAttributionModel)
                      : profiler::TimeAttribution{};
  m_attribution.key = key;
  fill();
}

void TimeAttributionPanel::fill() {
  m_filling = true;
  m_model->removeRows(0, m_model->rowCount());
  static const QStringList kKeyTitles = {QStringLiteral("Source line"), QStringLiteral("Scope"), QStringLiteral("Op"),
                                         QStringLiteral("Fusion")};
  m_model->setHeaderData(0, Qt::Horizontal, kKeyTitles.value(static_cast<int>(m_attribution.key)));
  const profiler::TimeAttribution& a = m_attribution;
  if (!m_trace || !m_module) {
    m_summary->setText(QStringLiteral("Open a trace of this module to see where its time goes."));
  } else if (a.matchedKernels == 0) {
    m_summary->setText(QStringLiteral("None of the trace's %1 kernel launches ran an instruction of this stage's "
                                      "module (e.g. %2): is it the module the trace ran?")
                           .arg(a.kernelCount)
                           .arg(a.unmatchedNames.empty() ? QStringLiteral("no kernels at all")
                                                         : QString::fromStdString(a.unmatchedNames.front())));
  } else {
    m_summary->setText(
        QStringLiteral("%1 of %2 kernel launches matched (%3 of %4 ms); ≈ rows share a fused kernel's time by "
                       "estimated cost")
            .arg(a.matchedKernels)
            .arg(a.kernelCount)
            .arg(static_cast<double>(a.matchedNs) / 1e6, 0, 'f', 3)
            .arg(static_cast<double>(a.kernelTotalNs) / 1e6, 0, 'f', 3));
    m_summary->setToolTip(QString::fromStdString(a.model));
  }
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const profiler::AttributionRow& row = a.rows[i];
    // Source lines read as file:line (the full path in the tooltip).
    QString shown = QString::fromStdString(row.key);
    if (a.key == profiler::AttributionKey::kSource) shown = shown.mid(shown.lastIndexOf(QLatin1Char('/')) + 1);
    auto* key = new QStandardItem(shown);
    key->setData(static_cast<int>(i), kRowRole);
    key->setData(QString::fromStdString(row.key), kSortRole);
    key->setToolTip(QString::fromStdString(row.key));
    m_model->appendRow({key, numberItem(QString::number(row.ns / 1e6, 'f', 3), row.ns),
                        numberItem(QString::number(100.0 * row.share, 'f', 1) + QStringLiteral(" %"), row.share),
                        numberItem(QString::number(row.kernels), static_cast<double>(row.kernels)),
                        new QStandardItem(row.estimated ? QStringLiteral("≈") : QStringLiteral("exact"))});
  }
  m_filling = false;
}

int TimeAttributionPanel::attributionRow(int viewRow) const {
  const QModelIndex index = m_sorted->index(viewRow, 0);
  return index.isValid() ? index.data(kRowRole).toInt() : -1;
}

void TimeAttributionPanel::onCurrentRowChanged() {
  if (m_filling) return;
  const int row = attributionRow(m_table->currentIndex().row());
  if (row < 0 || row >= static_cast<int>(m_attribution.rows.size())) return;
  const profiler::AttributionRow& r = m_attribution.rows[static_cast<size_t>(row)];
  emit rowSelected(r.operations, r.kernelsRun, QString::fromStdString(r.key));
}

bool TimeAttributionPanel::selectOperation(const std::string& instruction) {
  for (int viewRow = 0; viewRow < m_sorted->rowCount(); ++viewRow) {
    const int row = attributionRow(viewRow);
    if (row < 0) continue;
    const profiler::AttributionRow& r = m_attribution.rows[static_cast<size_t>(row)];
    if (std::binary_search(r.operations.begin(), r.operations.end(), instruction) ||
        std::binary_search(r.kernelsRun.begin(), r.kernelsRun.end(), instruction)) {
      // Graph → table only: no rowSelected back to the graph, whose selection the user just made.
      const bool blocked = m_table->selectionModel()->blockSignals(true);
      m_table->selectRow(viewRow);
      m_table->selectionModel()->blockSignals(blocked);
      m_table->scrollTo(m_sorted->index(viewRow, 0));
      return true;
    }
  }
  return false;
}

std::unordered_map<std::string, double> TimeAttributionPanel::sourceLineTimes() const {
  std::unordered_map<std::string, double> times;
  if (!m_trace || !m_module) return times;
  const profiler::TimeAttribution bySource =
      m_attribution.key == profiler::AttributionKey::kSource
          ? m_attribution
          : profiler::attributeTime(m_trace->trace(), m_ops, profiler::AttributionKey::kSource,
                                    profiler::kOpAttributionModel);
  for (const profiler::AttributionRow& row : bySource.rows) {
    for (const std::string& op : row.operations) times[op] = std::max(times[op], row.ns);
  }
  return times;
}

}  // namespace fusionscope::viewer
