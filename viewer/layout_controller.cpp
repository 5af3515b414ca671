#include "viewer/layout_controller.h"

#include <time.h>

#include <QFutureWatcher>
#include <chrono>

#include <QtConcurrent/QtConcurrentRun>

#include "viewer/stable_layout.h"

namespace fusionscope::viewer {
namespace {

constexpr size_t kMaxCachedLayouts = 48;

// A stage's graph: pinned to `base` when the options ask for a stable layout and there is one, else afresh.
StatusOr<GraphModel> layOutModule(const core::HloModule& module, const GraphOptions& options,
                                  const std::shared_ptr<const GraphModel>& base) {
  if (options.stableLayout && base) return layoutModuleStable(module, options, *base);
  return layoutModule(module, options);
}

LayoutOutcome layOut(std::shared_ptr<const core::HloModule> module, const std::string& dot, const std::string& source,
                     const GraphOptions& options, std::shared_ptr<const GraphModel> base) {
  auto start = std::chrono::steady_clock::now();
  timespec cpuStart{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpuStart);
  StatusOr<GraphModel> graph = module ? layOutModule(*module, options, base) : layoutDotText(dot, source);
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
}

}  // namespace

LayoutController::LayoutController(QObject* parent)
    : QObject(parent), m_watcher(new QFutureWatcher<LayoutOutcome>(this)) {
  connect(m_watcher, &QFutureWatcher<LayoutOutcome>::finished, this, &LayoutController::onFinished);
}

void LayoutController::setDocument(std::shared_ptr<const Document> document) {
  m_document = std::move(document);
  ++m_generation;
  m_cache.clear();
  m_pendingKey.clear();
  m_pendingPosition = -1;
  m_pendingBase.reset();
}

std::string LayoutController::key(int position, const GraphOptions& options) const {
  // The document generation keeps a layout of the previous document, finishing late, out of this one's cache.
  std::string key =
      std::to_string(m_generation) + ":" + std::to_string(position) + (options.collapseFusions ? "|c" : "|e");
  for (const std::string& name : options.collapseFusions ? options.expanded : options.collapsed) key += "|" + name;
  if (!options.focus.empty()) key += "|@" + options.focus + "#" + std::to_string(options.hops);
  if (options.groupScopes) {
    key += "|g";
    for (const std::string& path : options.expandedGroups) key += "|+" + path;
  }
  if (options.stableLayout) key += "|s";
  return key;
}

std::shared_ptr<const GraphModel> LayoutController::cached(int position, const GraphOptions& options) const {
  auto found = m_cache.find(key(position, options));
  return found != m_cache.end() ? found->second : nullptr;
}

bool LayoutController::isBusy() const {
  return m_watcher->isRunning() || m_pendingPosition >= 0 || m_backgroundLayouts > 0;
}

void LayoutController::request(int position, const GraphOptions& options, std::shared_ptr<const GraphModel> base) {
  if (!m_document || position < 0 || position >= static_cast<int>(m_document->stages.size())) return;
  if (const std::string& error = m_document->stages[static_cast<size_t>(position)].loadError; !error.empty()) {
    // Nothing to lay out: the stage's file could not be read.
    m_pendingPosition = -1;
    m_pendingKey.clear();
    m_pendingBase.reset();
    m_lastMs = 0;
    m_lastCpuMs = 0;
    emit failed(position, QString::fromStdString(error));
    return;
  }
  std::string wanted = key(position, options);
  auto cachedGraph = m_cache.find(wanted);
  if (cachedGraph != m_cache.end()) {
    m_pendingPosition = -1;
    m_pendingKey.clear();
    m_pendingBase.reset();
    m_lastMs = 0;  // nothing was laid out for this one
    m_lastCpuMs = 0;
    emit graphReady(position, cachedGraph->second, wanted);
    return;
  }
  m_pendingKey = wanted;
  m_pendingPosition = position;
  m_pendingOptions = options;
  m_pendingBase = base;
  if (m_watcher->isRunning()) return;  // onFinished starts the newest request
  start(position, options, wanted, std::move(base));
}

void LayoutController::start(int position, const GraphOptions& options, const std::string& key,
                             std::shared_ptr<const GraphModel> base) {
  const StageEntry& stage = m_document->stages[static_cast<size_t>(position)];
  std::shared_ptr<const core::HloModule> module = stage.module;
  std::string dot = stage.dotText;
  std::string source = stage.dotSource;
  m_runningKey = key;
  emit started(position);
  m_watcher->setFuture(
      QtConcurrent::run([module, dot, source, options, base]() { return layOut(module, dot, source, options, base); }));
}

void LayoutController::onFinished() {
  LayoutOutcome outcome = m_watcher->result();
  const std::string key = m_runningKey;
  if (outcome.graph) {
    if (m_cache.size() >= kMaxCachedLayouts) m_cache.clear();
    m_cache[key] = outcome.graph;
  }
  emit finished();
  if (m_pendingKey != key) {
    // The user moved on while this ran: lay out what is wanted now (or show it if it is cached already).
    if (m_pendingPosition >= 0) {
      const int position = m_pendingPosition;
      m_pendingPosition = -1;
      request(position, m_pendingOptions, std::move(m_pendingBase));
    }
    return;
  }
  const int position = m_pendingPosition;
  m_pendingPosition = -1;
  m_pendingKey.clear();
  m_pendingBase.reset();
  m_lastMs = outcome.milliseconds;
  m_lastCpuMs = outcome.cpuMilliseconds;
  if (!outcome.graph) {
    emit failed(position, outcome.error);
    return;
  }
  emit graphReady(position, outcome.graph, key);
}

bool LayoutController::prefetch(int position, const GraphOptions& options, std::shared_ptr<const GraphModel> base) {
  if (!m_document || position < 0 || position >= static_cast<int>(m_document->stages.size())) return false;
  const std::string wanted = key(position, options);
  auto module = m_document->stages[static_cast<size_t>(position)].module;
  if (m_cache.count(wanted) != 0 || !module) return false;  // (a stage that could not be read has no module)
  auto* watcher = new QFutureWatcher<LayoutOutcome>(this);
  ++m_backgroundLayouts;
  connect(watcher, &QFutureWatcher<LayoutOutcome>::finished, this, [this, watcher, wanted] {
    --m_backgroundLayouts;
    LayoutOutcome outcome = watcher->result();
    watcher->deleteLater();
    if (outcome.graph) m_cache[wanted] = outcome.graph;
    emit backgroundReady();
  });
  watcher->setFuture(QtConcurrent::run([module, options, base]() {
    LayoutOutcome outcome;
    StatusOr<GraphModel> graph = layOutModule(*module, options, base);
    if (graph.ok()) outcome.graph = std::make_shared<const GraphModel>(std::move(*graph));
    return outcome;
  }));
  return true;
}

void LayoutController::layoutModuleBeside(std::shared_ptr<const core::HloModule> module, const GraphOptions& options) {
  if (!module) return;
  auto* watcher = new QFutureWatcher<LayoutOutcome>(this);
  ++m_backgroundLayouts;
  connect(watcher, &QFutureWatcher<LayoutOutcome>::finished, this, [this, watcher, module] {
    --m_backgroundLayouts;
    LayoutOutcome outcome = watcher->result();
    watcher->deleteLater();
    emit moduleReady(module, outcome.graph, outcome.error);
  });
  watcher->setFuture(QtConcurrent::run([module, options]() { return layOut(module, {}, {}, options, nullptr); }));
}

}  // namespace fusionscope::viewer
