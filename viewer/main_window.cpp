#include "viewer/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QLineF>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <utility>

#include "core/ir/hlo_computation.h"
#include "viewer/document_controller.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_search.h"
#include "viewer/side_pane.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/layout_controller.h"
#include "viewer/pipeline_dialog.h"
#include "viewer/run_controller.h"
#include "core/dot/scope_groups.h"
#include "viewer/stage_diff.h"
#include "viewer/stage_list_model.h"
#include "viewer/time_attribution_panel.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"
#include "viewer/trace_controller.h"

namespace fusionscope::viewer {
namespace {

constexpr int kPlayIntervalMs = 1200;

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      m_documents(new DocumentController(this)),
      m_layouts(new LayoutController(this)),
      m_traces(new TraceController(this)),
      m_runs(new RunController(this)),
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
  playButton->setObjectName(QStringLiteral("playButton"));
  playButton->setFlat(true);
  // Words, not media glyphs: "⏸" is missing from many fonts (it showed as a box), and the style's media icons are
  // dark pixmaps that vanish on the dark palette.
  auto showPlaying = [playButton](bool on) {
    playButton->setText(on ? QStringLiteral("Pause") : QStringLiteral("Play"));
  };
  connect(playButton, &QPushButton::clicked, m_actPlay, &QAction::trigger);
  connect(m_actPlay, &QAction::toggled, playButton, showPlaying);
  showPlaying(false);
  stageRow->addWidget(playButton);
  stageRow->addWidget(m_slider, 1);
  stageRow->addWidget(m_stageLabel, 2);
  layout->addLayout(stageRow);
  // Side by side: the previous stage's graph (or a module) in a second pane left of this one, hidden until asked for.
  m_side = new SidePane(central, m_scene, m_view, m_layouts, m_actSideBySide, [this] {
    return SidePane::Context{document(), m_current, [this](int position) { return optionsFor(position); },
                             m_selection};
  });
  layout->addWidget(m_side->splitter(), 1);
  {
    const QList<QAction*> viewActions = m_viewMenu->actions();
    const qsizetype at = viewActions.indexOf(m_actSideBySide);
    m_viewMenu->insertAction(at + 1 < viewActions.size() ? viewActions[at + 1] : nullptr, m_side->syncAction());
  }
  setCentralWidget(central);
  connect(m_side, &SidePane::failed, this, &MainWindow::showError);
  connect(m_side, &SidePane::selectRequested, this, [this](const QString& computation, const QString& name, bool group) {
    // Mirrored by name: the same instruction (or group) in this stage, when it is still there.
    const GraphModel* graph = m_scene->graph();
    if (graph != nullptr && group && graph->findGroup(name.toStdString()) >= 0) {
      selectNode(graph->findGroup(name.toStdString()));
    } else if (!selectInstruction(computation, name)) {
      statusBar()->showMessage(QStringLiteral("%1 is not in this stage").arg(name), 5000);
    }
  });
  connect(m_slider, &QSlider::valueChanged, this, [this](int row) {
    QModelIndex index = m_stageFilter->index(row, 0);
    if (index.isValid()) setCurrentStage(index.data(StageListModel::kStageRole).toInt());
  });

  createDocks();
  m_search = new GraphSearch(this, m_scene, m_view, m_stagesDock, [this] {
    return GraphSearch::Context{currentEntry(), &m_options, m_scopeTree.get()};
  });
  insertToolBarBreak(m_search->bar());
  connect(m_search, &GraphSearch::nodeChosen, this, &MainWindow::selectNode);
  connect(m_search, &GraphSearch::clusterChosen, this, &MainWindow::selectCluster);
  createStatusBar();

  m_playTimer = new QTimer(this);
  m_playTimer->setInterval(kPlayIntervalMs);
  connect(m_playTimer, &QTimer::timeout, this, [this] {
    int before = m_current;
    stepVisible(1);
    if (m_current == before) m_actPlay->setChecked(false);
  });

