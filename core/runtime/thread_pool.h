#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fusionscope::core {

// A fixed set of worker threads that split one range at a time: parallelFor(range, fn) calls fn(begin, end) on
// disjoint chunks covering [0, range), the calling thread taking the first chunk, and returns when all are done.
// Not reentrant: one parallelFor at a time.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threadCount() const { return static_cast<int>(m_workers.size()) + 1; }
  void parallelFor(int64_t range, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void workerLoop(int worker);

  std::vector<std::thread> m_workers;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::condition_variable m_done;
  const std::function<void(int64_t, int64_t)>* m_task = nullptr;
  int64_t m_range = 0;
  int m_chunks = 0;
  uint64_t m_generation = 0;
  int m_pending = 0;
  bool m_stop = false;
};

}  // namespace fusionscope::core
