#include "profiler/trace/chrome_json_events.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "core/base/file_util.h"
#include "core/base/gzip.h"
#include "core/base/message_text.h"
#include "profiler/trace/json_text.h"

namespace fusionscope::profiler::import_internal {
namespace {

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

// A string value as a view that outlives the parse: straight into the file when the string has no escapes (the
// common case, no copy), else unescaped by simdjson and copied into the trace's store.
simdjson::error_code readText(od::value value, std::string_view token, TextStore& store, std::string_view& out) {
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"' && token.find('\\') == std::string_view::npos) {
    out = token.substr(1, token.size() - 2);
    return simdjson::SUCCESS;
  }
  std::string_view text;
  if (auto error = value.get_string().get(text)) return error;
  out = store.copy(text);
  return simdjson::SUCCESS;
}

// A pid/tid: an integer, or any string. Anything else is malformed.
simdjson::error_code readTrack(od::value value, TextStore& store, TrackId& out, bool& ok) {
  std::string_view token = trimRight(value.raw_json_token());
  if (!token.empty() && token.front() == '"') {
    std::string_view text;
    if (auto error = readText(value, token, store, text)) return error;
    out = TrackId::fromText(text);
    return simdjson::SUCCESS;
  }
  int64_t number = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), number);
  if (ec != std::errc() || end != token.data() + token.size()) {
    ok = false;
    return simdjson::SUCCESS;
  }
  out = TrackId::fromNumber(number);
  return simdjson::SUCCESS;
}

// A ts/dur: a number or a string holding one ("ts": "123.5" appears in hand-written and older traces). Numbers are
// read from their text (parseMicrosToNanos rejects anything else), so no type() call is needed on the fast path.
simdjson::error_code readMicros(od::value value, int64_t& out, bool& ok) {
  std::string_view text = trimRight(value.raw_json_token());
  if (!text.empty() && text.front() == '"') {
    if (auto error = value.get_string().get(text)) return error;
  }
  std::optional<int64_t> ns = parseMicrosToNanos(text);
  if (!ns) {
    ok = false;
    return simdjson::SUCCESS;
  }
  out = *ns;
  return simdjson::SUCCESS;
}

// The key of a field without copying it: the raw text up to the closing quote, unless it has escapes.
simdjson::error_code readKey(od::field& field, std::string_view& key) {
  const char* raw = field.key().raw();
  const char* end = raw;
  while (*end != '"' && *end != '\\') ++end;
  if (*end == '"') {
    key = std::string_view(raw, static_cast<size_t>(end - raw));
    return simdjson::SUCCESS;
  }
  return field.unescaped_key().get(key);
}

}  // namespace

Importer::Checkpoint Importer::checkpoint() const {
  return Checkpoint{
      m_trace.events.size(), m_trace.stats.eventsRead, m_trace.stats.emptyObjects, m_trace.stats.skipped, m_phaseCounts,
      m_trace.processes,     m_trace.threads};
}

void Importer::restore(Checkpoint checkpoint) {
  m_trace.events.resize(checkpoint.events);
  m_trace.stats.eventsRead = checkpoint.eventsRead;
  m_trace.stats.emptyObjects = checkpoint.emptyObjects;
  m_trace.stats.skipped = std::move(checkpoint.skipped);
  m_phaseCounts = checkpoint.phaseCounts;
  m_trace.processes = std::move(checkpoint.processes);
  m_trace.threads = std::move(checkpoint.threads);
}

simdjson::error_code Importer::readEvents(od::array events) {
  for (auto element : events) {
    od::value value;
    if (auto error = element.get(value)) return error;
    ++m_trace.stats.eventsRead;
    if (auto error = readEvent(value)) return error;
  }
  return simdjson::SUCCESS;
}

