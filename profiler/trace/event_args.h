#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fusionscope::profiler {

// Reading an event's args (TraceEvent::args, raw JSON kept verbatim by the importer). Every reader of args in
// fs_profiler, the CLI and the viewer goes through these, all with simdjson, so that one args object means the same
// thing everywhere. Args that are not a valid JSON object say nothing (no value, 0 bytes, no samples).

// The string value of the top-level `key`; nullopt when the key is absent or its value is not a string. Only the top
// level counts: `{"x":{"hlo_op":"a"}}` has no hlo_op. A key written twice means its last value.
std::optional<std::string> argString(std::string_view args, std::string_view key);

// Bytes the args say an event moved: "bytes" (Kineto copies/memsets), or "bytes_read" + "bytes_written" (the CPU
// runner and our GPU runner's kernels; also spelt "bytes read"/"bytes written", as `fusionscope-cli run --trace`
// writes them); 0 when they say nothing.
int64_t argsBytes(std::string_view args);

// A counter event's values (Chrome trace "C" events: one series per args key), keys in byte order, a key written
// twice meaning its last value. Numbers count as they are, strings when they start with a number (std::stod:
// "12.5" and "7 MB" count, "n/a" does not); other values are not drawable and are left out.
std::vector<std::pair<std::string, double>> counterValues(std::string_view args);

}  // namespace fusionscope::profiler
