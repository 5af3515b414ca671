// MainWindow, part 3: building the widgets — menus and their shortcuts, the search and graph toolbars, the docks,
// the status bar, the help — and the settings they keep between sessions (layout, palette, recent files, the
// dialogs' folder). Part 1 (main_window.cpp) wires them to the
// controllers and the graph.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QShortcut>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyleFactory>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <array>
#include <utility>

#include "viewer/document_controller.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_search.h"
#include "viewer/side_pane.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/main_window.h"
#include "viewer/stage_list_model.h"
#include "viewer/time_attribution_panel.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"

namespace fusionscope::viewer {
namespace {

constexpr int kMaxRecent = 10;
// The docks' first sizes, and what View → Reset Layout returns them to.
constexpr int kStagesDockWidth = 330;
constexpr int kInspectorDockWidth = 420;
constexpr int kTimelineDockHeight = 300;
constexpr int kTimeAttributionDockWidth = 520;

QPalette darkPalette() {
  QPalette palette;
  QColor window(0x2b2f33);
  QColor base(0x1e2124);
  QColor text(0xe0e0e0);
  palette.setColor(QPalette::Window, window);
  palette.setColor(QPalette::WindowText, text);
  palette.setColor(QPalette::Base, base);
  palette.setColor(QPalette::AlternateBase, window);
  palette.setColor(QPalette::ToolTipBase, base);
  palette.setColor(QPalette::ToolTipText, text);
  palette.setColor(QPalette::Text, text);
  palette.setColor(QPalette::Button, window);
  palette.setColor(QPalette::ButtonText, text);
  palette.setColor(QPalette::Highlight, QColor(QRgb(0x2962ff)));
  palette.setColor(QPalette::HighlightedText, Qt::white);
  palette.setColor(QPalette::Link, QColor(QRgb(0x82b1ff)));
  palette.setColor(QPalette::Disabled, QPalette::Text, QColor(QRgb(0x808080)));
  palette.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(QRgb(0x808080)));
  return palette;
}

}  // namespace