  connectLoading();
  connectLayout();
  connectTraces();
  connectRuns();
  connect(m_timeline, &TimelinePanel::kernelSelected, this, [this](const QString& name) { selectKernel(name); });

  connect(m_scene, &GraphScene::nodeClicked, this, &MainWindow::onNodeClicked);
  connect(m_scene, &GraphScene::clusterClicked, this, &MainWindow::onClusterClicked);
  connect(m_scene, &GraphScene::nodeDoubleClicked, this, [this](int node) {
    const GraphModel* graph = m_scene->graph();
    if (graph == nullptr) return;
    const GraphNode& n = graph->nodes[static_cast<size_t>(node)];
    if (n.kind == GraphNode::Kind::kCollapsedFusion) toggleFusion(QString::fromStdString(n.name));
    if (n.kind == GraphNode::Kind::kGroup) toggleGroup(QString::fromStdString(n.name));
  });
  connect(m_scene, &GraphScene::clusterDoubleClicked, this, [this](int cluster) {
    const GraphModel* graph = m_scene->graph();
    if (graph == nullptr) return;
    const GraphCluster& box = graph->clusters[static_cast<size_t>(cluster)];
    if (box.group.empty()) {
      toggleFusion(QString::fromStdString(box.fusionName));
    } else {
      toggleGroup(QString::fromStdString(box.group));
    }
  });
  connect(m_inspector, &Inspector::instructionActivated, this,
          [this](const QString& computation, const QString& name) { selectInstruction(computation, name); });

