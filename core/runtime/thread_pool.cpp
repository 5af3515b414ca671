#include "core/runtime/thread_pool.h"

#include <algorithm>

namespace fusionscope::core {

namespace {

// Chunks per thread: enough that an unscheduled worker's share is small, few enough that claiming is free.
constexpr int64_t kChunksPerThread = 4;

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) m_workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  for (std::thread& worker : m_workers) worker.join();
}

bool ThreadPool::work(Task& task) {
  bool finishedLast = false;
  for (;;) {
    const int64_t chunk = task.next.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= task.chunks) return finishedLast;
    (*task.fn)(task.range * chunk / task.chunks, task.range * (chunk + 1) / task.chunks);
    finishedLast = task.done.fetch_add(1, std::memory_order_acq_rel) + 1 == task.chunks;
  }
}

void ThreadPool::parallelFor(int64_t range, const std::function<void(int64_t, int64_t)>& fn) {
  if (range <= 0) return;
  if (m_workers.empty() || range == 1) {
    fn(0, range);
    return;
  }
  auto task = std::make_shared<Task>();
  task->fn = &fn;
  task->range = range;
  task->chunks = std::min<int64_t>(range, threadCount() * kChunksPerThread);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_task = task;
    ++m_generation;
  }
  m_wake.notify_all();
  work(*task);
  if (task->done.load(std::memory_order_acquire) != task->chunks) {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_done.wait(lock, [&] { return task->done.load(std::memory_order_acquire) == task->chunks; });
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_task == task) m_task.reset();
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
      if (m_stop) return;
      seen = m_generation;
      task = m_task;
    }
    if (task && work(*task)) {
      // Under the mutex, so the caller cannot check `done` and start waiting between our update and the notify.
      std::lock_guard<std::mutex> lock(m_mutex);
      m_done.notify_all();
    }
  }
}

}  // namespace fusionscope::core
