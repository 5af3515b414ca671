#pragma once

#include <QMainWindow>
#include <QPointF>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/dot/scope_groups.h"
#include "profiler/compare/trace_compare.h"
#include "viewer/document.h"
#include "viewer/graph_model.h"
#include "viewer/selection.h"
#include "viewer/timeline_model.h"

class QAction;
class QActionGroup;
class QCheckBox;
class QDockWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QPushButton;
class QSlider;
class QSplitter;
class QSpinBox;
class QTableView;
class QTimer;
class QToolBar;

namespace fusionscope::viewer {

class DocumentController;
class FusionComparisonDialog;
class GraphScene;
class GraphSearch;
class SidePane;
class GraphView;
class Inspector;
class LayoutController;
class RunController;
class StageFilterModel;
class StageListModel;
class TimelinePanel;
class TimeAttributionPanel;
class TraceController;

// The viewer's main window: stage list (left), graph (centre), inspector (right), timeline (bottom). It builds the
// widgets and wires them to four controllers that own the background work and report by signal: loading
// (DocumentController), layout (LayoutController), traces (TraceController) and fusion off/on runs
// (RunController). The window keeps only what it shows: the current stage, graph options, selection and search.
// On any error it shows the message and keeps what it was showing.
class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opening (asynchronous; documentLoaded or loadFailed follows).
  // `xlaModule` picks the module of an XLA dump directory (name or number); empty: the default pick.
  void openPath(const QString& path, const QString& xlaModule = {});
  // Lists the modules of the open XLA dump directory and reopens it with the one chosen.
  void chooseXlaModule();
  // `remember`: the preset becomes the one the next session starts with (the Pipeline dialog's choice); a
  // command-line `-p` applies to this session only.
  void setPipelineSpec(const core::PipelineSpec& spec, bool remember = true);
  const core::PipelineSpec& pipelineSpec() const;
  void cancelLoad();
  bool isLoading() const;
  bool isLayingOut() const;
  bool isBusy() const { return isLoading() || isLayingOut(); }
  // Errors go to a message box, or only to lastError() when dialogs are off (tests, scripted screenshots).
  void setErrorDialogsEnabled(bool enabled) { m_errorDialogs = enabled; }
  QString lastError() const { return m_lastError; }

  std::shared_ptr<const Document> document() const;
  int stageCount() const;
  int currentStage() const { return m_current; }  // position in document()->stages; -1 when none
  void setCurrentStage(int position);
  void nextStage();
  void previousStage();
  const StageEntry* currentEntry() const;

  // Graph options.
  void setCollapseFusions(bool collapse);
  bool collapseFusions() const { return m_options.collapseFusions; }
  // Expands a collapsed fusion or collapses an expanded one.
  void toggleFusion(const QString& name);
  // Scope groups (GraphOptions::groupScopes): on by default for big modules, opened to a readable depth.
  void setGroupScopes(bool group);
  bool groupScopes() const { return m_options.groupScopes; }
  // Stable layout across stages (View → Stable Layout Across Stages, viewer/stable_layout.h; on by default, kept in
  // QSettings): a stage step keeps the nodes both stages draw where they were.
  void setStableLayout(bool on);
  bool stableLayout() const { return m_options.stableLayout; }
  // The time overlay (View → Colour by Kernel Time): nodes and fusion boxes filled by the kernel time of a linked
  // trace (viewer/time_overlay.h), with a legend; nothing without a trace.
  void setTimeOverlay(bool on);
  bool timeOverlay() const;
  // Side by side (View → Side by Side with Previous Stage; viewer/side_pane.h): the previous stage's graph in a
  // second pane, the selection mirrored by instruction name, the viewports synced.
  void setSideBySide(bool on);
  // Stage → Show XLA Module Side by Side…: the module in `path` (XLA's after_optimizations, typically) in the side
  // pane instead of the previous stage. Returns false, with the error shown, when it does not parse or verify.
  bool showModuleSideBySide(const QString& path);
  SidePane* sidePane() const { return m_side; }
  // Expands a collapsed scope group (by path) or collapses an expanded one.
  void toggleGroup(const QString& path);
  void setNeighbourhood(bool enabled, int hops);
  void setDiffEnabled(bool enabled);
  void setGhosting(bool enabled);
  void setDarkPalette(bool dark);
  GraphOptions currentGraphOptions() const;
  // View → Reset Layout: the docks back in their areas at their first sizes.
  void resetLayout();
  // Help: the About box (version) and the keyboard and mouse help (F1), built from the menus' shortcuts.
  void showAbout();
  void showKeyboardHelp();
  QString keyboardHelpHtml() const;
  // Shrinks and moves the window into its screen's available area (a saved geometry from a bigger screen, a
  // large QT_SCALE_FACTOR).
  void fitToScreen();
  // The stages and inspector docks at their first widths, narrower in a narrow window.
  void sizeSideDocks();
  // Sizes the timeline dock for what the window shows: most of the height without a graph, at most half with one.
  void fitTimelineDock(bool graph);

