#include "profiler/trace/chrome_json_export.h"

#include <charconv>

#include "profiler/trace/json_text.h"

namespace fusionscope::profiler {
namespace {

void appendInt(std::string& out, int64_t value) {
  char buffer[24];
  char* end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

void appendTrack(std::string& out, const TrackId& track) {
  if (track.isText) {
    appendJsonString(out, track.text);
  } else {
    appendInt(out, track.number);
  }
}

void appendMetadata(std::string& out, const char* name, const TrackId& pid, const TrackId* tid, const char* argKey,
                    const std::string* text, const int64_t* number) {
  out += "{\"ph\":\"M\",\"name\":\"";
  out += name;
  out += "\",\"pid\":";
  appendTrack(out, pid);
  out += ",\"tid\":";
  if (tid) {
    appendTrack(out, *tid);
  } else {
    out += '0';
  }
  out += ",\"args\":{\"";
  out += argKey;
  out += "\":";
  if (text) {
    appendJsonString(out, *text);
  } else {
    appendInt(out, *number);
  }
  out += "}},\n";
}

void appendEvent(std::string& out, const TraceEvent& event) {
  out += "{\"ph\":\"";
  out += event.phase;
  out += "\",\"name\":";
  appendJsonString(out, event.name);
  if (!event.cat.empty()) {
    out += ",\"cat\":";
    appendJsonString(out, event.cat);
  }
  out += ",\"pid\":";
  appendTrack(out, event.pid);
  out += ",\"tid\":";
  appendTrack(out, event.tid);
  out += ",\"ts\":";
  appendNanosAsMicros(out, event.tsNs);
  if (event.durNs != kNoDuration) {
    out += ",\"dur\":";
    appendNanosAsMicros(out, event.durNs);
  }
  if (!event.id.empty()) {
    out += ",\"id\":";
    if (event.idIsNumber) {
      out += event.id;
    } else {
      appendJsonString(out, event.id);
    }
  }
  if (!event.bp.empty()) {
    out += ",\"bp\":";
    appendJsonString(out, event.bp);
  }
  if (!event.args.empty()) {
    out += ",\"args\":";
    out += event.args;
  }
  if (!event.extra.empty()) {
    out += ',';
    out += event.extra;
  }
  out += "},\n";
}

}  // namespace

std::string chromeTraceJson(const Trace& trace) {
  std::string out;
  // ~160 bytes covers a typical Kineto kernel event; args dominate the rest.
  size_t estimate = 64 + (trace.processes.size() + trace.threads.size()) * 160;
  for (const TraceEvent& event : trace.events) {
    estimate += 128 + event.name.size() + event.cat.size() + event.args.size() + event.extra.size();
  }
  out.reserve(estimate);
  out += "{\"traceEvents\":[\n";
  for (const auto& [pid, info] : trace.processes) {
    if (!info.name.empty() || !info.sortIndex)
      appendMetadata(out, "process_name", pid, nullptr, "name", &info.name, nullptr);
    if (info.sortIndex)
      appendMetadata(out, "process_sort_index", pid, nullptr, "sort_index", nullptr, &*info.sortIndex);
  }
  for (const auto& [key, info] : trace.threads) {
    if (!info.name.empty() || !info.sortIndex) {
      appendMetadata(out, "thread_name", key.first, &key.second, "name", &info.name, nullptr);
    }
    if (info.sortIndex) {
      appendMetadata(out, "thread_sort_index", key.first, &key.second, "sort_index", nullptr, &*info.sortIndex);
    }
  }
  for (const TraceEvent& event : trace.events) appendEvent(out, event);
  if (out.ends_with(",\n")) out.erase(out.size() - 2, 1);
  out += "],\n\"displayTimeUnit\":";
  appendJsonString(out,
                   trace.displayTimeUnit.empty() ? std::string_view("ns") : std::string_view(trace.displayTimeUnit));
  for (const auto& [key, raw] : trace.otherKeys) {
    out += ",\n";
    appendJsonString(out, key);
    out += ':';
    out += raw;
  }
  out += "}\n";
  return out;
}

}  // namespace fusionscope::profiler
