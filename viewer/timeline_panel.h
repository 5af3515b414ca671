#pragma once

#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profiler/compare/trace_compare.h"
#include "viewer/timeline_model.h"

class QLabel;
class QLineEdit;
class QTableWidget;
class QTextBrowser;
class QToolButton;

namespace fusionscope::viewer {

class TimelineView;

// The timeline dock's content: a search bar, the TimelineView, and beside it the details of the selected event
// (every arg), the summary of a selected range, and for two traces the comparison table built by
// profiler::compareTraces (the numbers `fusionscope-cli compare --json` prints). In a comparison the "before"
// trace is group 0 and "after" group 1, both aligned at their first kernel.
class TimelinePanel : public QWidget {
  Q_OBJECT

 public:
  explicit TimelinePanel(QWidget* parent = nullptr);

  // Setting a trace or a comparison clears the search, the details and the range summary of the previous one.
  void setTrace(std::shared_ptr<const TimelineModel> model, const QString& name);
  // `membership` (optional: the open module's fusions and their members) tells which "before" kernels each
  // fused "after" kernel replaced, as `fusionscope-cli compare --stages` does; without it, kernel args and
  // unchanged names are used, as `compare` without --stages.
  void setComparison(std::shared_ptr<const TimelineModel> before, const QString& beforeName,
                     std::shared_ptr<const TimelineModel> after, const QString& afterName,
                     const profiler::FusionMembership* membership = nullptr);
  // A comparison shown again with other fusion members (a new module opened): same traces, names and view.
  void setFusionMembership(const profiler::FusionMembership* membership);
  void clear();
  bool isComparison() const { return m_comparison.has_value(); }
  const profiler::TraceComparison* comparison() const { return m_comparison ? &*m_comparison : nullptr; }

  TimelineView* view() const { return m_view; }
  QTextBrowser* details() const { return m_details; }
  QTableWidget* comparisonTable() const { return m_table; }

  // Search over all events of every shown trace; selects (and reveals) the first match. Returns the match count.
  int search(const QString& text);
  void findNext();
  void findPrevious();
  int matchCount() const { return static_cast<int>(m_matches.size()); }

  // Graph → timeline: highlights the kernel launches of `instruction` (TimelineModel::eventsOfInstruction: by the
  // "hlo_op" arg, else by name) in every trace; returns how many there are.
  int highlightKernel(const std::string& instruction);
  // The launches of every instruction in `instructions` (a "Where the time goes" row's kernels).
  int highlightKernels(const std::vector<std::string>& instructions);

  // Comparison alignment: the selected event becomes time 0 of its trace, and the other trace is aligned at its
  // first event of the same name (or stays where it is when it has none). Returns false without a selection.
  bool alignAtSelection();
  // A comparison table row of a fused kernel: selects its first launch in the "after" trace (and so its fusion in
  // the graph). Returns false for the metric rows.
  bool selectComparisonRow(int row);
  void alignAtFirstKernel();
  // Names the shown trace (one name) or the two traces of a comparison (before, after) wherever they are shown: the
  // title, the timeline's group labels and the comparison table's columns (the Rename… button asks for them).
  void renameTraces(const QStringList& names);
  const QStringList& traceNames() const { return m_names; }

 signals:
  void tracesRenamed(const QStringList& names);
  // A kernel (complete event of a kernel category, or any complete event) was selected by the user; `name` is
  // the instruction it ran (TimelineModel::instructionOf: its "hlo_op" arg, else its name).
  void kernelSelected(const QString& name);

 private:
  void onEventSelected(int group, qint64 event);
  void onRangeSelected(double from, double to);
  void fillComparisonTable();
  void showMatch();
  // A new trace (or pair) starts clean: no search text or matches, no details or range summary of the old one.
  void resetForNewTrace();

  TimelineView* m_view;
  QLineEdit* m_searchEdit;
  QLabel* m_searchStatus;
  QLabel* m_title;
  QToolButton* m_alignButton = nullptr;
  QToolButton* m_alignKernelButton = nullptr;
  QToolButton* m_renameButton = nullptr;
  QStringList m_names;  // the trace's name, or before and after
  QTextBrowser* m_details;
  QTableWidget* m_table;
  std::optional<profiler::TraceComparison> m_comparison;
  std::vector<std::pair<int, uint32_t>> m_matches;  // (group, event)
  int m_matchCursor = -1;
};

}  // namespace fusionscope::viewer
