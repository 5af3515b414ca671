// fs_trace_import_mem: peak memory of importing one Chrome trace, as a ratio to the file size. Meant to run under
// `/usr/bin/time -v` too (bench/run-benchmarks does both).
//
//   fs_trace_import_mem FILE                  import FILE and report resident-set figures (a large plain file
//                                             goes through the streaming import, profiler::ImportOptions)
//   fs_trace_import_mem --whole FILE          the same through the whole-document parse
//   fs_trace_import_mem --generate N FILE     write the generated N-event Kineto-like trace to FILE and exit
//   fs_trace_import_mem --raw FILE            the floor: load FILE and run simdjson on-demand over it, touching
//                                             only ph and ts of each event (what BM_SimdjsonOnDemandPhTs times)
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "bench/bench_support.h"
#include "bench/trace_generator.h"
#include "core/base/file_util.h"
#include "profiler/trace/chrome_json_import.h"

using fusionscope::bench::currentRssKiB;
using fusionscope::bench::heapInUse;
using fusionscope::bench::peakRssKiB;

int main(int argc, char** argv) {
  using namespace fusionscope;
  if (argc == 4 && std::strcmp(argv[1], "--generate") == 0) {
    bench::GeneratedTrace generated = bench::generateKinetoTrace(std::atoll(argv[2]));
    if (Status written = writeFileAtomic(argv[3], generated.text); !written.ok()) {
      std::fprintf(stderr, "%s\n", written.message().c_str());
      return 2;
    }
    std::printf("wrote %s: %lld events, %.1f MB\n", argv[3], static_cast<long long>(generated.events),
                generated.text.size() / 1e6);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--raw") == 0) {
    std::error_code error;
    double fileBytes = static_cast<double>(std::filesystem::file_size(argv[2], error));
    long peakBefore = peakRssKiB();
    simdjson::padded_string json;
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc;
    simdjson::ondemand::array events;
    if (error || simdjson::padded_string::load(argv[2]).get(json) || parser.iterate(json).get(doc) ||
        doc["traceEvents"].get_array().get(events)) {
      std::fprintf(stderr, "%s: cannot load or parse\n", argv[2]);
      return 2;
    }
    long count = 0;
    for (auto element : events) {
      simdjson::ondemand::object event;
      std::string_view ph;
      double ts = 0;
      if (element.get_object().get(event)) break;
      if (event.find_field_unordered("ph").get_string().get(ph) == simdjson::SUCCESS) ++count;
      if (event.find_field_unordered("ts").get_double().get(ts) == simdjson::SUCCESS) count += ts < 0;
    }
    double growth = (peakRssKiB() - peakBefore) * 1024.0;
    std::printf("raw simdjson      %ld events, peak rss grew by %.1f MiB = %.2fx the file\n", count, growth / 1048576.0,
                growth / fileBytes);
    return 0;
  }
  profiler::ImportOptions options;
  if (argc == 3 && std::strcmp(argv[1], "--whole") == 0) {
    options.streamThreshold = SIZE_MAX;
    argv[1] = argv[2];
    argc = 2;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: fs_trace_import_mem [--whole] FILE | --generate N FILE | --raw FILE\n");
    return 2;
  }
  std::error_code error;
  double fileBytes = static_cast<double>(std::filesystem::file_size(argv[1], error));
  if (error) {
    std::fprintf(stderr, "%s: %s\n", argv[1], error.message().c_str());
    return 2;
  }
  long rssBefore = currentRssKiB();
  long peakBefore = peakRssKiB();
  size_t heapBefore = heapInUse();
  StatusOr<profiler::Trace> trace = profiler::importChromeTrace(argv[1], options);
  if (!trace.ok()) {
    std::fprintf(stderr, "%s\n", trace.message().c_str());
    return 2;
  }
  size_t heapAfter = heapInUse();
  long rssAfter = currentRssKiB();
  long peakAfter = peakRssKiB();
  double events = static_cast<double>(trace->events.size());
  double heap = static_cast<double>(heapAfter - heapBefore);
  double peakGrowth = (peakAfter - peakBefore) * 1024.0;
  std::printf("file              %s (%.1f MB)\n", argv[1], fileBytes / 1e6);
  std::printf("events kept       %.0f (%.0f read; %s)\n", events, static_cast<double>(trace->stats.eventsRead),
              trace->stats.windows > 0 ? ("streamed in " + std::to_string(trace->stats.windows) + " windows").c_str()
                                       : "whole-document parse");
  std::printf("rss before        %.1f MiB\n", rssBefore / 1024.0);
  std::printf("rss after import  %.1f MiB (+%.1f MiB; the Trace is kept)\n", rssAfter / 1024.0,
              (rssAfter - rssBefore) / 1024.0);
  std::printf("peak rss          %.1f MiB (grew by %.1f MiB during import = %.2fx the file)\n", peakAfter / 1024.0,
              peakGrowth / 1048576.0, peakGrowth / fileBytes);
  std::printf(
      "trace heap        %.1f MiB live (%.2fx the file, %.0f B/event; events %zu B each, capacity %zu, "
      "text store %.1f MiB)\n",
      heap / 1048576.0, heap / fileBytes, heap / events, sizeof(profiler::TraceEvent), trace->events.capacity(),
      trace->text.bytesHeld() / 1048576.0);
  return 0;
}
