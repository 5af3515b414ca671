#include "core/runtime/thread_pool.h"

#include <algorithm>

namespace fusionscope::core {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) m_workers.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  for (std::thread& worker : m_workers) worker.join();
}

void ThreadPool::parallelFor(int64_t range, const std::function<void(int64_t, int64_t)>& fn) {
  const int chunks = static_cast<int>(std::min<int64_t>(threadCount(), range));
  if (chunks <= 1) {
    if (range > 0) fn(0, range);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_task = &fn;
    m_range = range;
    m_chunks = chunks;
    m_pending = chunks - 1;
    ++m_generation;
  }
  m_wake.notify_all();
  fn(0, range / chunks);
  std::unique_lock<std::mutex> lock(m_mutex);
  m_done.wait(lock, [this] { return m_pending == 0; });
  m_task = nullptr;
}

void ThreadPool::workerLoop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* task = nullptr;
    int64_t begin = 0;
    int64_t end = 0;
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
      if (m_stop) return;
      seen = m_generation;
      if (worker >= m_chunks) continue;
      task = m_task;
      begin = m_range * worker / m_chunks;
      end = m_range * (worker + 1) / m_chunks;
    }
    (*task)(begin, end);
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      --m_pending;
    }
    m_done.notify_one();
  }
}

}  // namespace fusionscope::core
