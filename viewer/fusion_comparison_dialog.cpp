#include "viewer/fusion_comparison_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "core/pipeline/stage.h"
#include "viewer/document.h"

namespace fusionscope::viewer {
namespace {

constexpr int kNameRole = Qt::UserRole + 1;

// A group's text broken at spaces into lines of about `width` characters (continuation lines indented), so that a
// long fusion reads whole in its column.
QString wrapped(const std::string& text, int width = 72) {
  QStringList lines;
  QString line;
  for (const QString& word : QString::fromStdString(text).split(' ', Qt::SkipEmptyParts)) {
    if (!line.isEmpty() && line.size() + 1 + word.size() > width) {
      lines << line;
      line = QStringLiteral("  ");
    }
    line += (line.isEmpty() || line == QStringLiteral("  ") ? QString() : QStringLiteral(" ")) + word;
  }
  if (!line.isEmpty()) lines << line;
  return lines.join('\n');
}

QString ratio(const std::optional<double>& value) {
  return value ? QString::number(*value, 'f', 3) : QStringLiteral("–");
}

}  // namespace

core::PipelineRun pipelineRunOf(const std::vector<StageEntry>& stages, int upTo) {
  core::PipelineRun run;
  for (int i = 1; i <= upTo && i < static_cast<int>(stages.size()); ++i) {
    core::PassRun pass;
    pass.pass = stages[static_cast<size_t>(i)].pass;
    pass.changed = true;
    pass.stage = i;
    pass.decisions = stages[static_cast<size_t>(i)].decisions;
    run.passes.push_back(std::move(pass));
  }
  return run;
}

FusionComparisonDialog::FusionComparisonDialog(core::FusionComparison comparison, const QString& aLabel,
                                               const QString& bLabel, QWidget* parent)
    : QDialog(parent), m_comparison(std::move(comparison)) {
  setWindowTitle(QStringLiteral("Compare Fusions"));
  auto* layout = new QVBoxLayout(this);
  m_summary = new QLabel(this);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_summary->setWordWrap(true);
  m_summary->setText(QStringLiteral("<b>A</b> (ours): %1 — %2 ops in %3 groups, %4 matched (%5%)<br/>"
                                    "<b>B</b>: %6 — %7 ops in %8 groups, %9 matched (%10%)<br/>%11")
                         .arg(aLabel.toHtmlEscaped())
                         .arg(m_comparison.a.ops)
                         .arg(m_comparison.a.groups)
                         .arg(m_comparison.a.matched)
                         .arg(100 * m_comparison.a.matchedFraction(), 0, 'f', 1)
                         .arg(bLabel.toHtmlEscaped())
                         .arg(m_comparison.b.ops)
                         .arg(m_comparison.b.groups)
                         .arg(m_comparison.b.matched)
                         .arg(100 * m_comparison.b.matchedFraction(), 0, 'f', 1)
                         .arg(summaryText().toHtmlEscaped()));
  layout->addWidget(m_summary);

  m_tree = new QTreeWidget(this);
  m_tree->setColumnCount(2);
  m_tree->setHeaderLabels({QStringLiteral("A (ours)"), QStringLiteral("B")});
  m_tree->setWordWrap(true);
  m_tree->setTextElideMode(Qt::ElideNone);  // long groups wrap at their spaces instead of losing their end
  m_tree->setUniformRowHeights(false);
  m_tree->header()->setSectionResizeMode(QHeaderView::Stretch);
  int index = 0;
  for (const core::GroupDifference& difference : m_comparison.differences) {
    auto* top = new QTreeWidgetItem(m_tree);
    top->setText(0, QStringLiteral("#%1: %2 pair(s) fused only in A, %3 only in B")
                        .arg(++index)
                        .arg(difference.pairsOnlyA)
                        .arg(difference.pairsOnlyB));
    top->setFirstColumnSpanned(true);
    const size_t rows = std::max(difference.a.size(), difference.b.size());
    for (size_t r = 0; r < rows; ++r) {
      auto* row = new QTreeWidgetItem(top);
      if (r < difference.a.size()) {
        row->setText(0, wrapped(core::comparedGroupText(difference.a[r], false)));
        row->setData(0, kNameRole, QString::fromStdString(difference.a[r].name));
        row->setToolTip(0, QStringLiteral("%1\n\nDouble-click to select %2 in the graph")
                               .arg(row->text(0), QString::fromStdString(difference.a[r].name)));
      }
      if (r < difference.b.size()) {
        row->setText(1, wrapped(core::comparedGroupText(difference.b[r], true)));
        row->setToolTip(1, row->text(1));
      }
    }
    if (!difference.decisions.empty()) {
      auto* decisions = new QTreeWidgetItem(top);
      decisions->setText(0, QStringLiteral("our pipeline's decisions (%1)").arg(difference.decisions.size()));
      decisions->setFirstColumnSpanned(true);
      for (const core::FusionDecision& decision : difference.decisions) {
        auto* item = new QTreeWidgetItem(decisions);
        item->setText(0, QStringLiteral("%1 %2: %3")
                             .arg(decision.fused ? QStringLiteral("+") : QStringLiteral("−"))
                             .arg(QString::fromStdString(decision.pass))
                             .arg(QString::fromStdString(decision.reason)));
        item->setFirstColumnSpanned(true);
        item->setToolTip(0, item->text(0));
        // The fusion a taken decision made, else the instruction that stayed outside.
        item->setData(
            0, kNameRole,
            QString::fromStdString(decision.fused && !decision.fusion.empty() ? decision.fusion : decision.producer));
      }
    }
    top->setExpanded(true);
  }
  if (m_comparison.differences.empty()) {
    auto* none = new QTreeWidgetItem(m_tree);
    none->setText(0, m_comparison.coverageSufficient()
                         ? QStringLiteral("A and B group every matched op alike.")
                         : QStringLiteral("The matched ops are grouped alike; the unmatched are not compared."));
    none->setFirstColumnSpanned(true);
  }
  connect(m_tree, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) { activate(item); });
  layout->addWidget(m_tree, 1);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(1100, 650);
}

QString FusionComparisonDialog::summaryText() const {
  if (!m_comparison.coverageSufficient()) {
    return QStringLiteral("pairs of matched ops fused together: %1 in both, %2 only in A, %3 only in B · %4")
        .arg(m_comparison.pairsBoth)
        .arg(m_comparison.pairsOnlyA)
        .arg(m_comparison.pairsOnlyB)
        .arg(QString::fromStdString(m_comparison.coverageShortfall()));
  }
  return QStringLiteral(
             "pairs of matched ops fused together: %1 in both, %2 only in A, %3 only in B · precision %4 · "
             "recall %5")
      .arg(m_comparison.pairsBoth)
      .arg(m_comparison.pairsOnlyA)
      .arg(m_comparison.pairsOnlyB)
      .arg(ratio(m_comparison.precision()))
      .arg(ratio(m_comparison.recall()));
}

void FusionComparisonDialog::activate(QTreeWidgetItem* item) {
  if (item == nullptr) return;
  const QString name = item->data(0, kNameRole).toString();
  if (!name.isEmpty()) emit instructionActivated(name);
}

}  // namespace fusionscope::viewer
