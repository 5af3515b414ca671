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
  const auto [firstName, secondName] = labels(m_paths[0], outcome.second ? m_paths[1] : QString());
  emit loaded(outcome.first, firstName, outcome.second, secondName);
}

std::pair<QString, QString> TraceController::labels(const QString& first, const QString& second) {
  const QStringList a = QFileInfo(first).absoluteFilePath().split(QLatin1Char('/'), Qt::SkipEmptyParts);
  const QString fileA = a.isEmpty() ? first : a.last();
  auto prefixed = [](const QString& dir, const QString& file) {
    return dir.isEmpty() ? file : QStringLiteral("%1: %2").arg(dir, file);
  };
  if (second.isEmpty()) {
    // LOGDIR/plugins/profile/RUN/FILE (JAX, TensorFlow, XProf): the log directory names the run.
    const qsizetype plugins = a.lastIndexOf(QStringLiteral("plugins"));
    const bool profilerLayout = plugins > 0 && plugins + 3 < a.size() && a[plugins + 1] == QStringLiteral("profile");
    return {prefixed(profilerLayout ? a[plugins - 1] : QString(), fileA), QString()};
  }
  const QStringList b = QFileInfo(second).absoluteFilePath().split(QLatin1Char('/'), Qt::SkipEmptyParts);
  const QString fileB = b.isEmpty() ? second : b.last();
  if (fileA != fileB) return {fileA, fileB};
  for (qsizetype i = 0; i + 1 < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) return {prefixed(a[i], fileA), prefixed(b[i], fileB)};
  }
  return {fileA, fileB};
}

}  // namespace fusionscope::viewer
