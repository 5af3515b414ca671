// ThreadPool::parallelFor: every index exactly once, for any range and thread count, over many back-to-back calls
// (the CPU executable calls it once per kernel launch).
#include "core/runtime/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace fusionscope::core {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threadCount(), threads);
    for (int64_t range : {0, 1, 2, 7, 64, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(range));
      pool.parallelFor(range, [&](int64_t begin, int64_t end) {
        ASSERT_LE(0, begin);
        ASSERT_LT(begin, end);
        ASSERT_LE(end, range);
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < range; ++i) {
        ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
            << "threads " << threads << " range " << range << " index " << i;
      }
    }
  }
}

TEST(ThreadPoolTest, ManyBackToBackCallsNeitherLoseWorkNorHang) {
  ThreadPool pool(4);
  int64_t total = 0;
  for (int call = 0; call < 5000; ++call) {
    std::atomic<int64_t> sum{0};
    const int64_t range = 1 + call % 37;
    pool.parallelFor(range, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
    });
    ASSERT_EQ(sum.load(), range * (range - 1) / 2) << "call " << call;
    total += sum.load();
  }
  EXPECT_GT(total, 0);
}

TEST(ThreadPoolTest, ASlowChunkDoesNotStopTheOthersFromTakingTheRest) {
  ThreadPool pool(2);
  std::atomic<int64_t> covered{0};
  // The chunk holding index 0 sleeps; the rest of the range must still be done (by either thread).
  pool.parallelFor(800, [&](int64_t begin, int64_t end) {
    if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    covered.fetch_add(end - begin);
  });
  EXPECT_EQ(covered.load(), 800);
}

// Workers poll for a short while after a call and then sleep: calls spaced wider than the polling window must
// wake them (and a pool destroyed while its workers poll or sleep must join them).
TEST(ThreadPoolTest, CallsAfterTheWorkersWentToSleepStillUseThem) {
  for (auto gap : {std::chrono::microseconds(0), std::chrono::microseconds(50), std::chrono::microseconds(2000)}) {
    ThreadPool pool(2);
    bool sawWorker = false;
    for (int call = 0; call < 20; ++call) {
      std::this_thread::sleep_for(gap);
      std::atomic<int64_t> covered{0};
      std::atomic<bool> otherThread{false};
      const std::thread::id caller = std::this_thread::get_id();
      pool.parallelFor(64, [&](int64_t begin, int64_t end) {
        if (std::this_thread::get_id() != caller) otherThread = true;
        // Long enough chunks that the worker, once awake, claims some.
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        covered.fetch_add(end - begin);
      });
      ASSERT_EQ(covered.load(), 64) << "gap " << gap.count() << " us, call " << call;
      sawWorker = sawWorker || otherThread.load();
    }
    EXPECT_TRUE(sawWorker) << "the worker never ran a chunk with calls " << gap.count() << " us apart";
  }
}

}  // namespace
}  // namespace fusionscope::core