void MainWindow::createActions() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  QAction* open = file->addAction(QStringLiteral("&Open…"), this, [this] { openDialog(false); });
  open->setShortcut(QKeySequence::Open);
  QAction* openDir = file->addAction(QStringLiteral("Open &Directory…"), this, [this] { openDialog(true); });
  openDir->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+O")));
  m_recentMenu = file->addMenu(QStringLiteral("Open &Recent"));
  QAction* openTraceAction = file->addAction(QStringLiteral("Open &Trace…"), this, [this] { openTraceDialog(false); });
  openTraceAction->setShortcut(QKeySequence(QStringLiteral("Ctrl+T")));
  QAction* compareTraces =
      file->addAction(QStringLiteral("&Compare Two Traces…"), this, [this] { openTraceDialog(true); });
  compareTraces->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+T")));
  QAction* runBoth =
      file->addAction(QStringLiteral("Run Module, Fusion Off &and On"), this, [this] { runFusionComparison(); });
  runBoth->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
  m_actRunGpu =
      file->addAction(QStringLiteral("Run on &GPU (Fusion Off and On)"), this, [this] { runGpuFusionComparison(); });
  m_actRunGpu->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+R")));
  file->setToolTipsVisible(true);
  // The runner may appear (or go) while the window is open: look again whenever the menu opens.
  connect(file, &QMenu::aboutToShow, this, &MainWindow::updateGpuRunAction);
  updateGpuRunAction();
  file->addSeparator();
  QAction* pipeline = file->addAction(QStringLiteral("&Pipeline…"), this, &MainWindow::showPipelineDialog);
  pipeline->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+P")));
  QAction* reload = file->addAction(QStringLiteral("Re-run / &Reload"), m_documents, &DocumentController::reload);
  m_actChooseModule = file->addAction(QStringLiteral("Choose XLA &Module…"), this, &MainWindow::chooseXlaModule);
  m_actChooseModule->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+M")));
  m_actChooseModule->setEnabled(false);
  reload->setShortcut(QKeySequence(QStringLiteral("F5")));
  file->addSeparator();
  QAction* png = file->addAction(QStringLiteral("Export Graph as &PNG…"), this, [this] { exportDialog("png"); });
  png->setShortcut(QKeySequence(QStringLiteral("Ctrl+E")));
  QAction* svg = file->addAction(QStringLiteral("Export Graph as &SVG…"), this, [this] { exportDialog("svg"); });
  svg->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+E")));
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* edit = menuBar()->addMenu(QStringLiteral("&Edit"));
  QAction* find = edit->addAction(QStringLiteral("&Find…"), this, [this] { m_search->open(); });
  find->setShortcut(QKeySequence::Find);
  QAction* next = edit->addAction(QStringLiteral("Find &Next"), this, [this] { m_search->next(); });
  next->setShortcut(QKeySequence(QStringLiteral("F3")));
  QAction* previous = edit->addAction(QStringLiteral("Find &Previous"), this, [this] { m_search->previous(); });
  previous->setShortcut(QKeySequence(QStringLiteral("Shift+F3")));
  edit->addSeparator();
  QAction* copy = edit->addAction(QStringLiteral("&Copy Node Name"), this, &MainWindow::copyNodeName);
  copy->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+C")));

  m_viewMenu = menuBar()->addMenu(QStringLiteral("&View"));
  QMenu* view = m_viewMenu;
  QAction* zoomIn = view->addAction(QStringLiteral("Zoom &In"), this, [this] { m_view->zoomBy(1.25); });
  zoomIn->setShortcuts({QKeySequence(QStringLiteral("Ctrl+=")), QKeySequence::ZoomIn});
  QAction* zoomOut = view->addAction(QStringLiteral("Zoom &Out"), this, [this] { m_view->zoomBy(0.8); });
  zoomOut->setShortcuts({QKeySequence(QStringLiteral("Ctrl+-")), QKeySequence::ZoomOut});
  QAction* fit = view->addAction(QStringLiteral("&Fit"), this, [this] { m_view->fitAll(); });
  fit->setShortcuts({QKeySequence(QStringLiteral("Ctrl+0")), QKeySequence(QStringLiteral("F"))});
  QAction* actual = view->addAction(QStringLiteral("&1:1"), this, [this] { m_view->actualSize(); });
  actual->setShortcut(QKeySequence(QStringLiteral("Ctrl+1")));
  m_actMinimap = view->addAction(QStringLiteral("&Minimap"));
  m_actMinimap->setCheckable(true);
  m_actMinimap->setChecked(true);
  m_actMinimap->setShortcut(QKeySequence(QStringLiteral("Ctrl+M")));
  connect(m_actMinimap, &QAction::toggled, this, [this](bool on) { m_view->setMinimapVisible(on); });
  view->addSeparator();
  m_actCollapse = view->addAction(QStringLiteral("&Collapse Fusions"));
  m_actCollapse->setCheckable(true);
  m_actCollapse->setShortcut(QKeySequence(QStringLiteral("Ctrl+G")));
  connect(m_actCollapse, &QAction::triggered, this, [this](bool on) { setCollapseFusions(on); });
  m_actGroups = view->addAction(QStringLiteral("&Group by Scope"));
  m_actGroups->setCheckable(true);
  m_actGroups->setShortcut(QKeySequence(QStringLiteral("G")));
  connect(m_actGroups, &QAction::triggered, this, [this](bool on) { setGroupScopes(on); });
  m_actStableLayout = view->addAction(QStringLiteral("Stable &Layout Across Stages"));
  m_actStableLayout->setCheckable(true);
  m_actStableLayout->setChecked(true);
  m_actStableLayout->setShortcut(QKeySequence(QStringLiteral("L")));
  m_actStableLayout->setToolTip(
      QStringLiteral("Stepping stages keeps the nodes two stages share where they were (off: each stage laid out "
                     "afresh by Graphviz dot)"));
  connect(m_actStableLayout, &QAction::triggered, this, [this](bool on) { setStableLayout(on); });
  m_actSideBySide = view->addAction(QStringLiteral("&Side by Side with Previous Stage"));
  m_actSideBySide->setCheckable(true);
  m_actSideBySide->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+S")));
  connect(m_actSideBySide, &QAction::triggered, this, [this](bool on) { setSideBySide(on); });
  m_actTimeOverlay = view->addAction(QStringLiteral("Colour by &Kernel Time"));
  m_actTimeOverlay->setCheckable(true);
  m_actTimeOverlay->setShortcut(QKeySequence(QStringLiteral("T")));
  connect(m_actTimeOverlay, &QAction::triggered, this, [this](bool on) { setTimeOverlay(on); });
  m_actSourceLineOverlay = view->addAction(QStringLiteral("Colour by &Source-Line Time"));
  m_actSourceLineOverlay->setCheckable(true);
  m_actSourceLineOverlay->setShortcut(QKeySequence(QStringLiteral("Shift+T")));
  m_actSourceLineOverlay->setToolTip(
      QStringLiteral("Each node coloured by the kernel time of the source line it came from (Where the time goes, by "
                     "source line): the nodes of a hot line glow alike"));
  connect(m_actSourceLineOverlay, &QAction::triggered, this, [this](bool on) { setSourceLineOverlay(on); });
  QAction* toggle = view->addAction(QStringLiteral("&Expand/Collapse Selected Fusion or Group"), this, [this] {
    if (m_selection.name.empty()) return;
    const GraphModel* graph = m_scene->graph();
    bool group =
        graph != nullptr && (graph->findGroup(m_selection.name) >= 0 || graph->findGroupCluster(m_selection.name) >= 0);
    if (group) {
      toggleGroup(QString::fromStdString(m_selection.name));
    } else {
      toggleFusion(QString::fromStdString(m_selection.name));
    }
  });
  toggle->setShortcut(QKeySequence(QStringLiteral("E")));
  m_actNeighbourhood = view->addAction(QStringLiteral("&Neighbourhood of Selection"));
  m_actNeighbourhood->setCheckable(true);
  m_actNeighbourhood->setShortcut(QKeySequence(QStringLiteral("N")));
  connect(m_actNeighbourhood, &QAction::triggered, this,
          [this](bool on) { setNeighbourhood(on, m_hopsSpin != nullptr ? m_hopsSpin->value() : m_options.hops); });
  QAction* moreHops = view->addAction(QStringLiteral("More Hops"), this, [this] { m_hopsSpin->stepUp(); });
  moreHops->setShortcut(QKeySequence(QStringLiteral("]")));
  QAction* fewerHops = view->addAction(QStringLiteral("Fewer Hops"), this, [this] { m_hopsSpin->stepDown(); });
  fewerHops->setShortcut(QKeySequence(QStringLiteral("[")));
  view->addSeparator();
  m_actDiff = view->addAction(QStringLiteral("Highlight &Diff with Previous Stage"));
  m_actDiff->setCheckable(true);
  m_actDiff->setChecked(true);
  m_actDiff->setShortcut(QKeySequence(QStringLiteral("D")));
  connect(m_actDiff, &QAction::triggered, this, [this](bool on) { setDiffEnabled(on); });
  m_actGhost = view->addAction(QStringLiteral("Show Removed Nodes &Ghosted"));
  m_actGhost->setCheckable(true);
  m_actGhost->setShortcut(QKeySequence(QStringLiteral("Shift+G")));
  connect(m_actGhost, &QAction::triggered, this, [this](bool on) { setGhosting(on); });
  view->addSeparator();
  m_actDark = view->addAction(QStringLiteral("Dar&k Palette"));
  m_actDark->setCheckable(true);
  m_actDark->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+D")));
  connect(m_actDark, &QAction::triggered, this, [this](bool on) { setDarkPalette(on); });
  view->addSeparator();

  QMenu* stage = menuBar()->addMenu(QStringLiteral("&Stage"));
  QAction* nextStage = stage->addAction(QStringLiteral("&Next Stage"), this, &MainWindow::nextStage);
  nextStage->setShortcuts({QKeySequence(QStringLiteral("J")), QKeySequence(Qt::Key_Right)});
  QAction* previousStage = stage->addAction(QStringLiteral("&Previous Stage"), this, &MainWindow::previousStage);
  previousStage->setShortcuts({QKeySequence(QStringLiteral("K")), QKeySequence(Qt::Key_Left)});
  QAction* first = stage->addAction(QStringLiteral("&First Stage"), this, [this] { setCurrentStage(0); });
  first->setShortcut(QKeySequence(Qt::Key_Home));
  QAction* last = stage->addAction(QStringLiteral("&Last Stage"), this, [this] { setCurrentStage(stageCount() - 1); });
  last->setShortcut(QKeySequence(Qt::Key_End));
  m_actPlay = stage->addAction(QStringLiteral("&Play"));
  m_actPlay->setCheckable(true);
  m_actPlay->setShortcut(QKeySequence(Qt::Key_Space));
  connect(m_actPlay, &QAction::toggled, this, [this](bool on) {
    if (on && m_current >= stageCount() - 1) setCurrentStage(0);
    on ? m_playTimer->start() : m_playTimer->stop();
  });
  QAction* compareFusions = stage->addAction(QStringLiteral("&Compare Fusions with a Module…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, QStringLiteral("Module to Compare With (e.g. XLA's *after_optimizations.txt)"), dialogDirectory(),
        QStringLiteral("HLO modules (*.hlo *.txt);;All files (*)"));
    if (path.isEmpty()) return;
    rememberDialogDirectory(path);
    compareFusionsWith(path);
  });
  compareFusions->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+X")));
  stage->addAction(QStringLiteral("Show XLA &Module Side by Side…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, QStringLiteral("Module to Show Beside the Stages (e.g. XLA's *after_optimizations.txt)"),
        dialogDirectory(), QStringLiteral("HLO modules (*.hlo *.txt);;All files (*)"));
    if (path.isEmpty()) return;
    rememberDialogDirectory(path);
    showModuleSideBySide(path);
  });
  stage->addAction(QStringLiteral("Show &Previous Stage Side by Side"), this, [this] {
    m_side->setOn(true);
    m_side->showPreviousStage();
  });
  m_actHideUnchanged = stage->addAction(QStringLiteral("&Hide Unchanged Stages"));
  m_actHideUnchanged->setCheckable(true);
  m_actHideUnchanged->setShortcut(QKeySequence(QStringLiteral("H")));
  connect(m_actHideUnchanged, &QAction::toggled, this, [this](bool on) {
    m_stageFilter->setHideUnchanged(on);
    syncStageControls();
  });

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  QAction* keys = help->addAction(QStringLiteral("&Keyboard and Mouse…"), this, &MainWindow::showKeyboardHelp);
  keys->setShortcut(QKeySequence::HelpContents);
  help->addAction(QStringLiteral("&About FusionScope…"), this, &MainWindow::showAbout);

  // Graph options toolbar: hops for neighbourhood mode.
  auto* graphBar = new QToolBar(QStringLiteral("Graph"), this);
  graphBar->setObjectName(QStringLiteral("graphBar"));
  graphBar->addAction(fit);
  graphBar->addAction(actual);
  graphBar->addSeparator();
  graphBar->addAction(m_actCollapse);
  graphBar->addAction(m_actGroups);
  graphBar->addAction(m_actNeighbourhood);
  m_hopsSpin = new QSpinBox(graphBar);
  m_hopsSpin->setRange(1, 20);
  m_hopsSpin->setValue(m_options.hops);
  m_hopsSpin->setPrefix(QStringLiteral("hops: "));
  graphBar->addWidget(m_hopsSpin);
  connect(m_hopsSpin, qOverload<int>(&QSpinBox::valueChanged), this,
          [this](int hops) { setNeighbourhood(m_neighbourhood, hops); });
  graphBar->addSeparator();
  graphBar->addAction(m_actDiff);
  graphBar->addAction(m_actGhost);
  addToolBar(Qt::TopToolBarArea, graphBar);
}

