// libfusionscope_inject.so: set CUDA_INJECTION64_PATH to this library and the CUDA driver calls
// InitializeInjection() when the program initialises CUDA. The collector then records everything the program does
// and writes the trace on exit to $FUSIONSCOPE_TRACE (default timeline.ctf.json); $FUSIONSCOPE_TRACE_API picks
// which API calls get records (filtered, the default; all; none). `fusionscope-cli trace` sets
// both variables; any unmodified CUDA program (a CUDA sample, a JAX or PyTorch script) can be traced this way.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/cupti/collector.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace fusionscope::profiler::cupti;
  const char* path = std::getenv("FUSIONSCOPE_TRACE");
  std::string output = path && *path ? path : "timeline.ctf.json";
  CollectorOptions options;
  if (const char* api = std::getenv("FUSIONSCOPE_TRACE_API"); api != nullptr && *api != 0) {
    if (std::optional<ApiRecords> records = parseApiRecords(api)) {
      options.api = *records;
    } else {
      std::fprintf(stderr, "fusionscope: FUSIONSCOPE_TRACE_API=%s is not filtered, all or none; using filtered\n", api);
    }
  }
  fusionscope::Status started = startCollector(options);
  if (!started.ok()) {
    std::fprintf(stderr, "fusionscope: cannot start the CUPTI collector: %s\n", started.message().c_str());
    return 0;  // the driver ignores the return value; the program runs untraced
  }
  stopAndWriteAtExit(output);
  return 1;
}
