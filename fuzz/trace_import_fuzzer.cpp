// libFuzzer target: Chrome trace JSON → the simdjson importer (profiler/trace), then export and re-import: a
// trace we imported must import again after our own export.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "profiler/trace/chrome_json_export.h"
#include "profiler/trace/chrome_json_import.h"

namespace pf = fusionscope::profiler;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto trace = pf::importChromeTraceText(text, "<fuzz>");
  if (!trace.ok()) return 0;
  std::string exported = pf::chromeTraceJson(*trace);
  auto again = pf::importChromeTraceText(exported, "<exported>");
  if (!again.ok()) {
    std::fprintf(stderr, "exported trace does not import: %s\n%s\n", again.status().message().c_str(),
                 exported.c_str());
    __builtin_trap();
  }
  return 0;
}