void MainWindow::createDocks() {
  auto* stagesDock = new QDockWidget(QStringLiteral("Stages"), this);
  stagesDock->setObjectName(QStringLiteral("stagesDock"));
  auto* stagesWidget = new QWidget(stagesDock);
  auto* layout = new QVBoxLayout(stagesWidget);
  layout->setContentsMargins(2, 2, 2, 2);
  m_stageFilterEdit = new QLineEdit(stagesWidget);
  m_stageFilterEdit->setPlaceholderText(QStringLiteral("filter by pass"));
  m_stageFilterEdit->setClearButtonEnabled(true);
  auto* hide = new QCheckBox(QStringLiteral("hide unchanged"), stagesWidget);
  connect(hide, &QCheckBox::toggled, m_actHideUnchanged, &QAction::setChecked);
  connect(m_actHideUnchanged, &QAction::toggled, hide, &QCheckBox::setChecked);
  auto* filterRow = new QHBoxLayout();
  filterRow->addWidget(m_stageFilterEdit, 1);
  filterRow->addWidget(hide);
  layout->addLayout(filterRow);
  m_stageTable = new QTableView(stagesWidget);
  m_stageTable->setObjectName(QStringLiteral("stageTable"));
  m_stageTable->setModel(m_stageFilter);
  m_stageTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_stageTable->setSelectionMode(QAbstractItemView::SingleSelection);
  m_stageTable->verticalHeader()->hide();
  m_stageTable->verticalHeader()->setDefaultSectionSize(22);
  m_stageTable->horizontalHeader()->setSectionResizeMode(StageListModel::kPass, QHeaderView::Stretch);
  m_stageTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_stageTable->setAlternatingRowColors(true);
  layout->addWidget(m_stageTable);
  stagesDock->setWidget(stagesWidget);
  addDockWidget(Qt::LeftDockWidgetArea, stagesDock);
  connect(m_stageFilterEdit, &QLineEdit::textChanged, this, [this](const QString& text) {
    m_stageFilter->setFilterText(text);
    syncStageControls();
  });
  connect(m_stageTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid() && !m_syncingStage) setCurrentStage(current.data(StageListModel::kStageRole).toInt());
          });

  auto* inspectorDock = new QDockWidget(QStringLiteral("Inspector"), this);
  inspectorDock->setObjectName(QStringLiteral("inspectorDock"));
  inspectorDock->setWidget(m_inspector);
  addDockWidget(Qt::RightDockWidgetArea, inspectorDock);
  m_stagesDock = stagesDock;
  m_inspectorDock = inspectorDock;
  sizeSideDocks();

  m_viewMenu->addAction(stagesDock->toggleViewAction());
  stagesDock->toggleViewAction()->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+1")));
  m_viewMenu->addAction(inspectorDock->toggleViewAction());
  inspectorDock->toggleViewAction()->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+2")));

  m_timelineDock = new QDockWidget(QStringLiteral("Timeline"), this);
  m_timelineDock->setObjectName(QStringLiteral("timelineDock"));
  m_timelineDock->setWidget(m_timeline);
  addDockWidget(Qt::BottomDockWidgetArea, m_timelineDock);
  resizeDocks({m_timelineDock}, {kTimelineDockHeight}, Qt::Vertical);
  m_timelineDock->hide();  // shown when a trace is opened
  m_viewMenu->addAction(m_timelineDock->toggleViewAction());
  m_timelineDock->toggleViewAction()->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+3")));
  m_timeAttribution = new TimeAttributionPanel(this);
  m_timeAttributionDock = new QDockWidget(QStringLiteral("Where the Time Goes"), this);
  m_timeAttributionDock->setObjectName(QStringLiteral("timeAttributionDock"));
  m_timeAttributionDock->setWidget(m_timeAttribution);
  // Beside the timeline: the rows link to its kernels, and a source line needs the width.
  addDockWidget(Qt::BottomDockWidgetArea, m_timeAttributionDock);
  splitDockWidget(m_timelineDock, m_timeAttributionDock, Qt::Horizontal);
  resizeDocks({m_timeAttributionDock}, {kTimeAttributionDockWidth}, Qt::Horizontal);
  m_timeAttributionDock->hide();  // shown when a trace is opened
  m_viewMenu->addAction(m_timeAttributionDock->toggleViewAction());
  m_timeAttributionDock->toggleViewAction()->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+4")));
  connect(m_timeAttribution, &TimeAttributionPanel::rowSelected, this, &MainWindow::highlightTimeRow);
  auto* findEvent = new QAction(QStringLiteral("Find in Timeline"), this);
  findEvent->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+F")));
  connect(findEvent, &QAction::triggered, this, [this] {
    m_timelineDock->show();
    if (auto* edit = m_timeline->findChild<QLineEdit*>()) {
      edit->setFocus();
      edit->selectAll();
    }
  });
  m_viewMenu->addAction(findEvent);
  m_viewMenu->addSeparator();
  m_viewMenu->addAction(QStringLiteral("&Reset Layout"), this, &MainWindow::resetLayout);
}

