#include "profiler/trace/chrome_json_import.h"

#include <simdjson.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/base/file_util.h"
#include "profiler/trace/json_text.h"

namespace fusionscope::profiler {
namespace {

namespace od = simdjson::ondemand;

bool isGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Inflates every gzip member (concatenated members are legal and some tools append them).
StatusOr<std::string> gunzip(std::string_view compressed, const std::string& name) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return Status::error(name + ": error: cannot initialise zlib");
  std::string out;
  out.reserve(compressed.size() * 6 + simdjson::SIMDJSON_PADDING);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  char buffer[1 << 16];
  int rc = Z_OK;
  while (true) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    rc = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
    if (rc == Z_STREAM_END) {
      if (stream.avail_in == 0) break;
      inflateReset(&stream);
      continue;
    }
    if (rc != Z_OK) break;
  }
  std::string message = stream.msg ? stream.msg : "truncated stream";
  inflateEnd(&stream);
  if (rc != Z_STREAM_END) return Status::error(name + ": error: bad gzip data: " + message);
  return out;
}

std::string_view trimRight(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// The value as it appears in the file, for fields kept verbatim.
simdjson::error_code rawValue(od::value value, std::string_view& out) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  if (type == od::json_type::object) {
    od::object object;
    if (auto error = value.get_object().get(object)) return error;
    if (auto error = object.raw_json().get(out)) return error;
    out = trimRight(out);  // raw_json runs up to the next token, so it carries the whitespace before it
    return simdjson::SUCCESS;
  }
  if (type == od::json_type::array) {
    od::array array;
    if (auto error = value.get_array().get(array)) return error;
    if (auto error = array.raw_json().get(out)) return error;
    out = trimRight(out);
    return simdjson::SUCCESS;
  }
  out = trimRight(value.raw_json_token());
  return simdjson::SUCCESS;
}

// A pid/tid: an integer, or any string. Anything else is malformed.
simdjson::error_code readTrack(od::value value, TrackId& out, bool& ok) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  if (type == od::json_type::string) {
    std::string_view text;
    if (auto error = value.get_string().get(text)) return error;
    out = TrackId::fromText(std::string(text));
    return simdjson::SUCCESS;
  }
  if (type == od::json_type::number) {
    int64_t number = 0;
    if (value.get_int64().get(number) == simdjson::SUCCESS) {
      out = TrackId::fromNumber(number);
      return simdjson::SUCCESS;
    }
  }
  ok = false;
  return simdjson::SUCCESS;
}

// A ts/dur: a number or a string holding one ("ts": "123.5" appears in hand-written and older traces).
simdjson::error_code readMicros(od::value value, int64_t& out, bool& ok) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  std::string_view text;
  if (type == od::json_type::string) {
    if (auto error = value.get_string().get(text)) return error;
  } else if (type == od::json_type::number) {
    text = trimRight(value.raw_json_token());
  } else {
    ok = false;
    return simdjson::SUCCESS;
  }
  std::optional<int64_t> ns = parseMicrosToNanos(text);
  if (!ns) {
    ok = false;
    return simdjson::SUCCESS;
  }
  out = *ns;
  return simdjson::SUCCESS;
}

class Importer {
 public:
  explicit Importer(Trace& trace) : m_trace(trace) {}

  // Returns a non-success code only for document-level errors; bad events are counted and skipped.
  simdjson::error_code readEvents(od::array events) {
    for (auto element : events) {
      od::value value;
      if (auto error = element.get(value)) return error;
      ++m_trace.stats.eventsRead;
      if (auto error = readEvent(value)) return error;
    }
    return simdjson::SUCCESS;
  }

 private:
  void skip(const char* reason) { ++m_trace.stats.skipped[reason]; }

