#pragma once

#include <string>

#include "core/base/status.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler::cupti {

// Writes `trace` as Chrome JSON (chromeTraceJson) to `path` atomically: a temporary file in the same directory,
// then rename. The collector, the injection library and the standalone GPU runner cannot link fs_base (whose
// writeFileAtomic the rest of the project uses), hence this small copy of the same contract.
Status writeTraceFile(const Trace& trace, const std::string& path);

// The same for any text (the GPU runner's .npy outputs and reports).
Status writeBytesAtomic(const std::string& path, std::string_view bytes);

}  // namespace fusionscope::profiler::cupti
