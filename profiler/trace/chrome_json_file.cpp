// The file half of the exporter, kept apart from chromeTraceJson so that the trace model and the JSON writer build
// without fs_base (the standalone GPU runner uses them; profiler/gpu/CMakeLists.txt).
#include "core/base/file_util.h"
#include "profiler/trace/chrome_json_export.h"

namespace fusionscope::profiler {

Status exportChromeTrace(const Trace& trace, const std::string& path) {
  return writeFileAtomic(path, chromeTraceJson(trace));
}

}  // namespace fusionscope::profiler