  // Selection, search, export.
  bool selectInstruction(const QString& computation, const QString& name);
  void selectNode(int node);
  void selectCluster(int cluster);  // a fusion or group box, centred
  // Search (Ctrl+F): the find bar, the results dock and the match outlines (viewer/graph_search.h).
  GraphSearch* graphSearch() const { return m_search; }
  // The whole graph as .png (at `scale` pixels per point, 2 by default) or .svg.
  bool exportView(const QString& path, QString* error = nullptr, double scale = 2.0);
  QString selectedName() const;

  // Traces (asynchronous; traceLoaded or loadFailed follows). A comparison shows `before` above `after`.
  void openTrace(const QString& path);
  void openTraceComparison(const QString& before, const QString& after);
  bool isLoadingTrace() const;
  TimelinePanel* timeline() const { return m_timeline; }
  // Timeline → graph: selects, at the last stage, the instruction or fusion named `kernel` (the instruction a
  // kernel ran, TimelineModel::instructionOf; compared as profiler::normalizeKernelName: "fusion_3" matches
  // "fusion.3"). Returns whether one matched.
  TimeAttributionPanel* timeAttributionPanel() const { return m_timeAttribution; }
  void setSourceLineOverlay(bool on);
  bool selectKernel(const QString& kernel);
  // Runs the open HLO module twice through `fusionscope-cli run --trace` (fusion off, then on; the window's
  // pipeline preset) in the background and opens the two traces as a comparison. The CLI is found in
  // $FUSIONSCOPE_CLI, next to this program (or in ../cli for a build tree), or on PATH. Returns false (with
  // lastError()) when it cannot start.
  bool runFusionComparison();
  // The same on the GPU: `fusionscope-cli compile --target=nvptx` into a temporary bundle for each fusion
  // setting, each bundle run by `fusionscope-gpurun BUNDLE --trace FILE`, the two traces opened as a comparison.
  // A failing step (e.g. the runner's exit 3, "no CUDA driver found") is shown with its output and the window
  // keeps its state. Returns false (with lastError()) when it cannot start.
  bool runGpuFusionComparison();
  bool isRunning() const;
  // Stage → Compare Fusions with a Module…: compares how the current stage's module and the module in `path`
  // (XLA's after_optimizations of the same program, typically) group their ops into fusions and shows the result
  // in a dialog (fusionComparisonDialog()); double-clicking one of our groups there selects it. Returns false,
  // with the error shown, when the stage has no module or the file does not parse or verify.
  bool compareFusionsWith(const QString& path);
  FusionComparisonDialog* fusionComparisonDialog() const { return m_fusionComparison; }
  // fusionscope-cli / fusionscope-gpurun as the Run actions find them ($FUSIONSCOPE_CLI / $FUSIONSCOPE_GPURUN,
  // next to this program or the CLI, the build tree, PATH); empty when not found.
  QString cliPath() const;
  QString gpuRunnerPath() const;
  QAction* runOnGpuAction() const { return m_actRunGpu; }
  // Enables "Run on GPU" when the runner is found, else disables it with a tooltip saying why.
  void updateGpuRunAction();

  GraphScene* graphScene() const { return m_scene; }
  GraphView* graphView() const { return m_view; }
  Inspector* inspector() const { return m_inspector; }
  StageListModel* stageModel() const { return m_stageModel; }
  StageFilterModel* stageFilter() const { return m_stageFilter; }
  // Graphviz layout (worker thread) and scene building (GUI thread) of the last stage shown.
  double lastLayoutMilliseconds() const;
  double lastLayoutCpuMilliseconds() const;
  double lastSceneMilliseconds() const { return m_lastSceneMs; }

  // The controllers behind the window.
  DocumentController* documents() const { return m_documents; }
  LayoutController* layouts() const { return m_layouts; }
  TraceController* traces() const { return m_traces; }
  RunController* runs() const { return m_runs; }

 signals:
  void documentLoaded();
  void loadFailed(const QString& message);
  void stageShown(int position);              // the stage's graph is in the scene
  void layoutFailed(const QString& message);  // the stage could not be laid out (the window says why)
  void traceLoaded();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void createActions();
  void createDocks();
  void createStatusBar();
  void restoreSettings();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void showError(const QString& title, const QString& message);