void MainWindow::resetLayout() {
  // Docks back in their areas at their first sizes (a window shrunk and enlarged again keeps tiny docks, and the
  // state is saved with them); the timeline stays as shown or hidden, the window keeps its size.
  const std::array<std::pair<QDockWidget*, Qt::DockWidgetArea>, 3> homes = {
      {{m_stagesDock, Qt::LeftDockWidgetArea},
       {m_inspectorDock, Qt::RightDockWidgetArea},
       {m_timelineDock, Qt::BottomDockWidgetArea}}};
  const bool timelineShown = !m_timelineDock->isHidden();
  for (const auto& [dock, area] : homes) {
    if (dock->isFloating()) dock->setFloating(false);
    if (dockWidgetArea(dock) != area) addDockWidget(area, dock);
  }
  m_stagesDock->show();
  m_inspectorDock->show();
  m_timelineDock->setVisible(timelineShown);
  // A dock just put back is placed by the next layout pass: size the docks after it.
  QTimer::singleShot(0, this, [this] {
    sizeSideDocks();
    resizeDocks({m_timelineDock}, {document() ? std::min(kTimelineDockHeight, height() / 3) : height() * 3 / 4},
                Qt::Vertical);
  });
}

void MainWindow::fitTimelineDock(bool graph) {
  if (m_timelineDock->isHidden()) return;
  // Without a graph the timeline takes most of the window, not a third of it under an empty pane; with one, a
  // timeline grown that way (and saved so) gives the graph its room back.
  auto apply = [this](bool withGraph) {
    if (!withGraph) {
      resizeDocks({m_timelineDock}, {height() * 3 / 4}, Qt::Vertical);
    } else if (m_timelineDock->height() > height() / 2) {
      resizeDocks({m_timelineDock}, {kTimelineDockHeight}, Qt::Vertical);
    }
  };
  apply(graph);
  // A dock just shown is placed by the next layout pass: size it again after that.
  QTimer::singleShot(0, this, [this, apply] { apply(document() != nullptr); });
}

