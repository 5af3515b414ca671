#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fusionscope::core {

// A fixed set of worker threads that split one range at a time: parallelFor(range, fn) calls fn(begin, end) on
// disjoint chunks covering [0, range) and returns when all are done. Chunks (a few per thread) are claimed from an
// atomic counter by the calling thread and by whichever workers are awake, so a worker the OS does not schedule
// (another process on the core) delays nothing: the others take its chunks. Workers and the caller poll for a
// short while (200 us) before sleeping, so back-to-back kernels do not pay a thread wake-up each. Not reentrant:
// one parallelFor at a time.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threadCount() const { return static_cast<int>(m_workers.size()) + 1; }
  void parallelFor(int64_t range, const std::function<void(int64_t, int64_t)>& fn);

 private:
  // One parallelFor: shared with the workers, so a worker that wakes after the call returned finds no chunk left
  // and never touches `fn`.
  struct Task {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t range = 0;
    int64_t chunks = 0;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
  };
  // Runs chunks of `task` until none is left; true when this call finished the last one.
  static bool work(Task& task);
  void workerLoop();

  std::vector<std::thread> m_workers;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::condition_variable m_done;
  std::shared_ptr<Task> m_task;
  // Written under m_mutex; read without it by polling workers.
  std::atomic<uint64_t> m_generation{0};
  std::atomic<bool> m_stop{false};
  int m_sleeping = 0;            // workers blocked on m_wake (under m_mutex)
  bool m_callerWaiting = false;  // parallelFor blocked on m_done (under m_mutex)
};

}  // namespace fusionscope::core