  simdjson::error_code readEvent(od::value value) {
    od::json_type type;
    if (auto error = value.type().get(type)) return error;
    if (type != od::json_type::object) {
      skip("not an object");
      return simdjson::SUCCESS;
    }
    od::object object;
    if (auto error = value.get_object().get(object)) return error;

    TraceEvent event;
    bool havePhase = false;
    bool haveTs = false;
    const char* problem = nullptr;
    for (auto field : object) {
      std::string_view key;
      if (auto error = field.unescaped_key().get(key)) return error;
      od::value fieldValue = field.value();
      bool ok = true;
      if (key == "ph") {
        std::string_view phase;
        if (fieldValue.get_string().get(phase) != simdjson::SUCCESS || phase.size() != 1) {
          ok = false;
          if (!problem) problem = "bad ph";
        } else {
          event.phase = phase[0];
          havePhase = true;
        }
        continue;
      }
      if (key == "ts") {
        if (auto error = readMicros(fieldValue, event.tsNs, ok)) return error;
        haveTs = ok;
        if (!ok && !problem) problem = "bad ts";
        continue;
      }
      if (key == "dur") {
        if (auto error = readMicros(fieldValue, event.durNs, ok)) return error;
        if ((!ok || event.durNs < 0) && !problem) problem = "bad dur";
        continue;
      }
      if (key == "pid" || key == "tid") {
        if (auto error = readTrack(fieldValue, key == "pid" ? event.pid : event.tid, ok)) return error;
        if (!ok && !problem) problem = key == "pid" ? "bad pid" : "bad tid";
        continue;
      }
      if (key == "name" || key == "cat" || key == "bp") {
        std::string& target = key == "name" ? event.name : key == "cat" ? event.cat : event.bp;
        std::string_view text;
        if (auto error = fieldValue.type().get(type)) return error;
        if (type == od::json_type::string) {
          if (auto error = fieldValue.get_string().get(text)) return error;
          target.assign(text);
        } else if (auto error = rawValue(fieldValue, text)) {
          return error;
        } else {
          target.assign(text);  // a non-string name is rare; keep its text rather than drop the event
        }
        continue;
      }
      if (key == "id") {
        if (auto error = fieldValue.type().get(type)) return error;
        std::string_view text;
        if (type == od::json_type::string) {
          if (auto error = fieldValue.get_string().get(text)) return error;
        } else if (auto error = rawValue(fieldValue, text)) {
          return error;
        }
        event.id.assign(text);
        event.idIsNumber = type == od::json_type::number;
        continue;
      }
      std::string_view raw;
      if (auto error = rawValue(fieldValue, raw)) return error;
      if (key == "args") {
        event.args.assign(raw);
        continue;
      }
      if (!event.extra.empty()) event.extra += ',';
      appendJsonString(event.extra, key);
      event.extra += ':';
      event.extra.append(raw);
    }

    if (!havePhase && !problem) problem = "missing ph";
    // Metadata events carry no time (TF timelines omit ts on them); every other phase needs one.
    if (!problem && !haveTs && event.phase != 'M') problem = "missing ts";
    if (problem) {
      skip(problem);
      return simdjson::SUCCESS;
    }
    if (event.phase == 'X' && event.durNs == kNoDuration) event.durNs = 0;
    ++m_trace.stats.phaseCounts[event.phase];
    if (event.phase == 'M' && foldMetadata(event)) return simdjson::SUCCESS;
    m_trace.events.push_back(std::move(event));
    return simdjson::SUCCESS;
  }

  // Moves process/thread names and sort indices onto the records; returns false for other metadata, which stays
  // an event. The args are parsed a second time here because "name" may come after "args" in the object.
  bool foldMetadata(const TraceEvent& event) {
    bool process = event.name == "process_name" || event.name == "process_sort_index";
    bool thread = event.name == "thread_name" || event.name == "thread_sort_index";
    if (!process && !thread) return false;
    bool wantName = event.name.ends_with("_name");
    std::string name;
    std::optional<int64_t> sortIndex;
    simdjson::padded_string args(event.args);
    od::document doc;
    od::object object;
    if (m_argsParser.iterate(args).get(doc) == simdjson::SUCCESS && doc.get_object().get(object) == simdjson::SUCCESS) {
      for (auto field : object) {
        std::string_view key;
        if (field.unescaped_key().get(key) != simdjson::SUCCESS) break;
        if (wantName && key == "name") {
          std::string_view text;
          if (field.value().get_string().get(text) == simdjson::SUCCESS) name.assign(text);
        } else if (!wantName && key == "sort_index") {
          int64_t index = 0;
          if (field.value().get_int64().get(index) == simdjson::SUCCESS) sortIndex = index;
        }
      }
    }
    if (process) {
      ProcessInfo& info = m_trace.processes[event.pid];
      if (wantName) info.name = std::move(name);
      if (sortIndex) info.sortIndex = sortIndex;
    } else {
      ThreadInfo& info = m_trace.threads[{event.pid, event.tid}];
      if (wantName) info.name = std::move(name);
      if (sortIndex) info.sortIndex = sortIndex;
    }
    return true;
  }

  Trace& m_trace;
  od::parser m_argsParser;
};