void MainWindow::sizeSideDocks() {
  // Their first widths, but in a narrow window no more than a fifth (stages) and a quarter (inspector) of it.
  resizeDocks({m_stagesDock, m_inspectorDock},
              {std::min(kStagesDockWidth, width() / 5), std::min(kInspectorDockWidth, width() / 4)}, Qt::Horizontal);
}

void MainWindow::fitToScreen() {
  // With a saved geometry from a bigger screen, or a large scale factor (QT_SCALE_FACTOR=2 halves the screen in
  // logical pixels), the window must not open larger than the screen's available area.
  QScreen* shown = screen() != nullptr ? screen() : QGuiApplication::primaryScreen();
  if (shown == nullptr || isMaximized() || isFullScreen()) return;
  const QRect available = shown->availableGeometry();
  // Before the window is first shown its frame is unknown: leave room for a title bar.
  const QSize frame = isVisible() ? frameGeometry().size() - geometry().size() : QSize(8, 40);
  const QSize fits = size().boundedTo(available.size() - frame);
  if (fits != size()) {
    resize(fits);
    // A window shrunk to a small screen (1280×720, or a scale factor of 2) keeps the graph most of its width.
    QTimer::singleShot(0, this, [this] { sizeSideDocks(); });
  }
  QRect outer = frameGeometry();
  if (!available.contains(outer)) {
    outer.moveLeft(
        std::clamp(outer.left(), available.left(), std::max(available.left(), available.right() - outer.width() + 1)));
    outer.moveTop(
        std::clamp(outer.top(), available.top(), std::max(available.top(), available.bottom() - outer.height() + 1)));
    move(outer.topLeft());
  }
}

