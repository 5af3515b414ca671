#include "profiler/gpu/annotate.h"

#include <map>
#include <string>
#include <string_view>

#include "profiler/trace/json_text.h"

namespace fusionscope::profiler::gpu {

int64_t annotateKernelEvents(Trace& trace, const Bundle& bundle) {
  std::map<std::string_view, std::string> extra;  // PTX entry -> the fields to add, as JSON members
  for (const BundleKernel& k : bundle.kernels) {
    std::string fields = "\"hlo_op\":";
    appendJsonString(fields, k.instruction);
    fields += ",\"kind\":";
    appendJsonString(fields, k.kind);
    fields += ",\"bytes_read\":" + std::to_string(k.bytesRead) +
              ",\"bytes_written\":" + std::to_string(k.bytesWritten) + ",\"elements\":" + std::to_string(k.elements);
    extra.emplace(k.name, std::move(fields));
  }
  int64_t annotated = 0;
  for (TraceEvent& event : trace.events) {
    if (event.phase != 'X' || event.cat != "kernel") continue;
    auto found = extra.find(event.name);
    if (found == extra.end()) continue;
    std::string args(event.args);
    size_t close = args.find_last_of('}');
    if (close == std::string::npos) {
      args = "{" + found->second + "}";
    } else {
      size_t last = args.find_last_not_of(" \t\r\n", close == 0 ? 0 : close - 1);
      bool empty = last == std::string::npos || args[last] == '{';
      args.insert(close, (empty ? "" : ",") + found->second);
    }
    event.args = trace.copyText(args);
    ++annotated;
  }
  return annotated;
}

}  // namespace fusionscope::profiler::gpu
