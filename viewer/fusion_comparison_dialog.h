#pragma once

#include <QDialog>
#include <QString>
#include <vector>

#include "core/pipeline/fusion_comparison.h"
#include "core/pipeline/stage.h"

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace fusionscope::viewer {

struct StageEntry;

// Stage → Compare Fusions with a Module…: how the stage shown (A, ours) and another module (B, typically XLA's
// `*after_optimizations.txt` of the same program) group the same ops into fusions, as `fusionscope-cli
// compare-fusions` prints it: pair figures, precision and recall, then each difference with A's groups, B's
// groups and our decisions about them. Double-clicking a row of one of A's groups (or a decision) asks the
// window to select that fusion or instruction. Holds only the comparison it shows (plain data from core).
class FusionComparisonDialog : public QDialog {
  Q_OBJECT

 public:
  FusionComparisonDialog(core::FusionComparison comparison, const QString& aLabel, const QString& bLabel,
                         QWidget* parent = nullptr);

  const core::FusionComparison& comparison() const { return m_comparison; }
  QString summaryText() const;
  QTreeWidget* tree() const { return m_tree; }

 signals:
  // A's group (a fusion or an unfused instruction of the stage's entry computation) to select in the graph.
  void instructionActivated(const QString& name);

 private:
  void activate(QTreeWidgetItem* item);

  core::FusionComparison m_comparison;
  QLabel* m_summary = nullptr;
  QTreeWidget* m_tree = nullptr;
};

// The decisions of stages 1..upTo of a viewer document as the pipeline run compareFusions reads them from (each
// stage's pass and the decisions it recorded).
core::PipelineRun pipelineRunOf(const std::vector<StageEntry>& stages, int upTo);

}  // namespace fusionscope::viewer