void MainWindow::showAbout() {
  const QString version = QCoreApplication::applicationVersion();
  QMessageBox::about(
      this, QStringLiteral("About FusionScope"),
      QStringLiteral("<h3>FusionScope %1</h3><p>Watch a tensor compiler fuse an HLO graph, stage by stage, and see "
                     "what the fusion did to the kernels in a trace.</p><p>Built with Qt %2 (running on Qt %3).</p>"
                     "<p>Keyboard and mouse: Help → Keyboard and Mouse (F1).</p>")
          .arg(version.isEmpty() ? QStringLiteral("(development build)") : version.toHtmlEscaped(),
               QStringLiteral(QT_VERSION_STR), QString::fromLatin1(qVersion())));
}

QString MainWindow::keyboardHelpHtml() const {
  // Built from the menus, so it lists exactly the shortcuts this window has; the timeline's own keys and the
  // mouse are not menu actions and are listed after them.
  QString html = QStringLiteral("<h3>Keyboard</h3><table cellspacing=4>");
  for (QAction* menuAction : menuBar()->actions()) {
    QMenu* menu = menuAction->menu();
    if (menu == nullptr) continue;
    QString rows;
    for (QAction* action : menu->actions()) {
      if (action->isSeparator() || action->menu() != nullptr || action->shortcuts().isEmpty()) continue;
      QStringList keys;
      for (const QKeySequence& key : action->shortcuts()) keys << key.toString(QKeySequence::NativeText);
      rows += QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>")
                  .arg(action->text().remove(QLatin1Char('&')).remove(QStringLiteral("…")).toHtmlEscaped(),
                       keys.join(QStringLiteral(", ")).toHtmlEscaped());
    }
    if (!rows.isEmpty())
      html +=
          QStringLiteral("<tr><td colspan=2><i>%1</i></td></tr>").arg(menu->title().remove(QLatin1Char('&'))) + rows;
  }
  html += QStringLiteral(
      "<tr><td>Find bar: next / previous match / close</td><td><b>Enter / Shift+Enter / Esc</b></td></tr>"
      "<tr><td>Recent file 1–9</td><td><b>Alt+1…9</b></td></tr></table>"
      "<h3>Graph</h3><p>Wheel zooms around the cursor, drag pans, click selects (the inspector shows it), "
      "double-click a fusion expands or collapses it, click or drag in the minimap moves the view.</p>"
      "<h3>Timeline (when it has the focus)</h3><table cellspacing=4>"
      "<tr><td>Zoom in / out</td><td><b>W / S</b>, wheel</td></tr>"
      "<tr><td>Pan</td><td><b>A / D</b>, drag</td></tr>"
      "<tr><td>Select a time range</td><td><b>Shift+drag</b>, or drag in the ruler</td></tr>"
      "<tr><td>Fit the range, else the selection, else everything</td><td><b>F</b></td></tr>"
      "<tr><td>Clear the selection</td><td><b>Esc</b></td></tr>"
      "<tr><td>Scroll lanes</td><td><b>Shift+wheel</b></td></tr>"
      "<tr><td>Lane names' width</td><td>drag the headers' edge; double-click it to fit</td></tr></table>"
      "<p>More in docs/VIEWER.md.</p>");
  return html;
}

