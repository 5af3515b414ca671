#pragma once

// Ties the CUPTI kernel events of a bundle run back to the bundle: each kernel event whose name is a bundle kernel's
// PTX entry gets the HLO instruction it runs and the bytes the compiler planned for it, so that `fusionscope-cli
// stats` counts bytes moved and `compare` can map a fused kernel to the unfused ones (by name or stages.json).
#include <cstdint>

#include "profiler/gpu/bundle.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler::gpu {

// Appends "hlo_op", "kind", "bytes_read", "bytes_written" and "elements" to the args of every 'X' event of
// category "kernel" named like a bundle kernel; returns how many events it annotated.
int64_t annotateKernelEvents(Trace& trace, const Bundle& bundle);

}  // namespace fusionscope::profiler::gpu
