// libFuzzer target: a dump's stages.json → the reader `fusionscope-cli compare --stages` uses
// (profiler/compare parseFusionMembership). Any crash or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "profiler/compare/trace_compare.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto membership = fusionscope::profiler::parseFusionMembership(text, "<fuzz>");
  (void)membership;
  return 0;
}
