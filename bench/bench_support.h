#pragma once

// Small pieces every benchmark binary and generator needs: a deterministic random source and process memory
// readings. Header-only; benchmarks never run as tests.

#include <malloc.h>
#include <sys/resource.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace fusionscope::bench {

// splitmix64: tiny, fast and identical everywhere (std distributions are implementation-defined), so a
// generator writes the same bytes on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : m_state(seed) {}
  uint64_t next() {
    uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n).
  int64_t uniform(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return uniform(100) < percent; }
  template <typename T, size_t N>
  const T& pick(const std::array<T, N>& items) {
    return items[static_cast<size_t>(uniform(N))];
  }

 private:
  uint64_t m_state;
};

// Peak resident set of this process so far, in KiB (Linux getrusage).
inline long peakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Current resident set in KiB, from /proc/self/statm (4 KiB pages); 0 if unreadable.
inline long currentRssKiB() {
  long pages = 0;
  long resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * 4;
}

// malloc'd bytes in use (glibc mallinfo2), large mmap'd blocks included.
inline size_t heapInUse() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

}  // namespace fusionscope::bench
