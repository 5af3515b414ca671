#include "core/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fusionscope::core {

namespace {

// Chunks per thread: enough that an unscheduled worker's share is small, few enough that claiming is free.
constexpr int64_t kChunksPerThread = 4;

// How long a worker keeps polling for the next range before it sleeps on the condition variable, and how long
// the caller polls for the last chunk before it does. A training step launches kernels back to back, tens of
// microseconds apart; waking a sleeping thread costs a futex call and a reschedule (10-50 us on a VM), more
// than many of those kernels take.
constexpr auto kSpin = std::chrono::microseconds(200);

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls `ready` until it returns true or kSpin has passed; returns its last answer.
template <typename Ready>
bool spinUntil(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpuRelax();
    if ((i & 63) == 63) {
      if (std::chrono::steady_clock::now() >= deadline) return ready();
      // When the poller shares a core with the thread it waits for, let that thread run.
      std::this_thread::yield();
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) m_workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop.store(true);
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
  bool sleepers = false;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_task = task;
    m_generation.store(m_generation.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    sleepers = m_sleeping > 0;
  }
  if (sleepers) m_wake.notify_all();  // polling workers see the new generation without a system call
  work(*task);
  auto finished = [&] { return task->done.load(std::memory_order_acquire) == task->chunks; };
  if (!finished() && !spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_callerWaiting = true;
    m_done.wait(lock, finished);
    m_callerWaiting = false;
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_task == task) m_task.reset();
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<Task> task;
    spinUntil([&] { return m_generation.load(std::memory_order_acquire) != seen || m_stop.load(); });
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      ++m_sleeping;
      m_wake.wait(lock, [&] { return m_stop.load() || m_generation.load(std::memory_order_relaxed) != seen; });
      --m_sleeping;
      if (m_stop.load()) return;
      seen = m_generation.load(std::memory_order_relaxed);
      task = m_task;
    }
    if (task && work(*task)) {
      // Under the mutex, so the caller cannot check `done` and start waiting between our update and the check.
      std::lock_guard<std::mutex> lock(m_mutex);
      if (m_callerWaiting) m_done.notify_all();
    }
  }
}

}  // namespace fusionscope::core