  void connectLoading();
  void connectLayout();
  void connectTraces();
  void connectRuns();
  void hideProgress();
  void setDocument(std::shared_ptr<const Document> document);
  void requestLayout();
  void applyTimeOverlay();
  // "Where the time goes" follows the trace and the stage shown; a row's operations and kernels are highlighted.
  void updateTimeAttribution();
  void highlightTimeRow(const std::vector<std::string>& operations, const std::vector<std::string>& kernels,
                        const QString& key);
  // After a stage step: keeps the node that was at the view's centre (by name) at its place in the view, then
  // moves to what the stage changed when none of it is in view.
  // A node near the view's centre before a stage step: its name, and where the centre was relative to it.
  struct StageAnchor {
    std::string name;
    std::string computation;
    QPointF offset;
    double distance = 0;
  };
  void followStageChange(const std::vector<StageAnchor>& anchors);
  // Sets the grouping options for a new document (on: the first module's scope tree, opened to a readable depth).
  void setGroupScopesOption(bool group, const Document* document);
  void showGraph(std::shared_ptr<const GraphModel> graph, const std::string& key);
  GraphOptions optionsFor(int position) const;
  void applyDiff();
  void syncStageControls();
  int visibleRowOf(int position) const;
  void stepVisible(int delta);
  // Centres the graph on the selected node or fusion box, zoomed in until its label reads.
  void revealSelection();
  void onNodeClicked(int node);
  void onClusterClicked(int cluster);
  void openDialog(bool directory);
  // Where file dialogs start: the folder of the last one (kept in QSettings), else the open document's, else the
  // working directory.
  QString dialogDirectory() const;
  void rememberDialogDirectory(const QString& chosen);
  void showPipelineDialog();
  void exportDialog(const QString& format);
  void copyNodeName();
  // What the open module's fusions replaced, for the trace comparison (`compare --stages`).
  profiler::FusionMembership fusionMembership() const;
  void linkToTimeline(const std::string& name, const core::HloInstruction* instruction);
  void showKernelTiming(const std::string& name, const core::HloInstruction& instruction);
  void startTraceLoad(const QString& first, const QString& second);
  void openTraceDialog(bool comparison);

  // The controllers (children of the window).
  DocumentController* m_documents;
  LayoutController* m_layouts;
  TraceController* m_traces;
  RunController* m_runs;
  bool m_errorDialogs = true;
  QString m_lastError;
  std::string m_rememberedPreset = "gpu";  // saved on close: the dialog's choice, never a command-line -p
  FusionComparisonDialog* m_fusionComparison = nullptr;  // the last comparison shown (a child of the window)

  // Stages and graph.
  int m_current = -1;
  bool m_syncingStage = false;  // syncStageControls is moving the stage table's selection
  GraphOptions m_options;       // collapse/expand state shared by all stages; focus set per selection
  bool m_neighbourhood = false;
  bool m_diff = true;
  bool m_ghost = false;
  std::string m_shownKey;
  int m_shownStage = -1;  // the stage of the graph in the scene  // LayoutController::key of the graph in the scene
  double m_lastSceneMs = 0;
  Selection m_selection;

  // Traces.
  TimelinePanel* m_timeline;
  QDockWidget* m_timelineDock = nullptr;
  TimeAttributionPanel* m_timeAttribution = nullptr;  // "Where the time goes"
  QDockWidget* m_timeAttributionDock = nullptr;
  QDockWidget* m_stagesDock = nullptr;
  QDockWidget* m_inspectorDock = nullptr;
  std::string m_linkedFromTimeline;  // the instruction a timeline selection asked for, until it is selected
  bool m_revealSelection = false;    // the next graph shown centres on the selection (a kernel picked elsewhere)

  // Widgets.
  GraphScene* m_scene;
  GraphView* m_view;
  Inspector* m_inspector;
  StageListModel* m_stageModel;
  StageFilterModel* m_stageFilter;
  QTableView* m_stageTable = nullptr;
  QLineEdit* m_stageFilterEdit = nullptr;
  QSlider* m_slider = nullptr;
  QLabel* m_stageLabel = nullptr;
  GraphSearch* m_search = nullptr;
  QSpinBox* m_hopsSpin = nullptr;
  QProgressBar* m_progressBar = nullptr;
  QPushButton* m_cancelButton = nullptr;
  QLabel* m_statusLabel = nullptr;
  QTimer* m_playTimer = nullptr;
  QMenu* m_recentMenu = nullptr;
  QMenu* m_viewMenu = nullptr;

  QAction* m_actCollapse = nullptr;
  QAction* m_actGroups = nullptr;
  QAction* m_actStableLayout = nullptr;
  QAction* m_actTimeOverlay = nullptr;
  QAction* m_actSourceLineOverlay = nullptr;
  QAction* m_actSideBySide = nullptr;
  SidePane* m_side = nullptr;
  // The scope tree the groups' first depth was chosen from (the document's first module).
  std::shared_ptr<const core::ScopeTree> m_scopeTree;
  QAction* m_actNeighbourhood = nullptr;
  QAction* m_actDiff = nullptr;
  QAction* m_actGhost = nullptr;
  QAction* m_actPlay = nullptr;
  QAction* m_actHideUnchanged = nullptr;
  QAction* m_actChooseModule = nullptr;
  QAction* m_actDark = nullptr;
  QAction* m_actMinimap = nullptr;
  QAction* m_actRunGpu = nullptr;
};

// Above the same size the graph opens grouped by scope, with groups open down to the deepest level at which at most
// core::kFirstViewNodes nodes are drawn (as `fusionscope-cli dump --group-scopes` writes them).
using core::kFirstViewNodes;
// The smallest zoom the first view of a grouped graph is shown at: 7 px text.
inline constexpr double kReadableZoom = 0.7;

}  // namespace fusionscope::viewer