size_t firstContentOffset(std::string_view text) {
  size_t offset = text.find_first_not_of(" \t\r\n");
  return offset == std::string_view::npos ? text.size() : offset;
}

Status jsonError(const std::string& name, od::document& doc, std::string_view text, simdjson::error_code error) {
  size_t offset = firstContentOffset(text);
  const char* location = nullptr;
  if (error == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
    // simdjson rejects an unbalanced root before it moves, so its location is still the start; the last byte is
    // where the document ends early (truncated file) or where unexpected content follows the root value.
    size_t last = text.find_last_not_of(" \t\r\n");
    if (last != std::string_view::npos) offset = last;
  } else if (doc.current_location().get(location) == simdjson::SUCCESS && location >= text.data() &&
             location <= text.data() + text.size()) {
    offset = static_cast<size_t>(location - text.data());
  }
  return Status::error(name + ": error: not a valid Chrome trace: " + simdjson::error_message(error) +
                       " (at byte offset " + std::to_string(offset) + ")");
}

StatusOr<Trace> parseTrace(simdjson::padded_string_view json, std::string name) {
  Trace trace;
  trace.name = name;
  std::string_view text(json.data(), json.size());
  od::parser parser;
  od::document doc;
  if (auto error = parser.iterate(json).get(doc)) {
    return Status::error(name + ": error: not valid JSON: " + simdjson::error_message(error) + " (at byte offset " +
                         std::to_string(firstContentOffset(text)) + ")");
  }
  Importer importer(trace);
  od::json_type type;
  if (auto error = doc.type().get(type)) return jsonError(name, doc, text, error);
  if (type == od::json_type::array) {
    od::array events;
    if (auto error = doc.get_array().get(events)) return jsonError(name, doc, text, error);
    if (auto error = importer.readEvents(events)) return jsonError(name, doc, text, error);
  } else if (type == od::json_type::object) {
    od::object top;
    if (auto error = doc.get_object().get(top)) return jsonError(name, doc, text, error);
    bool sawEvents = false;
    for (auto field : top) {
      std::string_view key;
      if (auto error = field.unescaped_key().get(key)) return jsonError(name, doc, text, error);
      od::value value = field.value();
      if (key == "traceEvents") {
        od::array events;
        if (auto error = value.get_array().get(events)) return jsonError(name, doc, text, error);
        if (auto error = importer.readEvents(events)) return jsonError(name, doc, text, error);
        sawEvents = true;
        continue;
      }
      if (key == "displayTimeUnit") {
        std::string_view unit;
        if (value.get_string().get(unit) == simdjson::SUCCESS) {
          trace.displayTimeUnit.assign(unit);
          continue;
        }
      }
      std::string_view raw;
      if (auto error = rawValue(value, raw)) return jsonError(name, doc, text, error);
      trace.otherKeys.emplace_back(std::string(key), std::string(raw));
    }
    if (!sawEvents) return Status::error(name + ": error: not a Chrome trace: object has no \"traceEvents\" array");
  } else {
    return Status::error(name + ": error: not a Chrome trace: expected an array or an object (at byte offset " +
                         std::to_string(firstContentOffset(text)) + ")");
  }
  // Past the root value the iterator has no location left; having one means content follows the trace.
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
    return jsonError(name, doc, text, simdjson::TRAILING_CONTENT);
  }
  matchBeginEnd(trace);
  return trace;
}

// Gives `bytes` the zeroed tail simdjson reads past the end with SIMD loads, without copying the file again.
simdjson::padded_string_view padInPlace(std::string& bytes) {
  size_t size = bytes.size();
  bytes.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  bytes.resize(size);
  return simdjson::padded_string_view(bytes.data(), size, bytes.capacity());
}

}  // namespace

StatusOr<Trace> importChromeTrace(const std::string& path) {
  StatusOr<std::string> bytes = readFile(path, simdjson::SIMDJSON_PADDING);
  if (!bytes.ok()) return bytes.status();
  if (isGzip(*bytes)) {
    StatusOr<std::string> inflated = gunzip(*bytes, path);
    if (!inflated.ok()) return inflated.status();
    *bytes = std::move(*inflated);
  }
  return parseTrace(padInPlace(*bytes), path);
}

StatusOr<Trace> importChromeTraceText(std::string_view text, std::string_view name) {
  std::string bytes;
  bytes.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  bytes.assign(text);
  return parseTrace(padInPlace(bytes), std::string(name));
}

}  // namespace fusionscope::profiler