void MainWindow::showKeyboardHelp() {
  auto* dialog = new QDialog(this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(QStringLiteral("FusionScope — Keyboard and Mouse"));
  auto* layout = new QVBoxLayout(dialog);
  auto* text = new QTextBrowser(dialog);
  text->setHtml(keyboardHelpHtml());
  layout->addWidget(text);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  layout->addWidget(buttons);
  dialog->resize(560, 640);
  dialog->show();
}

void MainWindow::createStatusBar() {
  m_statusLabel = new QLabel(this);
  statusBar()->addWidget(m_statusLabel, 1);
  m_progressBar = new QProgressBar(this);
  m_progressBar->setMaximumWidth(260);
  m_progressBar->hide();
  m_cancelButton = new QPushButton(QStringLiteral("Cancel"), this);
  m_cancelButton->hide();
  connect(m_cancelButton, &QPushButton::clicked, this, &MainWindow::cancelLoad);
  statusBar()->addPermanentWidget(m_progressBar);
  statusBar()->addPermanentWidget(m_cancelButton);
}

void MainWindow::restoreSettings() {
  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  fitToScreen();
  m_search->close();
  setDarkPalette(settings.value(QStringLiteral("view/dark"), false).toBool());
  m_actMinimap->setChecked(settings.value(QStringLiteral("view/minimap"), true).toBool());
  setStableLayout(settings.value(QStringLiteral("view/stableLayout"), true).toBool());
  QString preset = settings.value(QStringLiteral("pipeline/preset"), QStringLiteral("gpu")).toString();
  core::PipelineSpec spec = m_documents->pipelineSpec();
  spec.preset = preset.toStdString();
  setPipelineSpec(spec);
  rebuildRecentMenu();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("view/dark"), m_actDark->isChecked());
  settings.setValue(QStringLiteral("view/minimap"), m_actMinimap->isChecked());
  settings.setValue(QStringLiteral("view/stableLayout"), m_actStableLayout->isChecked());
  settings.setValue(QStringLiteral("pipeline/preset"), QString::fromStdString(m_rememberedPreset));
  m_documents->cancel();
  QMainWindow::closeEvent(event);
}

