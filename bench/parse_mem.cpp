// fs_parse_mem: peak memory of parsing one HLO module. Generates the module text (or reads a file), then
// reports resident-set and heap figures before and after parseHloModule, per instruction. Meant to run
// under `/usr/bin/time -v` too (bench/run-benchmarks does both).
//
//   fs_parse_mem [N | FILE.hlo]     (default N = 100000)
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_support.h"
#include "bench/hlo_generator.h"
#include "core/base/file_util.h"
#include "core/ir/hlo_verifier.h"
#include "core/text/hlo_parser.h"

using fusionscope::bench::currentRssKiB;
using fusionscope::bench::peakRssKiB;

int main(int argc, char** argv) {
  using namespace fusionscope;
  std::string arg = argc > 1 ? argv[1] : "100000";
  std::string text;
  std::string label = arg;
  if (arg.find_first_not_of("0123456789") == std::string::npos) {
    text = bench::generateHloModule(std::stoll(arg)).text;
    label = "generated_" + arg + ".hlo";
  } else {
    StatusOr<std::string> file = readFile(arg);
    if (!file.ok()) {
      std::fprintf(stderr, "%s\n", file.message().c_str());
      return 2;
    }
    text = std::move(*file);
  }
  malloc_trim(0);
  long rssBefore = currentRssKiB();
  long peakBefore = peakRssKiB();
  size_t heapBefore = mallinfo2().uordblks;

  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModule(text, label);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", module.message().c_str());
    return 2;
  }
  size_t heapAfter = mallinfo2().uordblks;
  long rssAfter = currentRssKiB();
  long peakAfter = peakRssKiB();
  if (Status verified = core::verifyModule(**module); !verified.ok()) {
    std::fprintf(stderr, "%s\n", verified.message().c_str());
    return 2;
  }
  double n = static_cast<double>((*module)->instructionCount());
  double heap = static_cast<double>(heapAfter - heapBefore);
  std::printf("module            %s\n", label.c_str());
  std::printf("instructions      %.0f\n", n);
  std::printf("text              %.1f MiB (%.0f B/instr)\n", text.size() / 1048576.0, text.size() / n);
  std::printf("rss before parse  %.1f MiB (text and generator already resident)\n", rssBefore / 1024.0);
  std::printf("rss after parse   %.1f MiB (+%.1f MiB, %.0f B/instr)\n", rssAfter / 1024.0,
              (rssAfter - rssBefore) / 1024.0, (rssAfter - rssBefore) * 1024.0 / n);
  std::printf("peak rss          %.1f MiB (grew by %.1f MiB during parse, %.0f B/instr)\n", peakAfter / 1024.0,
              (peakAfter - peakBefore) / 1024.0, (peakAfter - peakBefore) * 1024.0 / n);
  std::printf("module heap       %.1f MiB live (%.0f B/instr)\n", heap / 1048576.0, heap / n);
  return 0;
}
