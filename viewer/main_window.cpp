#include "viewer/main_window.h"

#include <QInputDialog>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyleFactory>
#include <QSvgGenerator>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>
#include <ctime>

#include <QtConcurrent/QtConcurrentRun>

#include "core/ir/hlo_computation.h"
#include "profiler/compare/trace_compare.h"
#include "profiler/compare/trace_stats.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/stage_list_model.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"

namespace fusionscope::viewer {
namespace {

constexpr int kMaxRecent = 10;
constexpr size_t kMaxCachedLayouts = 48;
constexpr int kPlayIntervalMs = 1200;

QString joinNames(const std::vector<std::string>& names) {
  QStringList list;
  for (const std::string& name : names) list << QString::fromStdString(name);
  return list.join(QStringLiteral(", "));
}

std::vector<std::string> splitNames(const QString& text) {
  std::vector<std::string> names;
  for (const QString& part : text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
    names.push_back(part.toStdString());
  }
  return names;
}

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

// An instruction name from stages.json's change lists: `name` in the entry, `computation/name` elsewhere.
std::pair<std::string, std::string> splitQualified(const std::string& qualified) {
  size_t slash = qualified.find('/');
  if (slash == std::string::npos) return {std::string(), qualified};
  return {qualified.substr(0, slash), qualified.substr(slash + 1)};
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      m_loadWatcher(new QFutureWatcher<LoadOutcome>(this)),
      m_progressTimer(new QTimer(this)),
      m_layoutWatcher(new QFutureWatcher<LayoutOutcome>(this)),
      m_traceWatcher(new QFutureWatcher<TraceOutcome>(this)),
      m_timeline(new TimelinePanel(this)),
      m_scene(new GraphScene(this)),
      m_view(new GraphView(m_scene, this)),
      m_inspector(new Inspector(this)),
      m_stageModel(new StageListModel(this)),
      m_stageFilter(new StageFilterModel(this)) {
  setObjectName(QStringLiteral("FusionScopeMainWindow"));
  setWindowTitle(QStringLiteral("FusionScope"));
  setAcceptDrops(true);
  m_stageFilter->setSourceModel(m_stageModel);
  m_view->setObjectName(QStringLiteral("graphView"));

  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* stageRow = new QHBoxLayout();
  stageRow->setContentsMargins(6, 4, 6, 0);
  m_slider = new QSlider(Qt::Horizontal, central);
  m_slider->setObjectName(QStringLiteral("stageSlider"));
  m_slider->setEnabled(false);
  m_stageLabel = new QLabel(QStringLiteral("Open an HLO module, a dump directory or a .dot file (Ctrl+O)"), central);
  m_stageLabel->setMinimumWidth(260);
  m_stageLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  createActions();
  auto* playButton = new QPushButton(central);
  playButton->setFlat(true);
  connect(playButton, &QPushButton::clicked, m_actPlay, &QAction::trigger);
  connect(m_actPlay, &QAction::toggled, playButton,
          [playButton](bool on) { playButton->setText(on ? QStringLiteral("⏸ Pause") : QStringLiteral("▶ Play")); });
  playButton->setText(QStringLiteral("▶ Play"));
  stageRow->addWidget(playButton);
  stageRow->addWidget(m_slider, 1);
  stageRow->addWidget(m_stageLabel, 2);
  layout->addLayout(stageRow);
  layout->addWidget(m_view, 1);
  setCentralWidget(central);
  connect(m_slider, &QSlider::valueChanged, this, [this](int row) {
    QModelIndex index = m_stageFilter->index(row, 0);
    if (index.isValid()) setCurrentStage(index.data(StageListModel::kStageRole).toInt());
  });

  createDocks();
  createStatusBar();

  m_playTimer = new QTimer(this);
  m_playTimer->setInterval(kPlayIntervalMs);
  connect(m_playTimer, &QTimer::timeout, this, [this] {
    int before = m_current;
    stepVisible(1);
    if (m_current == before) m_actPlay->setChecked(false);
  });

  connect(m_loadWatcher, &QFutureWatcher<LoadOutcome>::finished, this, &MainWindow::onLoadFinished);
  connect(m_layoutWatcher, &QFutureWatcher<LayoutOutcome>::finished, this, &MainWindow::onLayoutFinished);
  connect(m_traceWatcher, &QFutureWatcher<TraceOutcome>::finished, this, &MainWindow::onTraceFinished);
  connect(m_timeline, &TimelinePanel::kernelSelected, this, [this](const QString& name) { selectKernel(name); });
  connect(m_progressTimer, &QTimer::timeout, this, &MainWindow::pollProgress);
  m_progressTimer->setInterval(100);

  connect(m_scene, &GraphScene::nodeClicked, this, &MainWindow::onNodeClicked);
  connect(m_scene, &GraphScene::clusterClicked, this, &MainWindow::onClusterClicked);
  connect(m_scene, &GraphScene::nodeDoubleClicked, this, [this](int node) {
    const GraphModel* graph = m_scene->graph();
    if (graph == nullptr) return;
    const GraphNode& n = graph->nodes[static_cast<size_t>(node)];
    if (n.kind == GraphNode::Kind::kCollapsedFusion) toggleFusion(QString::fromStdString(n.name));
  });
  connect(m_scene, &GraphScene::clusterDoubleClicked, this, [this](int cluster) {
    const GraphModel* graph = m_scene->graph();
    if (graph != nullptr)
      toggleFusion(QString::fromStdString(graph->clusters[static_cast<size_t>(cluster)].fusionName));
  });
  connect(m_inspector, &Inspector::instructionActivated, this,
          [this](const QString& computation, const QString& name) { selectInstruction(computation, name); });

  resize(1500, 950);
  restoreSettings();
}

MainWindow::~MainWindow() {
  if (m_progress) m_progress->cancel = true;
}

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
  QAction* reload = file->addAction(QStringLiteral("Re-run / &Reload"), this, [this] {
    if (!m_lastPath.isEmpty()) openPath(m_lastPath, m_document ? QString::fromStdString(m_document->xlaModule) : QString());
  });
  m_actChooseModule = file->addAction(QStringLiteral("Choose XLA &Module…"), this, &MainWindow::chooseXlaModule);
  m_actChooseModule->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+M")));
  m_actChooseModule->setEnabled(false);
  reload->setShortcut(QKeySequence(QStringLiteral("F5")));
  file->addSeparator();
  QAction* png = file->addAction(QStringLiteral("Export View as &PNG…"), this, [this] { exportDialog("png"); });
  png->setShortcut(QKeySequence(QStringLiteral("Ctrl+E")));
  QAction* svg = file->addAction(QStringLiteral("Export View as &SVG…"), this, [this] { exportDialog("svg"); });
  svg->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+E")));
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* edit = menuBar()->addMenu(QStringLiteral("&Edit"));
  QAction* find = edit->addAction(QStringLiteral("&Find…"), this, [this] {
    m_searchBar->show();
    m_searchEdit->setFocus();
    m_searchEdit->selectAll();
  });
  find->setShortcut(QKeySequence::Find);
  QAction* next = edit->addAction(QStringLiteral("Find &Next"), this, &MainWindow::findNext);
  next->setShortcut(QKeySequence(QStringLiteral("F3")));
  QAction* previous = edit->addAction(QStringLiteral("Find &Previous"), this, &MainWindow::findPrevious);
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
  QAction* toggle = view->addAction(QStringLiteral("&Expand/Collapse Selected Fusion"), this, [this] {
    if (!m_selectedName.empty()) toggleFusion(QString::fromStdString(m_selectedName));
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
  m_actHideUnchanged = stage->addAction(QStringLiteral("&Hide Unchanged Stages"));
  m_actHideUnchanged->setCheckable(true);
  m_actHideUnchanged->setShortcut(QKeySequence(QStringLiteral("H")));
  connect(m_actHideUnchanged, &QAction::toggled, this, [this](bool on) {
    m_stageFilter->setHideUnchanged(on);
    syncStageControls();
  });

  // Search bar (Ctrl+F), hidden until asked for.
  m_searchBar = new QToolBar(QStringLiteral("Search"), this);
  m_searchBar->setObjectName(QStringLiteral("searchBar"));
  m_searchEdit = new QLineEdit(m_searchBar);
  m_searchEdit->setPlaceholderText(QStringLiteral("name or opcode (Enter: next, Shift+Enter: previous)"));
  m_searchEdit->setClearButtonEnabled(true);
  m_searchEdit->setMinimumWidth(320);
  m_searchRegex = new QCheckBox(QStringLiteral("Regex"), m_searchBar);
  m_searchStatus = new QLabel(m_searchBar);
  m_searchBar->addWidget(new QLabel(QStringLiteral(" Find: "), m_searchBar));
  m_searchBar->addWidget(m_searchEdit);
  m_searchBar->addWidget(m_searchRegex);
  m_searchBar->addAction(QStringLiteral("▲"), this, &MainWindow::findPrevious)->setToolTip("Previous (Shift+F3)");
  m_searchBar->addAction(QStringLiteral("▼"), this, &MainWindow::findNext)->setToolTip("Next (F3)");
  m_searchBar->addWidget(m_searchStatus);
  m_searchBar->addAction(QStringLiteral("✕"), m_searchBar, &QWidget::hide)->setToolTip("Close search");
  addToolBar(Qt::TopToolBarArea, m_searchBar);
  m_searchBar->hide();
  connect(m_searchEdit, &QLineEdit::textChanged, this,
          [this](const QString& text) { search(text, m_searchRegex->isChecked()); });
  connect(m_searchRegex, &QCheckBox::toggled, this, [this](bool regex) { search(m_searchEdit->text(), regex); });
  connect(m_searchEdit, &QLineEdit::returnPressed, this,
          [this] { QApplication::keyboardModifiers() & Qt::ShiftModifier ? findPrevious() : findNext(); });

  // Graph options toolbar: hops for neighbourhood mode.
  auto* graphBar = new QToolBar(QStringLiteral("Graph"), this);
  graphBar->setObjectName(QStringLiteral("graphBar"));
  graphBar->addAction(fit);
  graphBar->addAction(actual);
  graphBar->addSeparator();
  graphBar->addAction(m_actCollapse);
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
  insertToolBarBreak(m_searchBar);
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
            if (current.isValid()) setCurrentStage(current.data(StageListModel::kStageRole).toInt());
          });

  auto* inspectorDock = new QDockWidget(QStringLiteral("Inspector"), this);
  inspectorDock->setObjectName(QStringLiteral("inspectorDock"));
  inspectorDock->setWidget(m_inspector);
  addDockWidget(Qt::RightDockWidgetArea, inspectorDock);
  resizeDocks({stagesDock, inspectorDock}, {330, 420}, Qt::Horizontal);

  m_viewMenu->addAction(stagesDock->toggleViewAction());
  stagesDock->toggleViewAction()->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+1")));
  m_viewMenu->addAction(inspectorDock->toggleViewAction());
  inspectorDock->toggleViewAction()->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+2")));

  m_timelineDock = new QDockWidget(QStringLiteral("Timeline"), this);
  m_timelineDock->setObjectName(QStringLiteral("timelineDock"));
  m_timelineDock->setWidget(m_timeline);
  addDockWidget(Qt::BottomDockWidgetArea, m_timelineDock);
  resizeDocks({m_timelineDock}, {300}, Qt::Vertical);
  m_timelineDock->hide();  // shown when a trace is opened
  m_viewMenu->addAction(m_timelineDock->toggleViewAction());
  m_timelineDock->toggleViewAction()->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+3")));
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
  m_searchBar->hide();
  setDarkPalette(settings.value(QStringLiteral("view/dark"), false).toBool());
  m_actMinimap->setChecked(settings.value(QStringLiteral("view/minimap"), true).toBool());
  QString preset = settings.value(QStringLiteral("pipeline/preset"), QStringLiteral("gpu")).toString();
  m_spec.preset = preset.toStdString();
  rebuildRecentMenu();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("view/dark"), m_actDark->isChecked());
  settings.setValue(QStringLiteral("view/minimap"), m_actMinimap->isChecked());
  settings.setValue(QStringLiteral("pipeline/preset"), QString::fromStdString(m_spec.preset));
  if (m_progress) m_progress->cancel = true;
  QMainWindow::closeEvent(event);
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

void MainWindow::showError(const QString& title, const QString& message) {
  m_lastError = message;
  statusBar()->showMessage(title + QStringLiteral(": ") + message.section(QLatin1Char('\n'), 0, 0), 10000);
  if (m_errorDialogs) {
    QMessageBox box(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    // The core's messages quote the offending line with a caret under the column: keep it aligned.
    box.setTextFormat(Qt::PlainText);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    box.setFont(mono);
    box.exec();
  }
}

// ---- Loading ----

void MainWindow::openPath(const QString& path, const QString& xlaModule) {
  if (isLoading()) cancelLoad();
  m_loadingPath = path;
  auto progress = std::make_shared<LoadProgress>();
  m_progress = progress;
  core::PipelineSpec spec = m_spec;
  std::string file = path.toStdString();
  std::string module = xlaModule.toStdString();
  m_progressBar->setRange(0, 0);
  m_progressBar->show();
  m_cancelButton->show();
  m_statusLabel->setText(QStringLiteral("Loading %1…").arg(path));
  m_progressTimer->start();
  m_loadWatcher->setFuture(QtConcurrent::run([progress, spec, file, module]() {
    LoadCallbacks callbacks;
    callbacks.xlaModule = module;
    callbacks.progress = [progress](const std::string& what, int done, int total) {
      std::lock_guard<std::mutex> lock(progress->mutex);
      progress->what = what;
      progress->done = done;
      progress->total = total;
    };
    callbacks.cancelled = [progress] { return progress->cancel.load(); };
    StatusOr<std::shared_ptr<const Document>> loaded = loadPath(file, spec, callbacks);
    LoadOutcome outcome;
    if (loaded.ok()) {
      outcome.document = std::move(*loaded);
    } else {
      outcome.error = QString::fromStdString(loaded.message());
    }
    return outcome;
  }));
}

void MainWindow::chooseXlaModule() {
  if (!m_document || m_document->xlaModules.size() < 2) return;
  QStringList items;
  int current = 0;
  for (const std::string& module : m_document->xlaModules) {
    QString item = QString::fromStdString(module);
    if (item.section(QLatin1Char(' '), 1) == QString::fromStdString(m_document->xlaModule)) current = items.size();
    items << item;
  }
  bool ok = false;
  QString chosen = QInputDialog::getItem(this, QStringLiteral("XLA module"),
                                         QStringLiteral("Modules in %1:").arg(QString::fromStdString(m_document->path)),
                                         items, current, false, &ok);
  if (ok && !chosen.isEmpty()) openPath(QString::fromStdString(m_document->path), chosen.section(QLatin1Char(' '), 0, 0));
}

bool MainWindow::isLoading() const {
  return m_loadWatcher->isRunning() && m_progress && !m_progress->cancel;
}

bool MainWindow::isLayingOut() const {
  return m_layoutWatcher->isRunning() || m_pendingPosition >= 0 || m_backgroundLayouts > 0;
}

void MainWindow::cancelLoad() {
  if (m_runProcess != nullptr) {
    // Cancel a fusion off/on run: stop the CLI; nothing is opened.
    m_runProcess->disconnect(this);
    m_runProcess->kill();
    m_runProcess->waitForFinished(3000);
    m_runProcess->deleteLater();
    m_runProcess = nullptr;
    m_progressBar->hide();
    m_cancelButton->hide();
    m_statusLabel->setText(QStringLiteral("Run cancelled"));
    return;
  }
  if (!m_progress) return;
  // The worker stops at its next check; its result is dropped either way, and the window goes back to what it
  // showed right away.
  m_progress->cancel = true;
  m_progressTimer->stop();
  m_progressBar->hide();
  m_cancelButton->hide();
  m_statusLabel->setText(QStringLiteral("Cancelled loading %1").arg(m_loadingPath));
}

void MainWindow::pollProgress() {
  if (!m_progress) return;
  std::lock_guard<std::mutex> lock(m_progress->mutex);
  if (m_progress->total > 0) {
    m_progressBar->setRange(0, m_progress->total);
    m_progressBar->setValue(m_progress->done);
  } else {
    m_progressBar->setRange(0, 0);
  }
  if (!m_progress->what.empty()) m_statusLabel->setText(QString::fromStdString(m_progress->what) + QStringLiteral("…"));
}

void MainWindow::onLoadFinished() {
  LoadOutcome outcome = m_loadWatcher->result();
  bool cancelled = m_progress && m_progress->cancel;
  if (cancelled) return;  // cancelLoad already restored the window
  m_progressTimer->stop();
  m_progressBar->hide();
  m_cancelButton->hide();
  if (!outcome.document) {
    m_statusLabel->setText(m_document ? QStringLiteral("Kept %1").arg(QString::fromStdString(m_document->path))
                                      : QString());
    showError(QStringLiteral("Cannot open %1").arg(QFileInfo(m_loadingPath).fileName()), outcome.error);
    emit loadFailed(outcome.error);
    return;
  }
  m_lastPath = m_loadingPath;
  addRecent(m_loadingPath);
  setDocument(std::move(outcome.document));
  emit documentLoaded();
}

void MainWindow::setDocument(std::shared_ptr<const Document> document) {
  m_document = std::move(document);
  ++m_documentGeneration;
  // A comparison on screen gets the new module's fusion membership.
  if (m_comparisonTraces[0] && m_timeline->isComparison()) showComparison();
  m_layoutCache.clear();
  m_pendingKey.clear();
  m_pendingPosition = -1;
  m_shownKey.clear();
  // The old graph's nodes point into the old document's modules, which may go away with it.
  m_scene->setGraph(nullptr);
  m_options = GraphOptions();
  m_options.hops = m_hopsSpin->value();
  m_neighbourhood = false;
  m_actNeighbourhood->setChecked(false);
  int64_t largest = 0;
  for (const StageEntry& stage : m_document->stages) largest = std::max(largest, stage.instructionCount);
  m_options.collapseFusions = largest > kCollapseFusionsAbove;
  m_actCollapse->setChecked(m_options.collapseFusions);
  m_selectedNode = -1;
  m_selectedName.clear();
  m_selectedComputation.clear();
  m_matches.clear();
  m_current = -1;
  m_inspector->clear();
  m_stageModel->setDocument(m_document);
  m_stageTable->resizeColumnsToContents();
  m_stageTable->horizontalHeader()->setSectionResizeMode(StageListModel::kPass, QHeaderView::Stretch);
  setWindowTitle(
      QStringLiteral("%1 — FusionScope").arg(QFileInfo(QString::fromStdString(m_document->path)).fileName()));
  m_statusLabel->setText(
      QStringLiteral("%1: %2 stages%3")
          .arg(QString::fromStdString(m_document->path))
          .arg(m_document->stages.size())
          .arg(m_document->pipeline.empty()
                   ? QString()
                   : QStringLiteral(", pipeline %1").arg(QString::fromStdString(m_document->pipeline))));
  m_actChooseModule->setEnabled(m_document->xlaModules.size() > 1);
  if (!m_document->xlaModule.empty()) {
    m_statusLabel->setText(m_statusLabel->text() +
                           QStringLiteral(", module %1 (%2 in this directory%3)")
                               .arg(QString::fromStdString(m_document->xlaModule))
                               .arg(m_document->xlaModules.size())
                               .arg(m_document->xlaModules.size() > 1 ? QStringLiteral("; Ctrl+Shift+M chooses")
                                                                       : QString()));
  }
  setCurrentStage(0);
}

// ---- Stages ----

int MainWindow::stageCount() const {
  return m_document ? static_cast<int>(m_document->stages.size()) : 0;
}

const StageEntry* MainWindow::currentEntry() const {
  if (!m_document || m_current < 0 || m_current >= stageCount()) return nullptr;
  return &m_document->stages[static_cast<size_t>(m_current)];
}

void MainWindow::setCurrentStage(int position) {
  if (!m_document || position < 0 || position >= stageCount()) return;
  if (position == m_current && (m_scene->graph() != nullptr || isLayingOut())) return;
  m_current = position;
  syncStageControls();
  const StageEntry& stage = m_document->stages[static_cast<size_t>(position)];
  m_stageLabel->setText(QStringLiteral("Stage %1/%2: %3")
                            .arg(stage.index)
                            .arg(m_document->stages.back().index)
                            .arg(QString::fromStdString(stage.label)));
  requestLayout();
}

int MainWindow::visibleRowOf(int position) const {
  for (int row = 0; row < m_stageFilter->rowCount(); ++row) {
    if (m_stageFilter->index(row, 0).data(StageListModel::kStageRole).toInt() == position) return row;
  }
  return -1;
}

void MainWindow::syncStageControls() {
  int rows = m_stageFilter->rowCount();
  int row = visibleRowOf(m_current);
  {
    QSignalBlocker block(m_slider);
    m_slider->setEnabled(rows > 1);
    m_slider->setRange(0, std::max(0, rows - 1));
    if (row >= 0) m_slider->setValue(row);
  }
  QSignalBlocker block(m_stageTable->selectionModel());
  if (row >= 0) {
    QModelIndex index = m_stageFilter->index(row, 0);
    m_stageTable->selectionModel()->setCurrentIndex(index,
                                                    QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_stageTable->scrollTo(index);
  } else {
    m_stageTable->selectionModel()->clearSelection();
  }
}

void MainWindow::stepVisible(int delta) {
  if (!m_document) return;
  int rows = m_stageFilter->rowCount();
  auto positionAt = [&](int row) { return m_stageFilter->index(row, 0).data(StageListModel::kStageRole).toInt(); };
  int row = visibleRowOf(m_current);
  int target = -1;
  if (row >= 0) {
    target = std::clamp(row + delta, 0, std::max(0, rows - 1));
  } else {
    // The current stage is filtered out: go to the nearest visible one in the asked direction.
    for (int r = 0; r < rows; ++r) {
      int position = positionAt(r);
      if (delta > 0 && position > m_current) {
        target = r;
        break;
      }
      if (delta < 0 && position < m_current) target = r;
    }
  }
  if (target >= 0 && target < rows) setCurrentStage(positionAt(target));
}

void MainWindow::nextStage() {
  stepVisible(1);
}

void MainWindow::previousStage() {
  stepVisible(-1);
}

// ---- Layout ----

GraphOptions MainWindow::optionsFor(int position) const {
  GraphOptions options = m_options;
  options.focus.clear();
  if (m_neighbourhood && !m_selectedName.empty()) {
    const StageEntry& stage = m_document->stages[static_cast<size_t>(position)];
    // Neighbourhoods are of entry instructions; a fused instruction focuses on its fusion.
    if (stage.module && stage.module->entry() != nullptr &&
        stage.module->entry()->findInstruction(m_selectedName) != nullptr) {
      options.focus = m_selectedName;
    }
  }
  return options;
}

GraphOptions MainWindow::currentGraphOptions() const {
  return m_current >= 0 ? optionsFor(m_current) : m_options;
}

std::string MainWindow::layoutKey(int position, const GraphOptions& options) const {
  // The document generation keeps a layout of the previous document, finishing late, out of this one's cache.
  std::string key =
      std::to_string(m_documentGeneration) + ":" + std::to_string(position) + (options.collapseFusions ? "|c" : "|e");
  for (const std::string& name : options.collapseFusions ? options.expanded : options.collapsed) key += "|" + name;
  if (!options.focus.empty()) key += "|@" + options.focus + "#" + std::to_string(options.hops);
  return key;
}

void MainWindow::requestLayout() {
  if (m_current < 0) return;
  const StageEntry& stage = m_document->stages[static_cast<size_t>(m_current)];
  GraphOptions options = optionsFor(m_current);
  std::string key = layoutKey(m_current, options);
  auto cached = m_layoutCache.find(key);
  if (cached != m_layoutCache.end()) {
    m_pendingPosition = -1;
    m_pendingKey.clear();
    showGraph(cached->second, key);
    return;
  }
  m_pendingKey = key;
  m_pendingPosition = m_current;
  if (m_layoutWatcher->isRunning()) return;  // onLayoutFinished starts the newest request
  std::shared_ptr<const core::HloModule> module = stage.module;
  std::string dot = stage.dotText;
  std::string source = stage.dotSource;
  m_statusLabel->setText(QStringLiteral("Laying out stage %1…").arg(stage.index));
  m_progressBar->setRange(0, 0);
  m_progressBar->show();
  m_layoutWatcher->setProperty("key", QString::fromStdString(key));
  m_layoutWatcher->setFuture(QtConcurrent::run([module, dot, source, options]() {
    auto start = std::chrono::steady_clock::now();
    timespec cpuStart{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpuStart);
    StatusOr<GraphModel> graph = module ? layoutModule(*module, options) : layoutDotText(dot, source);
    timespec cpuEnd{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpuEnd);
    LayoutOutcome outcome;
    outcome.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // CPU time too: on a loaded machine wall time says more about the neighbours than about the layout.
    outcome.cpuMilliseconds = static_cast<double>(cpuEnd.tv_sec - cpuStart.tv_sec) * 1e3 +
                              static_cast<double>(cpuEnd.tv_nsec - cpuStart.tv_nsec) / 1e6;
    if (graph.ok()) {
      outcome.graph = std::make_shared<const GraphModel>(std::move(*graph));
    } else {
      outcome.error = QString::fromStdString(graph.message());
    }
    return outcome;
  }));
}

void MainWindow::onLayoutFinished() {
  LayoutOutcome outcome = m_layoutWatcher->result();
  std::string key = m_layoutWatcher->property("key").toString().toStdString();
  if (!m_progress || m_progress->cancel || !isLoading()) {
    m_progressBar->hide();
  }
  if (outcome.graph) {
    if (m_layoutCache.size() >= kMaxCachedLayouts) m_layoutCache.clear();
    m_layoutCache[key] = outcome.graph;
  }
  if (m_pendingKey != key) {
    // The user moved on while this ran: lay out what is wanted now (or show it if it is cached already).
    if (m_pendingPosition >= 0) {
      m_pendingPosition = -1;
      requestLayout();
    }
    return;
  }
  m_pendingPosition = -1;
  m_pendingKey.clear();
  m_lastLayoutMs = outcome.milliseconds;
  m_lastLayoutCpuMs = outcome.cpuMilliseconds;
  if (!outcome.graph) {
    showError(QStringLiteral("Cannot lay out this stage"), outcome.error);
    m_statusLabel->setText(QStringLiteral("Layout failed"));
    emit layoutFailed(outcome.error);
    return;
  }
  showGraph(outcome.graph, key);
}

void MainWindow::showGraph(std::shared_ptr<const GraphModel> graph, const std::string& key) {
  bool sameStageBefore = m_scene->graph() != nullptr;
  m_shownKey = key;
  QRectF before = m_view->mapToScene(m_view->viewport()->rect()).boundingRect();
  QElapsedTimer sceneTimer;
  sceneTimer.start();
  m_scene->setGraph(std::move(graph));
  m_lastSceneMs = static_cast<double>(sceneTimer.nsecsElapsed()) / 1e6;
  const GraphModel& model = *m_scene->graph();
  m_statusLabel->setText(
      QStringLiteral("Stage %1: %2 nodes, %3 edges%4")
          .arg(currentEntry()->index)
          .arg(model.instructionNodeCount())
          .arg(model.edges.size())
          .arg(m_lastLayoutMs > 0 ? QStringLiteral(" (layout %1 ms)").arg(m_lastLayoutMs, 0, 'f', 0) : QString()));
  if (!isLoading()) m_progressBar->hide();
  // Keep the selection across stages when the instruction still exists.
  m_selectedNode = -1;
  if (!m_selectedName.empty()) m_selectedNode = model.findNode(m_selectedName, m_selectedComputation);
  if (m_selectedNode >= 0) {
    onNodeClicked(m_selectedNode);
  } else {
    int cluster = m_selectedName.empty() ? -1 : model.findCluster(m_selectedName);
    if (cluster >= 0) {
      onClusterClicked(cluster);
    } else {
      m_inspector->showStage(currentEntry());
    }
  }
  if (m_searchBar->isVisible() && !m_searchEdit->text().isEmpty()) {
    int keep = m_matchCursor;
    search(m_searchEdit->text(), m_searchRegex->isChecked());
    m_matchCursor = keep;
  }
  if (m_ghost) {
    setGhosting(true);  // lays the previous stage out first when needed
  } else {
    applyDiff();
  }
  if (!sameStageBefore || !before.intersects(m_scene->sceneRect())) {
    m_view->fitAll();
  } else if (m_selectedNode >= 0) {
    m_view->centerOnRect(m_scene->nodeRect(m_selectedNode));
  }
  emit stageShown(m_current);
}

void MainWindow::applyDiff() {
  const StageEntry* stage = currentEntry();
  const GraphModel* graph = m_scene->graph();
  if (stage == nullptr || graph == nullptr || !m_diff || stage->index == 0 || m_current == 0) {
    m_scene->clearDiff();
    return;
  }
  std::set<int> added;
  std::set<int> fusedNodes;
  std::set<int> fusedClusters;
  auto nodeOf = [&](const std::string& qualified) {
    auto [computation, name] = splitQualified(qualified);
    return graph->findNode(name, computation);
  };
  for (const std::string& name : stage->changes.added) {
    int node = nodeOf(name);
    if (node >= 0) added.insert(node);
    int cluster = graph->findCluster(splitQualified(name).second);
    if (cluster >= 0) fusedClusters.insert(cluster);
  }
  for (const auto& fused : stage->changes.fused) {
    auto [computation, name] = splitQualified(fused.fusion);
    int node = graph->findNode(name, computation);
    if (node >= 0) {
      fusedNodes.insert(node);
      added.erase(node);
    }
    int cluster = graph->findCluster(name);
    if (cluster >= 0) fusedClusters.insert(cluster);
  }
  std::vector<GraphScene::Ghost> ghosts;
  if (m_ghost && !stage->changes.removed.empty()) {
    auto previous = m_layoutCache.find(layoutKey(m_current - 1, optionsFor(m_current - 1)));
    if (previous != m_layoutCache.end()) {
      const GraphModel& before = *previous->second;
      for (const std::string& qualified : stage->changes.removed) {
        auto [computation, name] = splitQualified(qualified);
        int node = before.findNode(name, computation);
        if (node < 0) continue;
        const GraphNode& n = before.nodes[static_cast<size_t>(node)];
        ghosts.push_back({QRectF(n.x, n.y, n.width, n.height), QString::fromStdString(name)});
      }
    }
  }
  m_scene->setDiff(std::move(added), std::move(fusedNodes), std::move(fusedClusters), std::move(ghosts));
}

void MainWindow::setCollapseFusions(bool collapse) {
  m_options.collapseFusions = collapse;
  m_options.expanded.clear();
  m_options.collapsed.clear();
  m_actCollapse->setChecked(collapse);
  requestLayout();
}

void MainWindow::toggleFusion(const QString& name) {
  std::string fusion = name.toStdString();
  std::set<std::string>& exceptions = m_options.collapseFusions ? m_options.expanded : m_options.collapsed;
  if (!exceptions.erase(fusion)) exceptions.insert(fusion);
  m_selectedName = fusion;
  m_selectedComputation.clear();
  requestLayout();
}

void MainWindow::setNeighbourhood(bool enabled, int hops) {
  m_neighbourhood = enabled;
  m_options.hops = hops;
  m_actNeighbourhood->setChecked(enabled);
  if (m_hopsSpin->value() != hops) {
    QSignalBlocker block(m_hopsSpin);
    m_hopsSpin->setValue(hops);
  }
  if (enabled && m_selectedName.empty()) {
    statusBar()->showMessage(QStringLiteral("Neighbourhood mode: select a node to focus on"), 5000);
  }
  m_scene->setGraph(nullptr);  // force a fit on the new, differently sized graph
  requestLayout();
}

void MainWindow::setDiffEnabled(bool enabled) {
  m_diff = enabled;
  m_actDiff->setChecked(enabled);
  applyDiff();
}

void MainWindow::setGhosting(bool enabled) {
  m_ghost = enabled;
  m_actGhost->setChecked(enabled);
  if (enabled && m_current > 0) {
    // The ghosts stand where the removed instructions were in the previous stage's layout: lay that stage out in
    // the background when it is not cached yet, then draw them.
    GraphOptions options = optionsFor(m_current - 1);
    std::string key = layoutKey(m_current - 1, options);
    auto module = m_document->stages[static_cast<size_t>(m_current - 1)].module;
    if (m_layoutCache.count(key) == 0 && module) {
      auto* watcher = new QFutureWatcher<LayoutOutcome>(this);
      ++m_backgroundLayouts;
      connect(watcher, &QFutureWatcher<LayoutOutcome>::finished, this, [this, watcher, key] {
        --m_backgroundLayouts;
        LayoutOutcome outcome = watcher->result();
        watcher->deleteLater();
        if (outcome.graph) m_layoutCache[key] = outcome.graph;
        applyDiff();
      });
      watcher->setFuture(QtConcurrent::run([module, options]() {
        LayoutOutcome outcome;
        StatusOr<GraphModel> graph = layoutModule(*module, options);
        if (graph.ok()) outcome.graph = std::make_shared<const GraphModel>(std::move(*graph));
        return outcome;
      }));
      return;
    }
  }
  applyDiff();
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
  m_timeline->view()->setDark(dark);
}

// ---- Selection and search ----

void MainWindow::onNodeClicked(int node) {
  const GraphModel* graph = m_scene->graph();
  const StageEntry* stage = currentEntry();
  if (graph == nullptr || stage == nullptr || node < 0 || static_cast<size_t>(node) >= graph->nodes.size()) return;
  const GraphNode& n = graph->nodes[static_cast<size_t>(node)];
  if (n.kind == GraphNode::Kind::kStub) {
    // A stub stands for a far-away operand: jump to it.
    int target = graph->findNode(n.name, n.computation);
    if (target >= 0) {
      onNodeClicked(target);
      m_view->centerOnRect(m_scene->nodeRect(target));
      return;
    }
    // A copy of a source drawn only next to its users: inspect the source itself.
  }
  m_selectedNode = node;
  m_selectedName = n.name;
  m_selectedComputation = n.computation;
  m_scene->setSelectedNode(node);
  if (n.instruction != nullptr) {
    m_inspector->showInstruction(*stage, *n.instruction);
  } else {
    m_inspector->showDotNode(n.lines);
  }
  statusBar()->showMessage(QString::fromStdString(n.name), 3000);
  linkToTimeline(n.name, n.instruction);
  // In neighbourhood mode a new selection is a new focus: lay its neighbourhood out.
  if (m_neighbourhood && layoutKey(m_current, optionsFor(m_current)) != m_shownKey) requestLayout();
}

void MainWindow::onClusterClicked(int cluster) {
  const GraphModel* graph = m_scene->graph();
  const StageEntry* stage = currentEntry();
  if (graph == nullptr || stage == nullptr) return;
  const GraphCluster& box = graph->clusters[static_cast<size_t>(cluster)];
  m_selectedNode = -1;
  m_selectedName = box.fusionName;
  m_selectedComputation = box.computation;
  m_scene->setSelectedCluster(cluster);
  if (box.fusion != nullptr) {
    m_inspector->showInstruction(*stage, *box.fusion);
  } else {
    m_inspector->showDotNode(box.lines);
  }
  linkToTimeline(box.fusionName, box.fusion);
}

void MainWindow::linkToTimeline(const std::string& name, const core::HloInstruction* instruction) {
  if (m_timeline->view()->groups().empty()) return;
  if (instruction != nullptr) showKernelTiming(name, *instruction);
  // A selection the timeline itself asked for keeps the timeline's own highlights (e.g. replaced kernels).
  if (name == m_linkedFromTimeline) {
    m_linkedFromTimeline.clear();
    return;
  }
  m_linkedFromTimeline.clear();
  const int launches = m_timeline->highlightKernel(name);
  if (launches > 0)
    statusBar()->showMessage(QStringLiteral("%1: %2 kernel launches highlighted in the timeline")
                                 .arg(QString::fromStdString(name))
                                 .arg(launches),
                             5000);
}

void MainWindow::showKernelTiming(const std::string& name, const core::HloInstruction& instruction) {
  // Bytes the kernel must move at least: its operands read once, its result written once.
  int64_t read = 0;
  for (const core::HloInstruction* operand : instruction.operands()) read += operand->shape().byteSize();
  const int64_t written = instruction.shape().byteSize();
  QString html = QStringLiteral("<h4>Kernel launches in the timeline</h4>");
  bool any = false;
  for (const TimelineView::Group& group : m_timeline->view()->groups()) {
    const std::vector<uint32_t> launches = group.model->eventsOfInstruction(name);
    if (launches.empty()) continue;
    any = true;
    int64_t total = 0;
    for (uint32_t e : launches) total += std::max<int64_t>(0, group.model->trace().events[e].durNs);
    const double mean = static_cast<double>(total) / static_cast<double>(launches.size());
    html += QStringLiteral(
                "<p>%1%2 launches, %3 in total, %4 mean; reads %5, writes %6: <b>%7 GB/s</b> "
                "achieved</p>")
                .arg(group.label.isEmpty() ? QString() : group.label.toHtmlEscaped() + QStringLiteral(": "))
                .arg(launches.size())
                .arg(formatDuration(static_cast<double>(total)), formatDuration(mean))
                .arg(QString::fromStdString(profiler::formatBytes(read)),
                     QString::fromStdString(profiler::formatBytes(written)))
                .arg(mean > 0 ? static_cast<double>(read + written) / mean : 0.0, 0, 'f', 2);
  }
  if (!any)
    html += QStringLiteral("<p>No kernel of %1 in the trace.</p>").arg(QString::fromStdString(name).toHtmlEscaped());
  m_inspector->appendSection(html);
}

void MainWindow::selectNode(int node) {
  onNodeClicked(node);
  if (node >= 0) m_view->centerOnRect(m_scene->nodeRect(node));
}

bool MainWindow::selectInstruction(const QString& computation, const QString& name) {
  const GraphModel* graph = m_scene->graph();
  if (graph == nullptr) return false;
  int node = graph->findNode(name.toStdString(), computation.toStdString());
  if (node >= 0) {
    selectNode(node);
    return true;
  }
  int cluster = graph->findCluster(name.toStdString());
  if (cluster >= 0) {
    onClusterClicked(cluster);
    return true;
  }
  // Not drawn (inside a collapsed fusion, an inlined constant or outside the neighbourhood): still inspect it.
  const StageEntry* stage = currentEntry();
  if (stage != nullptr && stage->module) {
    const core::HloComputation* comp = stage->module->findComputation(computation.toStdString());
    const core::HloInstruction* inst = comp != nullptr ? comp->findInstruction(name.toStdString()) : nullptr;
    if (inst != nullptr) {
      m_inspector->showInstruction(*stage, *inst);
      statusBar()->showMessage(QStringLiteral("%1 is not drawn in this view").arg(name), 5000);
      return true;
    }
  }
  return false;
}

int MainWindow::search(const QString& pattern, bool regex) {
  m_matches.clear();
  m_matchCursor = -1;
  const GraphModel* graph = m_scene->graph();
  if (graph == nullptr || pattern.isEmpty()) {
    m_scene->setMatches({});
    m_searchStatus->setText(QString());
    return 0;
  }
  QRegularExpression expression(regex ? pattern : QRegularExpression::escape(pattern),
                                QRegularExpression::CaseInsensitiveOption);
  if (!expression.isValid()) {
    m_scene->setMatches({});
    m_searchStatus->setText(QStringLiteral(" bad regex: %1").arg(expression.errorString()));
    return 0;
  }
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const GraphNode& node = graph->nodes[i];
    if (node.kind == GraphNode::Kind::kStub && node.opcode.empty()) continue;  // "from NAME" stubs
    if (expression.match(QString::fromStdString(node.name)).hasMatch() ||
        (!node.opcode.empty() && expression.match(QString::fromStdString(node.opcode)).hasMatch())) {
      m_matches.push_back(static_cast<int>(i));
    }
  }
  m_scene->setMatches(m_matches);
  m_searchStatus->setText(QStringLiteral(" %1 matches").arg(m_matches.size()));
  if (!m_matches.empty()) findNext();
  return static_cast<int>(m_matches.size());
}

void MainWindow::findNext() {
  if (m_matches.empty()) return;
  m_matchCursor = (m_matchCursor + 1) % static_cast<int>(m_matches.size());
  selectNode(m_matches[static_cast<size_t>(m_matchCursor)]);
  m_searchStatus->setText(QStringLiteral(" %1 of %2").arg(m_matchCursor + 1).arg(m_matches.size()));
}

void MainWindow::findPrevious() {
  if (m_matches.empty()) return;
  int count = static_cast<int>(m_matches.size());
  m_matchCursor = m_matchCursor <= 0 ? count - 1 : m_matchCursor - 1;
  selectNode(m_matches[static_cast<size_t>(m_matchCursor)]);
  m_searchStatus->setText(QStringLiteral(" %1 of %2").arg(m_matchCursor + 1).arg(count));
}

QString MainWindow::selectedName() const {
  return QString::fromStdString(m_selectedName);
}

void MainWindow::copyNodeName() {
  if (m_selectedName.empty()) return;
  QApplication::clipboard()->setText(QString::fromStdString(m_selectedName));
  statusBar()->showMessage(QStringLiteral("Copied %1").arg(QString::fromStdString(m_selectedName)), 3000);
}

// ---- Dialogs, export, drag and drop ----

void MainWindow::openDialog(bool directory) {
  QString start = m_lastPath.isEmpty() ? QString() : QFileInfo(m_lastPath).absolutePath();
  QString path = directory ? QFileDialog::getExistingDirectory(this, QStringLiteral("Open Dump Directory"), start)
                           : QFileDialog::getOpenFileName(
                                 this, QStringLiteral("Open"), start,
                                 QStringLiteral("HLO modules and graphs (*.hlo *.txt *.dot *.gv stages.json);;"
                                                "All files (*)"));
  if (!path.isEmpty()) openPath(path);
}

void MainWindow::showPipelineDialog() {
  QDialog dialog(this);
  dialog.setWindowTitle(QStringLiteral("Pipeline"));
  auto* form = new QFormLayout(&dialog);
  auto* preset = new QComboBox(&dialog);
  for (const std::string& name : core::presetNames()) preset->addItem(QString::fromStdString(name));
  if (preset->findText(QStringLiteral("none")) < 0) preset->addItem(QStringLiteral("none"));
  preset->setCurrentText(QString::fromStdString(m_spec.preset));
  auto* passes = new QLineEdit(joinNames(m_spec.passes), &dialog);
  passes->setPlaceholderText(QStringLiteral("explicit pass list, e.g. inline, fusion, dce (overrides the preset)"));
  auto* disabled = new QLineEdit(joinNames(m_spec.disabled), &dialog);
  disabled->setPlaceholderText(QStringLiteral("passes to skip"));
  QStringList known;
  for (const core::PassInfo& info : core::registeredPasses()) known << QString::fromStdString(info.name);
  auto* help = new QLabel(QStringLiteral("Passes: ") + known.join(QStringLiteral(", ")), &dialog);
  help->setWordWrap(true);
  form->addRow(QStringLiteral("Preset"), preset);
  form->addRow(QStringLiteral("Passes"), passes);
  form->addRow(QStringLiteral("Disabled"), disabled);
  form->addRow(help);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  buttons->button(QDialogButtonBox::Ok)->setText(QStringLiteral("Run"));
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  if (dialog.exec() != QDialog::Accepted) return;
  core::PipelineSpec spec;
  spec.preset = preset->currentText().toStdString();
  spec.passes = splitNames(passes->text());
  spec.disabled = splitNames(disabled->text());
  if (spec.preset != "none" || !spec.passes.empty()) {
    StatusOr<std::unique_ptr<core::PassPipeline>> check = core::buildPipeline(spec);
    if (!check.ok()) {
      showError(QStringLiteral("Invalid pipeline"), QString::fromStdString(check.message()));
      return;
    }
  }
  m_spec = spec;
  if (m_document && m_document->kind == Document::Kind::kHloModule) openPath(m_lastPath);
}

bool MainWindow::exportView(const QString& path, QString* error) {
  auto fail = [&](const QString& message) {
    if (error != nullptr) *error = message;
    return false;
  };
  if (m_scene->graph() == nullptr) return fail(QStringLiteral("nothing to export"));
  QRectF source = m_view->mapToScene(m_view->viewport()->rect()).boundingRect().intersected(m_scene->sceneRect());
  if (source.isEmpty()) source = m_scene->sceneRect();
  QSize size = m_view->viewport()->size();
  if (path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    generator.setTitle(windowTitle());
    QPainter painter;
    if (!painter.begin(&generator)) return fail(QStringLiteral("cannot write %1").arg(path));
    m_scene->render(&painter, QRectF(QPointF(0, 0), size), source);
    painter.end();
    return QFileInfo(path).size() > 0 ? true : fail(QStringLiteral("cannot write %1").arg(path));
  }
  qreal ratio = devicePixelRatioF();
  QImage image(size * ratio, QImage::Format_ARGB32_Premultiplied);
  image.setDevicePixelRatio(ratio);
  image.fill(m_scene->theme().background);
  QPainter painter(&image);
  painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  m_scene->render(&painter, QRectF(QPointF(0, 0), size), source);
  painter.end();
  if (!image.save(path, "PNG")) return fail(QStringLiteral("cannot write %1").arg(path));
  return true;
}

void MainWindow::exportDialog(const QString& format) {
  QString path =
      QFileDialog::getSaveFileName(this, QStringLiteral("Export View"), QStringLiteral("view.%1").arg(format),
                                   QStringLiteral("%1 (*.%2)").arg(format.toUpper(), format));
  if (path.isEmpty()) return;
  QString error;
  if (!exportView(path, &error)) showError(QStringLiteral("Export failed"), error);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  for (const QUrl& url : urls) {
    if (url.isLocalFile()) {
      const QString path = url.toLocalFile();
      const bool trace = (path.endsWith(QStringLiteral(".json")) || path.endsWith(QStringLiteral(".json.gz"))) &&
                         QFileInfo(path).fileName() != QStringLiteral("stages.json");
      if (trace) {
        // Two traces dropped together are a comparison (first = before).
        if (urls.size() == 2 && urls[1].isLocalFile()) {
          openTraceComparison(path, urls[1].toLocalFile());
        } else {
          openTrace(path);
        }
      } else {
        openPath(path);
      }
      event->acceptProposedAction();
      return;
    }
  }
}

}  // namespace fusionscope::viewer