QString MainWindow::dialogDirectory() const {
  const QString remembered = QSettings().value(QStringLiteral("dialogs/directory")).toString();
  if (!remembered.isEmpty() && QFileInfo(remembered).isDir()) return remembered;
  const QString last = m_documents->lastPath();
  return last.isEmpty() ? QDir::currentPath() : QFileInfo(last).absolutePath();
}

void MainWindow::rememberDialogDirectory(const QString& chosen) {
  const QFileInfo info(chosen);
  QSettings().setValue(QStringLiteral("dialogs/directory"),
                       info.isDir() ? info.absoluteFilePath() : info.absolutePath());
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value(QStringLiteral("recentFiles")).toStringList();
  QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(QStringLiteral("recentFiles"), recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  m_recentMenu->clear();
  QStringList recent = QSettings().value(QStringLiteral("recentFiles")).toStringList();
  for (int i = 0; i < recent.size(); ++i) {
    const QString path = recent[i];
    QAction* action = m_recentMenu->addAction(QStringLiteral("&%1 %2").arg((i + 1) % 10).arg(path));
    connect(action, &QAction::triggered, this, [this, path] { openPath(path); });
    if (i < 9) action->setShortcut(QKeySequence(QStringLiteral("Alt+%1").arg(i + 1)));
  }
  m_recentMenu->setEnabled(!recent.isEmpty());
}

void MainWindow::setDarkPalette(bool dark) {
  m_actDark->setChecked(dark);
  if (dark) {
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(darkPalette());
  } else {
    QApplication::setPalette(QApplication::style()->standardPalette());
  }
  m_scene->setTheme(dark ? SceneTheme::dark() : SceneTheme::light());
  m_side->setTheme(*m_scene);
  m_timeline->view()->setDark(dark);
}

}  // namespace fusionscope::viewer