simdjson::error_code Importer::readEvent(od::value value) {
  od::object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) {
    od::json_type type;
    if (auto error = value.type().get(type)) return error;
    if (type == od::json_type::object) return simdjson::TAPE_ERROR;
    skip("not an object");
    return simdjson::SUCCESS;
  }

  TraceEvent event;
  bool anyField = false;
  bool havePhase = false;
  bool haveTs = false;
  const char* problem = nullptr;
  m_extra.clear();
  TextStore& store = m_trace.text;
  for (auto result : object) {
    od::field field;
    if (auto error = std::move(result).get(field)) return error;
    anyField = true;
    std::string_view key;
    if (auto error = readKey(field, key)) return error;
    od::value fieldValue = field.value();
    bool ok = true;
    if (key == "ph") {
      std::string_view token = trimRight(fieldValue.raw_json_token());
      std::string_view phase;
      if (token.size() == 3 && token[0] == '"' && token[2] == '"') {
        phase = token.substr(1, 1);
      } else if (fieldValue.get_string().get(phase) != simdjson::SUCCESS) {
        phase = {};
      }
      if (phase.size() != 1) {
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
      TrackId& track = key == "pid" ? event.pid : event.tid;
      if (auto error = readTrack(fieldValue, store, track, ok)) return error;
      if (!ok && !problem) problem = key == "pid" ? "bad pid" : "bad tid";
      if (m_transient && track.isText) track.text = m_interner.intern(track.text);
      continue;
    }
    if (key == "name" || key == "cat" || key == "bp" || key == "id") {
      std::string_view& target = key == "name"  ? event.name
                                 : key == "cat" ? event.cat
                                 : key == "bp"  ? event.bp
                                                : event.id;
      std::string_view token = trimRight(fieldValue.raw_json_token());
      if (!token.empty() && token.front() == '"') {
        if (auto error = readText(fieldValue, token, store, target)) return error;
      } else {
        // A non-string name is rare; keep its text rather than drop the event. A numeric id stays a number.
        if (auto error = rawValue(fieldValue, target)) return error;
        if (key == "id")
          event.idIsNumber = !target.empty() && (target[0] == '-' || (target[0] >= '0' && target[0] <= '9'));
      }
      if (m_transient) target = key == "id" ? store.copy(target) : m_interner.intern(target);
      continue;
    }
    std::string_view raw;
    if (auto error = rawValue(fieldValue, raw)) return error;
    if (key == "args") {
      event.args = m_transient ? store.copy(raw) : raw;
      continue;
    }
    if (!m_extra.empty()) m_extra += ',';
    appendJsonString(m_extra, key);
    m_extra += ':';
    m_extra.append(raw);
  }
  if (!m_extra.empty()) event.extra = store.copy(m_extra);

  // XLA's profiler ends traceEvents with `{}`: padding, not a broken event.
  if (!anyField) {
    ++m_trace.stats.emptyObjects;
    return simdjson::SUCCESS;
  }
  if (!havePhase && !problem) problem = "missing ph";
  // Metadata events carry no time (TF timelines omit ts on them); every other phase needs one.
  if (!problem && !haveTs && event.phase != 'M') problem = "missing ts";
  if (problem) {
    skip(problem);
    return simdjson::SUCCESS;
  }
  if (event.phase == 'X' && event.durNs == kNoDuration) event.durNs = 0;
  ++m_phaseCounts[static_cast<unsigned char>(event.phase)];
  if (event.phase == 'M' && foldMetadata(event)) return simdjson::SUCCESS;
  m_trace.events.push_back(event);
  return simdjson::SUCCESS;
}

void Importer::finish() {
  for (size_t i = 0; i < m_phaseCounts.size(); ++i) {
    if (m_phaseCounts[i] != 0) m_trace.stats.phaseCounts[static_cast<char>(i)] += m_phaseCounts[i];
  }
}

bool Importer::foldMetadata(const TraceEvent& event) {
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

// How many events to reserve for: the density of "ph" keys in the first MiB, scaled to the whole text. A tight
// estimate matters: growing a vector of 1M events by doubling touches ~2x the memory and moves every event.
size_t estimateEventCount(std::string_view text) {
  constexpr size_t kSample = size_t{1} << 20;
  std::string_view sample = text.substr(0, kSample);
  size_t count = 0;
  for (size_t at = sample.find("\"ph\""); at != std::string_view::npos; at = sample.find("\"ph\"", at + 4)) ++count;
  if (sample.size() == text.size()) return count;
  return static_cast<size_t>(static_cast<double>(count) * (static_cast<double>(text.size()) / sample.size()) * 1.02) +
         16;
}

size_t firstContentOffset(std::string_view text) {
  size_t offset = text.find_first_not_of(" \t\r\n");
  return offset == std::string_view::npos ? text.size() : offset;
}

// `NAME:LINE:COL: error: WHAT (at byte offset N)`: the line and column where an editor goes, the offset for tools.
Status errorAt(const std::string& name, std::string_view text, size_t offset, std::string_view what) {
  offset = std::min(offset, text.size());
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
  const size_t lineStart = offset == 0 ? 0 : text.rfind('\n', offset - 1);
  const size_t column = lineStart == std::string_view::npos || offset == 0 ? offset + 1 : offset - lineStart;
  return Status::error(name + ":" + std::to_string(line) + ":" + std::to_string(column) +
                       ": error: " + withLongWordsShortened(what) + " (at byte offset " + std::to_string(offset) + ")");
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
  return errorAt(name, text, offset, std::string("not a valid Chrome trace: ") + simdjson::error_message(error));
}

// Reads one whole document (array or object form) into `trace` through `importer`; `text` must have
// SIMDJSON_PADDING readable bytes past its end. Errors name `name` and a byte offset into `text`.
Status readDocument(Trace& trace, Importer& importer, od::parser& parser, std::string_view text, size_t capacity,
                    const std::string& name) {
  simdjson::padded_string_view json(text.data(), text.size(), capacity);
  od::document doc;
  if (auto error = parser.iterate(json).get(doc)) {
    if (error == simdjson::MEMALLOC) {
      // A sound file this process had no memory for: the work failed (exit 1), not the input; no position.
      return Status::failedWork(name + ": error: out of memory while parsing it (" + std::to_string(text.size()) +
                                " bytes of JSON)");
    }
    // simdjson finds bad UTF-8 before it parses anything, so its position is the start: find the byte.
    size_t offset = firstContentOffset(text);
    if (error == simdjson::UTF8_ERROR) offset = std::min(firstInvalidUtf8(text), text.size());
    return errorAt(name, text, offset, std::string("not valid JSON: ") + simdjson::error_message(error));
  }
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
    return errorAt(name, text, firstContentOffset(text), "not a Chrome trace: expected an array or an object");
  }
  // Past the root value the iterator has no location left; having one means content follows the trace.
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
    return jsonError(name, doc, text, simdjson::TRAILING_CONTENT);
  }
  return okStatus();
}

}  // namespace fusionscope::profiler::import_internal
