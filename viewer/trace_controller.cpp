#include "viewer/trace_controller.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <string>

#include <QtConcurrent/QtConcurrentRun>

namespace fusionscope::viewer {

TraceController::TraceController(QObject* parent) : QObject(parent), m_watcher(new QFutureWatcher<TraceOutcome>(this)) {
  connect(m_watcher, &QFutureWatcher<TraceOutcome>::finished, this, &TraceController::onFinished);
}

bool TraceController::isLoading() const {
  return m_watcher->isRunning();
}

bool TraceController::load(const QString& first, const QString& second) {
  if (isLoading()) return false;
  m_paths[0] = first;
  m_paths[1] = second;
  emit started(first);
  const std::string a = first.toStdString();
  const std::string b = second.toStdString();
  m_watcher->setFuture(QtConcurrent::run([a, b]() {
    TraceOutcome outcome;
    StatusOr<std::shared_ptr<const TimelineModel>> first = loadTimeline(a);
    if (!first.ok()) {
      outcome.error = QString::fromStdString(first.message());
      return outcome;
    }
    outcome.first = *first;
    if (!b.empty()) {
      StatusOr<std::shared_ptr<const TimelineModel>> second = loadTimeline(b);
      if (!second.ok()) {
        outcome.error = QString::fromStdString(second.message());
        outcome.first.reset();
        return outcome;
      }
      outcome.second = *second;
    }
    return outcome;
  }));
  return true;
}

void TraceController::onFinished() {
  TraceOutcome outcome = m_watcher->result();
  if (!outcome.error.isEmpty()) {
    emit failed(outcome.error);
    return;
  }
  emit loaded(outcome.first, QFileInfo(m_paths[0]).fileName(), outcome.second,
              outcome.second ? QFileInfo(m_paths[1]).fileName() : QString());
}

}  // namespace fusionscope::viewer
