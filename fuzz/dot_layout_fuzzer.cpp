// libFuzzer target: DOT text → our cgraph/gvc wrapper (fs_graphviz layoutDot), the path the viewer takes for
// XLA's own hlo_graph_*.dot files. A crash, hang or sanitizer report is a finding; a parse error is fine.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/graphviz/graphviz_renderer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Layout cost grows with the graph; libFuzzer's -max_len (set by scripts/fuzz) keeps inputs small.
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto layout = fusionscope::graphviz::layoutDot(text, "<fuzz>");
  (void)layout;
  return 0;
}
