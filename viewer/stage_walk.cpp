#include "viewer/stage_walk.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTimer>
#include <algorithm>
#include <cmath>

#include "viewer/document.h"
#include "viewer/graph_model.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/main_window.h"

namespace fusionscope::viewer {

StageWalk::StageWalk(MainWindow* window, QObject* parent) : QObject(parent), m_window(window) {
  connect(m_window, &MainWindow::stageShown, this, &StageWalk::onShown);
  connect(m_window, &MainWindow::layoutFailed, this, &StageWalk::onFailed);
}

void StageWalk::start() {
  m_steps.clear();
  m_firstLayoutMs = m_window->lastLayoutMilliseconds();
  m_firstStage = m_window->currentStage();
  QTimer::singleShot(0, this, &StageWalk::next);
}

void StageWalk::next() {
  if (m_maxSteps > 0 && m_steps.size() >= static_cast<size_t>(m_maxSteps)) {
    emit finished();
    return;
  }
  const int before = m_window->currentStage();
  m_timer.start();
  m_waiting = true;
  m_target = -1;
  m_window->nextStage();  // a cached stage is shown (and recorded) before this returns
  if (!m_waiting) return;
  const int now = m_window->currentStage();
  if (now == before) {
    // The last stage (of the visible ones) is shown.
    m_waiting = false;
    emit finished();
    return;
  }
  m_target = now;
}

void StageWalk::onShown(int position) {
  if (!m_waiting) return;
  if (m_target >= 0 && position != m_target) return;
  record(QString());
}

void StageWalk::onFailed(const QString& message) {
  if (!m_waiting) return;
  record(message);
}

void StageWalk::record(const QString& error) {
  m_waiting = false;
  StepTiming step;
  step.position = m_window->currentStage();
  if (const StageEntry* entry = m_window->currentEntry()) {
    step.index = entry->index;
    step.name = QString::fromStdString(entry->label.empty() ? entry->pass : entry->label);
  }
  step.error = error;
  if (error.isEmpty()) {
    step.layoutMs = m_window->lastLayoutMilliseconds();
    step.cached = step.layoutMs == 0;
    step.sceneMs = m_window->lastSceneMilliseconds();
    QElapsedTimer paint;
    paint.start();
    m_window->graphView()->viewport()->repaint();
    step.paintMs = static_cast<double>(paint.nsecsElapsed()) / 1e6;
    if (const GraphModel* graph = m_window->graphScene()->graph()) {
      step.nodes = graph->instructionNodeCount();
      step.keptInPlace = graph->pinnedNodes;
    }
  }
  step.totalMs = static_cast<double>(m_timer.nsecsElapsed()) / 1e6;
  m_steps.push_back(step);
  QTimer::singleShot(0, this, &StageWalk::next);
}

double stepQuantile(const std::vector<StepTiming>& steps, double q) {
  if (steps.empty()) return 0;
  std::vector<double> totals;
  totals.reserve(steps.size());
  for (const StepTiming& step : steps) totals.push_back(step.totalMs);
  std::sort(totals.begin(), totals.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(totals.size())));
  return totals[std::min(totals.size() - 1, rank == 0 ? 0 : rank - 1)];
}

QByteArray StageWalk::toJson(const QString& source) const {
  QJsonArray steps;
  double total = 0, slowest = 0;
  int overSecond = 0;
  for (const StepTiming& step : m_steps) {
    QJsonObject o{{QStringLiteral("stage"), step.position},
                  {QStringLiteral("index"), step.index},
                  {QStringLiteral("name"), step.name},
                  {QStringLiteral("layout_ms"), step.layoutMs},
                  {QStringLiteral("scene_ms"), step.sceneMs},
                  {QStringLiteral("paint_ms"), step.paintMs},
                  {QStringLiteral("total_ms"), step.totalMs},
                  {QStringLiteral("cached"), step.cached},
                  {QStringLiteral("nodes"), step.nodes},
                  {QStringLiteral("kept_in_place"), step.keptInPlace}};
    if (!step.error.isEmpty()) o.insert(QStringLiteral("error"), step.error);
    steps.append(o);
    total += step.totalMs;
    slowest = std::max(slowest, step.totalMs);
    if (step.totalMs > 1000) ++overSecond;
  }
  QJsonObject summary{{QStringLiteral("steps"), static_cast<int>(m_steps.size())},
                      {QStringLiteral("p50_ms"), stepQuantile(m_steps, 0.5)},
                      {QStringLiteral("p95_ms"), stepQuantile(m_steps, 0.95)},
                      {QStringLiteral("max_ms"), slowest},
                      {QStringLiteral("over_1s"), overSecond},
                      {QStringLiteral("total_s"), total / 1000}};
  const GraphOptions options = m_window->currentGraphOptions();
  QJsonObject root{{QStringLiteral("source"), source},
                   {QStringLiteral("stages"), m_window->stageCount()},
                   {QStringLiteral("first_stage"), m_firstStage},
                   {QStringLiteral("first_layout_ms"), m_firstLayoutMs},
                   {QStringLiteral("stable_layout"), options.stableLayout},
                   {QStringLiteral("grouped"), options.groupScopes},
                   {QStringLiteral("steps"), steps},
                   {QStringLiteral("summary"), summary}};
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

QString StageWalk::summary() const {
  double slowest = 0;
  QString slowestName;
  for (const StepTiming& step : m_steps) {
    if (step.totalMs >= slowest) {
      slowest = step.totalMs;
      slowestName = QStringLiteral("stage %1 %2").arg(step.index).arg(step.name);
    }
  }
  return QStringLiteral("%1 steps: median %2 ms, p95 %3 ms, slowest %4 ms (%5)")
      .arg(m_steps.size())
      .arg(stepQuantile(m_steps, 0.5), 0, 'f', 0)
      .arg(stepQuantile(m_steps, 0.95), 0, 'f', 0)
      .arg(slowest, 0, 'f', 0)
      .arg(slowestName);
}

}  // namespace fusionscope::viewer
