#include "viewer/document_controller.h"

#include <QFutureWatcher>
#include <QTimer>

#include <QtConcurrent/QtConcurrentRun>

namespace fusionscope::viewer {

DocumentController::DocumentController(QObject* parent)
    : QObject(parent), m_watcher(new QFutureWatcher<LoadOutcome>(this)), m_pollTimer(new QTimer(this)) {
  connect(m_watcher, &QFutureWatcher<LoadOutcome>::finished, this, &DocumentController::onFinished);
  connect(m_pollTimer, &QTimer::timeout, this, &DocumentController::poll);
  m_pollTimer->setInterval(100);
}

DocumentController::~DocumentController() {
  if (m_progress) m_progress->cancel = true;
}

void DocumentController::open(const QString& path, const QString& xlaModule) {
  if (isLoading()) cancel();
  m_loadingPath = path;
  auto progress = std::make_shared<LoadProgress>();
  m_progress = progress;
  core::PipelineSpec spec = m_spec;
  std::string file = path.toStdString();
  std::string module = xlaModule.toStdString();
  emit started(path);
  m_pollTimer->start();
  m_watcher->setFuture(QtConcurrent::run([progress, spec, file, module]() {
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

void DocumentController::reload() {
  if (!m_lastPath.isEmpty()) open(m_lastPath, m_document ? QString::fromStdString(m_document->xlaModule) : QString());
}

void DocumentController::cancel() {
  if (!m_progress) return;
  // The worker stops at its next check; its result is dropped either way, and the window goes back to what it
  // showed right away.
  m_progress->cancel = true;
  m_pollTimer->stop();
  emit cancelled(m_loadingPath);
}

bool DocumentController::isLoading() const {
  return m_watcher->isRunning() && m_progress && !m_progress->cancel;
}

QStringList DocumentController::xlaModuleChoices(int* current) const {
  QStringList items;
  *current = 0;
  if (!m_document || m_document->xlaModules.size() < 2) return items;
  for (const std::string& module : m_document->xlaModules) {
    QString item = QString::fromStdString(module);
    if (item.section(QLatin1Char(' '), 1) == QString::fromStdString(m_document->xlaModule)) *current = items.size();
    items << item;
  }
  return items;
}

void DocumentController::openXlaModule(const QString& choice) {
  if (m_document && !choice.isEmpty())
    open(QString::fromStdString(m_document->path), choice.section(QLatin1Char(' '), 0, 0));
}

void DocumentController::poll() {
  if (!m_progress) return;
  QString what;
  int done = 0;
  int total = 0;
  {
    std::lock_guard<std::mutex> lock(m_progress->mutex);
    what = QString::fromStdString(m_progress->what);
    done = m_progress->done;
    total = m_progress->total;
  }
  emit progress(what, done, total);
}

void DocumentController::onFinished() {
  LoadOutcome outcome = m_watcher->result();
  if (m_progress && m_progress->cancel) return;  // cancel() already reported it
  m_pollTimer->stop();
  if (!outcome.document) {
    emit failed(m_loadingPath, outcome.error);
    return;
  }
  m_lastPath = m_loadingPath;
  m_document = std::move(outcome.document);
  emit loaded(m_loadingPath);
}

}  // namespace fusionscope::viewer
