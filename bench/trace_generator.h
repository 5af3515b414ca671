#pragma once

#include <cstdint>
#include <string>

namespace fusionscope::bench {

// What generateKinetoTrace wrote: the event counts by kind, for checking an import against.
struct GeneratedTrace {
  std::string text;
  int64_t events = 0;    // every element of traceEvents, metadata included
  int64_t metadata = 0;  // M events (process/thread names and sort indices)
  int64_t complete = 0;  // X events
  int64_t flows = 0;     // s + f events
  int64_t instants = 0;  // i events
};

// A deterministic Kineto-like Chrome trace (object form, one event per line) with about `events` events: per
// step, CPU ops (aten::*, cat "cpu_op"), their cudaLaunchKernel runtime calls (cat "cuda_runtime"), the GPU kernels
// (cat "kernel", long templated names, args with "External id", "correlation", "grid":[..], "block":[..], ...),
// ac2g flow start/finish pairs bound by correlation id, plus a ProfilerStep slice and an instant event per step
// and M events naming every process and thread. Times are µs with ns decimals, as Kineto writes them. About 200
// bytes per event on average (1M events ≈ 200 MB).
GeneratedTrace generateKinetoTrace(int64_t events);

}  // namespace fusionscope::bench
