#pragma once

#include <QObject>
#include <QString>
#include <functional>
#include <string>
#include <vector>

class QCheckBox;
class QDockWidget;
class QLabel;
class QLineEdit;
class QListWidget;
class QMainWindow;
class QToolBar;

namespace fusionscope::core {
struct ScopeTree;
}

namespace fusionscope::viewer {

class GraphScene;
class GraphView;
struct GraphOptions;
struct StageEntry;

// One row of the search results: an instruction (or a fusion or group box) that matched, where it is, and what the
// graph draws for it (a node, else a box).
struct SearchResult {
  std::string name;
  std::string opcode;  // empty for a box
  std::string where;   // "" (drawn), "in collapsed fusion F", "in collapsed group G", "expanded fusion box"
  int node = -1;       // the node that shows it (itself, its fusion's or its group's node)
  int cluster = -1;    // or the box
};

// Graph search (Edit → Find, Ctrl+F): the find bar, the "Search Results" dock listing every matching instruction
// (inside collapsed fusions and collapsed scope groups too) with where it is, the match outlines in the scene, and
// the cursor Next/Previous move. Choosing a match (Next, a results row) asks the window to select it by signal; the
// window tells it what the stage and graph options are through the context function.
class GraphSearch : public QObject {
  Q_OBJECT

 public:
  struct Context {
    const StageEntry* stage = nullptr;
    const GraphOptions* options = nullptr;
    const core::ScopeTree* reference = nullptr;  // the scope tree groups are cut by (the document's first module)
  };

  // Builds the bar (a top toolbar) and the results dock (left area, below `below`) in `window`.
  GraphSearch(QMainWindow* window, GraphScene* scene, GraphView* view, QDockWidget* below,
              std::function<Context()> context);

  // Ctrl+F: shows the bar with its text selected (and the outlines of the text kept from the last search).
  void open();
  // Esc or ✕: hides the bar, the results and the outlines; the selection stays.
  void close();
  bool isOpen() const;
  // Finds `pattern` (name or opcode, case-insensitive; a regular expression when `regex`) in the graph shown and
  // selects the first match; returns the number of matches (nodes and boxes).
  int search(const QString& pattern, bool regex);
  void next();
  void previous();
  // After a relayout: the new graph's matches outlined, nothing selected anew; the cursor at `selectedNode`.
  void refresh(int selectedNode);
  // Outlines `nodes` as matches (a "Where the time goes" row's operations), as a search would.
  void highlight(std::vector<int> nodes);
  // A new document: nothing matched.
  void reset();

  const std::vector<int>& matches() const { return m_matches; }
  // Expanded fusions and groups whose name matched (their boxes, by cluster index); Next visits them after the nodes.
  const std::vector<int>& clusterMatches() const { return m_clusterMatches; }
  const std::vector<SearchResult>& results() const { return m_results; }
  QListWidget* resultsList() const { return m_list; }
  QToolBar* bar() const { return m_bar; }
  // Chooses results row `row` (as a click on it does).
  void chooseResult(int row);

 signals:
  void nodeChosen(int node);        // select and centre on this node
  void clusterChosen(int cluster);  // select and centre on this box

 private:
  int findMatches(const QString& pattern, bool regex);
  void showMatch();
  void fillResults();
  void markCurrentResult();

  GraphScene* m_scene;
  GraphView* m_view;
  std::function<Context()> m_context;
  QToolBar* m_bar;
  QLineEdit* m_edit;
  QCheckBox* m_regex;
  QLabel* m_status;
  QDockWidget* m_dock;
  QListWidget* m_list;
  std::vector<int> m_matches;
  std::vector<int> m_clusterMatches;
  std::vector<SearchResult> m_results;
  int m_cursor = -1;
  bool m_filling = false;
};

// At most this many rows in the results list (the count says how many matched).
inline constexpr size_t kMaxSearchResults = 5000;

}  // namespace fusionscope::viewer
