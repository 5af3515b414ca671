#pragma once

#include <QWidget>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/compare/time_attribution.h"

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;

namespace fusionscope::core {
class HloModule;
}  // namespace fusionscope::core

namespace fusionscope::viewer {

class TimelineModel;

// "Where the time goes": a trace's kernel time by the program's own source lines, scopes (op_name paths), framework
// ops or fusions, as `fusionscope-cli stats --by` prints it (profiler::attributeTime over profiler::opAttribution of
// the module shown: each kernel's time shared among its fusion's members by estimated cost). A sortable table; the
// summary line says how many kernel launches matched the module and what was estimated. Selecting a row emits its
// operations and kernels (the window highlights them in the graph and the timeline); selectOperation() goes back.
class TimeAttributionPanel : public QWidget {
  Q_OBJECT

 public:
  explicit TimeAttributionPanel(QWidget* parent = nullptr);

  // Attributes `trace` with `module` (the stage the trace ran); null clears the table.
  void setData(std::shared_ptr<const TimelineModel> trace, std::shared_ptr<const core::HloModule> module);
  void setKey(profiler::AttributionKey key);
  profiler::AttributionKey key() const { return m_attribution.key; }
  const profiler::TimeAttribution& attribution() const { return m_attribution; }
  QTableView* table() const { return m_table; }
  // Graph → table: selects the row holding `instruction` (an operation, or a kernel's instruction); false if none.
  bool selectOperation(const std::string& instruction);
  // Source-line time of each operation: the summed time of its row when grouped by source line (the graph's
  // "colour by source line"); empty without data.
  std::unordered_map<std::string, double> sourceLineTimes() const;
  // The row at `row` of the view (as sorted) in the attribution; -1 when none.
  int attributionRow(int viewRow) const;

 signals:
  void rowSelected(const std::vector<std::string>& operations, const std::vector<std::string>& kernels,
                   const QString& key);

 private:
  void recompute();
  void fill();
  void onCurrentRowChanged();

  QComboBox* m_by;
  QLabel* m_summary;
  QTableView* m_table;
  QStandardItemModel* m_model;
  QSortFilterProxyModel* m_sorted;
  std::shared_ptr<const TimelineModel> m_trace;
  std::shared_ptr<const core::HloModule> m_module;
  profiler::OpAttribution m_ops;
  profiler::TimeAttribution m_attribution;
  bool m_filling = false;
};

}  // namespace fusionscope::viewer