  resize(1500, 950);
  restoreSettings();
}

MainWindow::~MainWindow() = default;

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

void MainWindow::connectLoading() {
  connect(m_documents, &DocumentController::started, this, [this](const QString& path) {
    m_progressBar->setRange(0, 0);
    m_progressBar->show();
    m_cancelButton->show();
    m_statusLabel->setText(QStringLiteral("Loading %1…").arg(path));
  });
  connect(m_documents, &DocumentController::progress, this, [this](const QString& what, int done, int total) {
    if (total > 0) {
      m_progressBar->setRange(0, total);
      m_progressBar->setValue(done);
    } else {
      m_progressBar->setRange(0, 0);
    }
    if (!what.isEmpty()) m_statusLabel->setText(what + QStringLiteral("…"));
  });
  connect(m_documents, &DocumentController::cancelled, this, [this](const QString& path) {
    hideProgress();
    m_statusLabel->setText(QStringLiteral("Cancelled loading %1").arg(path));
  });
  connect(m_documents, &DocumentController::failed, this, [this](const QString& path, const QString& error) {
    hideProgress();
    const auto kept = document();
    m_statusLabel->setText(kept ? QStringLiteral("Kept %1").arg(QString::fromStdString(kept->path)) : QString());
    showError(QStringLiteral("Cannot open %1").arg(QFileInfo(path).fileName()), error);
    emit loadFailed(error);
  });
  connect(m_documents, &DocumentController::loaded, this, [this](const QString& path) {
    hideProgress();
    addRecent(path);
    setDocument(m_documents->document());
    emit documentLoaded();
  });
}

void MainWindow::hideProgress() {
  m_progressBar->hide();
  m_cancelButton->hide();
}

void MainWindow::openPath(const QString& path, const QString& xlaModule) {
  m_documents->open(path, xlaModule);
}

void MainWindow::chooseXlaModule() {
  int current = 0;
  const QStringList items = m_documents->xlaModuleChoices(&current);
  if (items.isEmpty()) return;
  bool ok = false;
  QString chosen = QInputDialog::getItem(this, QStringLiteral("XLA module"),
                                         QStringLiteral("Modules in %1:").arg(QString::fromStdString(document()->path)),
                                         items, current, false, &ok);
  if (ok) m_documents->openXlaModule(chosen);
}

std::shared_ptr<const Document> MainWindow::document() const {
  return m_documents->document();
}

void MainWindow::setPipelineSpec(const core::PipelineSpec& spec, bool remember) {
  m_documents->setPipelineSpec(spec);
  if (remember) m_rememberedPreset = spec.preset;
}

const core::PipelineSpec& MainWindow::pipelineSpec() const {
  return m_documents->pipelineSpec();
}

bool MainWindow::isLoading() const {
  return m_documents->isLoading();
}

bool MainWindow::isLayingOut() const {
  return m_layouts->isBusy();
}

void MainWindow::cancelLoad() {
  if (m_runs->isRunning()) {
    // Cancel a fusion off/on run: stop the CLI; nothing is opened.
    m_runs->cancel();
    hideProgress();
    m_statusLabel->setText(QStringLiteral("Run cancelled"));
    return;
  }
  m_documents->cancel();
}

void MainWindow::setDocument(std::shared_ptr<const Document> document) {
  // A comparison on screen gets the new module's fusion membership.
  if (m_timeline->isComparison()) {
    const profiler::FusionMembership membership = fusionMembership();
    m_timeline->setFusionMembership(membership.members.empty() ? nullptr : &membership);
  }
  m_layouts->setDocument(document);
  m_shownKey.clear();
  // The old graph's nodes point into the old document's modules, which may go away with it.
  m_scene->setGraph(nullptr);
  m_options = GraphOptions();
  m_options.hops = m_hopsSpin->value();
  m_options.stableLayout = m_actStableLayout->isChecked();
  m_neighbourhood = false;
  m_actNeighbourhood->setChecked(false);
  int64_t largest = 0;
  for (const StageEntry& stage : document->stages) largest = std::max(largest, stage.instructionCount);
  m_options.collapseFusions = largest > kCollapseFusionsAbove;
  m_actCollapse->setChecked(m_options.collapseFusions);
  m_scopeTree.reset();
  setGroupScopesOption(largest > kCollapseFusionsAbove, document.get());
  m_selection.clear();
  m_search->reset();
  m_current = -1;
  m_inspector->clear();
  m_stageModel->setDocument(document);
  fitTimelineDock(true);
  m_stageTable->resizeColumnsToContents();
  m_stageTable->horizontalHeader()->setSectionResizeMode(StageListModel::kPass, QHeaderView::Stretch);
  setWindowTitle(QStringLiteral("%1 — FusionScope").arg(QFileInfo(QString::fromStdString(document->path)).fileName()));
  m_statusLabel->setText(
      QStringLiteral("%1: %2 stages%3")
          .arg(QString::fromStdString(document->path))
          .arg(document->stages.size())
          .arg(document->pipeline.empty()
                   ? QString()
                   : QStringLiteral(", pipeline %1").arg(QString::fromStdString(document->pipeline))));
  m_actChooseModule->setEnabled(document->xlaModules.size() > 1);
  if (!document->xlaModule.empty()) {
    m_statusLabel->setText(m_statusLabel->text() + QStringLiteral(", module %1 (%2 in this directory%3)")
                                                       .arg(QString::fromStdString(document->xlaModule))
                                                       .arg(document->xlaModules.size())
                                                       .arg(document->xlaModules.size() > 1
                                                                ? QStringLiteral("; Ctrl+Shift+M chooses")
                                                                : QString()));
  }
  setCurrentStage(0);
}

// ---- Stages ----

int MainWindow::stageCount() const {
  return document() ? static_cast<int>(document()->stages.size()) : 0;
}

const StageEntry* MainWindow::currentEntry() const {
  if (!document() || m_current < 0 || m_current >= stageCount()) return nullptr;
  return &document()->stages[static_cast<size_t>(m_current)];
}

void MainWindow::setCurrentStage(int position) {
  if (!document() || position < 0 || position >= stageCount()) return;
  if (position == m_current && (m_scene->graph() != nullptr || isLayingOut())) return;
  m_current = position;
  syncStageControls();
  const StageEntry& stage = document()->stages[static_cast<size_t>(position)];
  m_stageLabel->setText(QStringLiteral("Stage %1/%2: %3")
                            .arg(stage.index)
                            .arg(document()->stages.back().index)
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
  // Not a QSignalBlocker on the selection model: the table repaints its highlight from those signals, and
  // without them the old row stays highlighted. The guard keeps the table's currentRowChanged from coming back.
  const bool wasSyncing = std::exchange(m_syncingStage, true);
  if (row >= 0) {
    QModelIndex index = m_stageFilter->index(row, 0);
    m_stageTable->selectionModel()->setCurrentIndex(index,
                                                    QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_stageTable->scrollTo(index);
  } else {
    m_stageTable->selectionModel()->clearSelection();
  }
  m_syncingStage = wasSyncing;
}

void MainWindow::stepVisible(int delta) {
  if (!document()) return;
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
  if (m_neighbourhood && !m_selection.empty()) {
    const StageEntry& stage = document()->stages[static_cast<size_t>(position)];
    // Neighbourhoods are of entry instructions; a fused instruction focuses on its fusion.
    if (stage.module && stage.module->entry() != nullptr &&
        stage.module->entry()->findInstruction(m_selection.name) != nullptr) {
      options.focus = m_selection.name;
    }
  }
  return options;
}

GraphOptions MainWindow::currentGraphOptions() const {
  return m_current >= 0 ? optionsFor(m_current) : m_options;
}

void MainWindow::connectLayout() {
  connect(m_layouts, &LayoutController::started, this, [this](int position) {
    m_statusLabel->setText(
        QStringLiteral("Laying out stage %1…").arg(document()->stages[static_cast<size_t>(position)].index));
    m_progressBar->setRange(0, 0);
    m_progressBar->show();
  });
  connect(m_layouts, &LayoutController::finished, this, [this] {
    if (!isLoading()) m_progressBar->hide();
  });
  connect(m_layouts, &LayoutController::graphReady, this,
          [this](int, std::shared_ptr<const GraphModel> graph, const std::string& key) {
            showGraph(std::move(graph), key);
          });
  connect(m_layouts, &LayoutController::failed, this, [this](int position, const QString& error) {
    const StageEntry* stage = currentEntry();
    if (stage != nullptr && position == m_current && !stage->loadError.empty()) {
      // A file of the dump that could not be read: no graph (the one shown was another stage's) and no dialog on
      // every step to it; the inspector says why.
      m_scene->setGraph(nullptr);
      m_shownStage = m_current;
      m_inspector->showStage(stage);
      m_statusLabel->setText(QStringLiteral("Stage %1 could not be read (see the inspector)").arg(stage->index));
      if (!isLoading()) m_progressBar->hide();
      emit layoutFailed(error);
      return;
    }
    showError(QStringLiteral("Cannot lay out this stage"), error);
    m_statusLabel->setText(QStringLiteral("Layout failed"));
    emit layoutFailed(error);
  });
  connect(m_layouts, &LayoutController::backgroundReady, this, &MainWindow::applyDiff);
}

double MainWindow::lastLayoutMilliseconds() const {
  return m_layouts->lastMilliseconds();
}

double MainWindow::lastLayoutCpuMilliseconds() const {
  return m_layouts->lastCpuMilliseconds();
}

void MainWindow::requestLayout() {
  if (m_current < 0) return;
  // A stage step lays the new stage out around the graph shown (stable layout); a change of options does not.
  std::shared_ptr<const GraphModel> base;
  if (m_options.stableLayout && m_shownStage >= 0 && m_shownStage != m_current) base = m_scene->sharedGraph();
  m_layouts->request(m_current, optionsFor(m_current), std::move(base));
}

void MainWindow::showGraph(std::shared_ptr<const GraphModel> graph, const std::string& key) {
  bool sameStageBefore = m_scene->graph() != nullptr;
  m_shownKey = key;
  QRectF before = m_view->mapToScene(m_view->viewport()->rect()).boundingRect();
  const bool stageStep = sameStageBefore && m_shownStage != m_current;
  m_shownStage = m_current;
  // The anchors of a stage step: the nodes nearest the view's centre, nearest first. The first the next stage
  // still draws (by name) keeps its place in the view, so that stepping does not throw the reader somewhere else
  // (the nearest may be gone: fused into a new fusion, or removed).
  std::vector<StageAnchor> anchors;
  if (stageStep) {
    const GraphModel* old = m_scene->graph();
    for (size_t i = 0; i < old->nodes.size(); ++i) {
      const GraphNode& node = old->nodes[i];
      if (node.kind == GraphNode::Kind::kStub) continue;
      QPointF centre = m_scene->nodeRect(static_cast<int>(i)).center();
      anchors.push_back({node.name, node.kind == GraphNode::Kind::kGroup ? std::string() : node.computation,
                         before.center() - centre, QLineF(centre, before.center()).length()});
    }
    constexpr size_t kAnchors = 16;
    const size_t keep = std::min(kAnchors, anchors.size());
    std::partial_sort(anchors.begin(), anchors.begin() + static_cast<std::ptrdiff_t>(keep), anchors.end(),
                      [](const StageAnchor& a, const StageAnchor& b) { return a.distance < b.distance; });
    anchors.resize(keep);
  }
  QElapsedTimer sceneTimer;
  sceneTimer.start();
  m_scene->setGraph(std::move(graph));
  m_lastSceneMs = static_cast<double>(sceneTimer.nsecsElapsed()) / 1e6;
  const GraphModel& model = *m_scene->graph();
  m_statusLabel->setText(
      QStringLiteral("Stage %1: %2 nodes, %3 edges%4%5")
          .arg(currentEntry()->index)
          .arg(model.instructionNodeCount())
          .arg(model.edges.size())
          .arg(model.pinnedNodes >= 0 ? QStringLiteral(", %1 kept in place").arg(model.pinnedNodes) : QString())
          .arg(lastLayoutMilliseconds() > 0 ? QStringLiteral(" (layout %1 ms)").arg(lastLayoutMilliseconds(), 0, 'f', 0)
                                            : QString()));
  if (!isLoading()) m_progressBar->hide();
  // Keep the selection across stages when the instruction still exists.
  const Selection::Place place = m_selection.placeIn(model);
  m_selection.node = place.node;
  if (place.node >= 0) {
    onNodeClicked(place.node);
  } else if (place.cluster >= 0) {
    onClusterClicked(place.cluster);
  } else {
    m_inspector->showStage(currentEntry());
  }
  // The new graph's matches, outlined without moving the selection: a relayout is not a new search.
  m_search->refresh(m_selection.node);
  if (m_ghost) {
    setGhosting(true);  // lays the previous stage out first when needed
  } else {
    applyDiff();
  }
  if (!sameStageBefore || !before.intersects(m_scene->sceneRect())) {
    // A grouped graph is meant to be read at first sight: fitted, unless that makes its labels too small.
    if (m_options.groupScopes) {
      // From its first node: the top row's leftmost.
      double startX = model.left + model.width / 2, top = 0;
      bool first = true;
      for (const GraphNode& node : model.nodes) {
        if (first || node.y < top - 1 || (node.y < top + 1 && node.x + node.width / 2 < startX)) {
          first = false;
          top = node.y;
          startX = node.x + node.width / 2;
        }
      }
      m_view->fitReadable(kReadableZoom, startX);
    } else {
      m_view->fitAll();
    }
  } else if (m_selection.node >= 0) {
    m_view->centerOnRect(m_scene->nodeRect(m_selection.node));
  } else if (stageStep) {
    followStageChange(anchors);
  }
  if (m_revealSelection) {
    m_revealSelection = false;
    revealSelection();
  }
  applyTimeOverlay();
  m_side->update();
  emit stageShown(m_current);
}

void MainWindow::applyDiff() {
  const StageEntry* stage = currentEntry();
  const GraphModel* graph = m_scene->graph();
  if (stage == nullptr || graph == nullptr || !m_diff || stage->index == 0 || m_current == 0) {
    m_scene->clearDiff();
    return;
  }
  std::shared_ptr<const GraphModel> previous;
  if (m_ghost && !stage->changes.removed.empty())
    previous = m_layouts->cached(m_current - 1, optionsFor(m_current - 1));
  StageDiff diff = stageDiff(*stage, *graph, previous.get());
  m_scene->setDiff(std::move(diff.addedNodes), std::move(diff.fusedNodes), std::move(diff.fusedClusters),
                   std::move(diff.ghosts));
}

// ---- Dialogs, export, drag and drop ----

void MainWindow::openDialog(bool directory) {
  const QString start = dialogDirectory();
  QString path = directory ? QFileDialog::getExistingDirectory(this, QStringLiteral("Open Dump Directory"), start)
                           : QFileDialog::getOpenFileName(
                                 this, QStringLiteral("Open"), start,
                                 QStringLiteral("HLO modules and graphs (*.hlo *.txt *.dot *.gv stages.json);;"
                                                "All files (*)"));
  if (path.isEmpty()) return;
  // A directory is remembered as the folder it is in, so the next dialog shows it among its siblings.
  rememberDialogDirectory(directory ? QFileInfo(path).absolutePath() : path);
  openPath(path);
}

void MainWindow::showPipelineDialog() {
  PipelineDialog dialog(pipelineSpec(), this);
  if (dialog.exec() != QDialog::Accepted) return;
  core::PipelineSpec spec = dialog.spec();
  if (spec.preset != "none" || !spec.passes.empty()) {
    StatusOr<std::unique_ptr<core::PassPipeline>> check = core::buildPipeline(spec);
    if (!check.ok()) {
      showError(QStringLiteral("Invalid pipeline"), QString::fromStdString(check.message()));
      return;
    }
  }
  setPipelineSpec(spec);
  if (document() && document()->kind == Document::Kind::kHloModule) openPath(m_documents->lastPath());
}

bool MainWindow::exportView(const QString& path, QString* error, double scale) {
  return m_view->exportScene(path, windowTitle(), scale, error);
}

void MainWindow::exportDialog(const QString& format) {
  const QString suggested = QDir(dialogDirectory()).filePath(QStringLiteral("graph.%1").arg(format));
  QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export Graph"), suggested,
                                              QStringLiteral("%1 (*.%2)").arg(format.toUpper(), format));
  if (path.isEmpty()) return;
  rememberDialogDirectory(path);
  double scale = 1;
  if (format == QStringLiteral("png")) {
    QSettings settings;
    bool ok = false;
    scale = QInputDialog::getDouble(this, QStringLiteral("Export PNG"),
                                    QStringLiteral("Scale (pixels per point of the graph at 1:1):"),
                                    settings.value(QStringLiteral("export/pngScale"), 2.0).toDouble(), 0.1, 16, 1, &ok);
    if (!ok) return;
    settings.setValue(QStringLiteral("export/pngScale"), scale);
  }
  QString error;
  if (!exportView(path, &error, scale)) {
    showError(QStringLiteral("Export failed"), error);
    return;
  }
  const double applied = format == QStringLiteral("png") ? m_view->exportScale(scale) : 1.0;
  statusBar()->showMessage(
      QStringLiteral("Exported the whole graph to %1%2")
          .arg(path,
               applied < scale ? QStringLiteral(" at %1× (the largest that fits)").arg(applied, 0, 'f', 2) : QString()),
      5000);
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
