#include "profiler/trace/chrome_json_import.h"

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

namespace fusionscope::profiler {
namespace {

namespace od = simdjson::ondemand;

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

// Interns short, repeated texts (names, categories, string pids/tids) into the trace's store while a streaming import
// reads through a reused window buffer: a Kineto trace has a few thousand distinct names over a million events.
// Open addressing with a cheap word-at-a-time hash; past kMaxEntries distinct texts it only copies, so a trace whose
// names are all different costs no more than copying them.
class Interner {
 public:
  explicit Interner(TextStore& store) : m_store(store) {}

  std::string_view intern(std::string_view text) {
    if (text.empty()) return {};
    if (m_slots.empty()) m_slots.resize(kInitialSlots);
    uint64_t hash = hashText(text);
    size_t mask = m_slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = m_slots[i];
      if (slot.text.data() == nullptr) {
        std::string_view copy = m_store.copy(text);
        if (m_used >= kMaxEntries) return copy;
        slot = Slot{hash, copy};
        if (++m_used * 2 > m_slots.size()) grow();
        return copy;
      }
      if (slot.hash == hash && slot.text == text) return slot.text;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    std::string_view text;
  };
  static constexpr size_t kInitialSlots = 1024;
  static constexpr size_t kMaxEntries = size_t{1} << 16;

  static uint64_t hashText(std::string_view text) {
    uint64_t hash = 0x9e3779b97f4a7c15ull ^ text.size();
    size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, text.data() + i, 8);
      hash = (hash ^ word) * 0xff51afd7ed558ccdull;
      hash ^= hash >> 32;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, text.data() + i, text.size() - i);
    hash = (hash ^ tail) * 0xc4ceb9fe1a85ec53ull;
    return hash ^ (hash >> 29);
  }

  void grow() {
    std::vector<Slot> old(m_slots.size() * 2);
    old.swap(m_slots);
    size_t mask = m_slots.size() - 1;
    for (const Slot& slot : old) {
      if (slot.text.data() == nullptr) continue;
      size_t i = slot.hash & mask;
      while (m_slots[i].text.data() != nullptr) i = (i + 1) & mask;
      m_slots[i] = slot;
    }
  }

  TextStore& m_store;
  std::vector<Slot> m_slots;
  size_t m_used = 0;
};

class Importer {
 public:
  explicit Importer(Trace& trace) : m_trace(trace), m_interner(trace.text) {}

  // In transient mode the text being parsed is a window that is reused after the call, so every view an event
  // keeps is copied into the trace's store (names and other repeated short texts interned).
  void setTransient(bool transient) { m_transient = transient; }

  // Everything readEvents changes, so that a window that turns out not to parse can be undone. Text already
  // copied into the store stays (unreferenced); the interner's entries stay valid.
  struct Checkpoint {
    size_t events = 0;
    int64_t eventsRead = 0;
    int64_t emptyObjects = 0;
    std::map<std::string, int64_t> skipped;
    std::array<int64_t, 256> phaseCounts{};
    std::map<TrackId, ProcessInfo> processes;
    std::map<std::pair<TrackId, TrackId>, ThreadInfo> threads;
  };
  Checkpoint checkpoint() const {
    return Checkpoint{m_trace.events.size(),
                      m_trace.stats.eventsRead,
                      m_trace.stats.emptyObjects,
                      m_trace.stats.skipped,
                      m_phaseCounts,
                      m_trace.processes,
                      m_trace.threads};
  }
  void restore(Checkpoint checkpoint) {
    m_trace.events.resize(checkpoint.events);
    m_trace.stats.eventsRead = checkpoint.eventsRead;
    m_trace.stats.emptyObjects = checkpoint.emptyObjects;
    m_trace.stats.skipped = std::move(checkpoint.skipped);
    m_phaseCounts = checkpoint.phaseCounts;
    m_trace.processes = std::move(checkpoint.processes);
    m_trace.threads = std::move(checkpoint.threads);
  }

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

 public:
  // Moves the per-phase tallies (an array on the hot path) into the trace's stats.
  void finish() {
    for (size_t i = 0; i < m_phaseCounts.size(); ++i) {
      if (m_phaseCounts[i] != 0) m_trace.stats.phaseCounts[static_cast<char>(i)] += m_phaseCounts[i];
    }
  }

 private:
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
  Interner m_interner;
  bool m_transient = false;
  od::parser m_argsParser;
  std::string m_extra;
  std::array<int64_t, 256> m_phaseCounts{};
};

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
  return Status::error(name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: " +
                       withLongWordsShortened(what) + " (at byte offset " + std::to_string(offset) + ")");
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
    return errorAt(name, text, firstContentOffset(text), std::string("not valid JSON: ") + simdjson::error_message(error));
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

// Parses the text in `buffer` (which must have SIMDJSON_PADDING bytes of capacity past its size); the trace adopts
// the buffer, so event fields can point into it.
StatusOr<Trace> parseTrace(std::string buffer, std::string name) {
  Trace trace;
  trace.name = name;
  size_t size = buffer.size();
  size_t capacity = buffer.capacity();
  std::string_view text = trace.text.adopt(std::move(buffer));
  trace.events.reserve(estimateEventCount(text));
  od::parser parser;
  Importer importer(trace);
  if (Status status = readDocument(trace, importer, parser, text.substr(0, size), capacity, name); !status.ok()) {
    return status;
  }
  importer.finish();
  matchBeginEnd(trace);
  return trace;
}

// The streaming import of a large plain file: the traceEvents array is parsed in windows of about
// options.windowBytes cut between two events, through one reused buffer and one reused parser, so neither the whole
// file nor simdjson's structural index over it (4 bytes per structural character, ~0.9x a Kineto file) is ever in
// memory; event text is copied (names interned) into the trace's store instead of pointing into the file.
//
// A cut is a '}' followed by ',' and '{' (whitespace allowed). It can only be wrong inside a string or inside an
// array of objects in some args; both make that window invalid JSON (an unclosed string, or an unclosed object
// before the ']' added at the cut), and then the caller falls back to the whole-document parse, which is also what
// reports errors (with byte offsets into the real file) for a file that is not valid JSON.
class StreamingImport {
 public:
  StreamingImport(int fd, size_t fileSize, std::string name, const ImportOptions& options)
      : m_fd(fd), m_fileSize(fileSize), m_name(std::move(name)), m_window(std::max<size_t>(options.windowBytes, 64)) {}

  // nullopt: use the whole-document parse instead (structure not recognised, a bad cut, or an error).
  std::optional<Trace> run() {
    Trace trace;
    trace.name = m_name;
    Importer importer(trace);
    importer.setTransient(true);
    if (!fill(m_window + kSlack)) return std::nullopt;
    size_t first = m_begin;
    while (first < m_end && isSpace(m_data[first])) ++first;
    if (first == m_end) return std::nullopt;
    if (m_data[first] == '[') {
      m_begin = first + 1;
    } else if (m_data[first] == '{') {
      m_objectForm = true;
      if (!readHead(trace, importer, first)) return std::nullopt;
    } else {
      return std::nullopt;
    }
    trace.events.reserve(estimateEvents());

    while (true) {
      if (!fill(m_window + kSlack)) return std::nullopt;
      // A window that does not parse had its cut in a string or in an args array of objects (Chrome traces are full
      // of stackTrace arrays): undo what it added and find the cut again by an exact scan from the window's start,
      // which tracks strings and nesting (slower than the search, so only then). If that window does not parse
      // either, the file itself is broken and the whole-document parse reports it.
      bool final = false;
      for (int attempt = 0; attempt < 2; ++attempt) {
        bool ioError = false;
        std::optional<std::pair<size_t, size_t>> cut = attempt == 0 ? nextCut(m_window, ioError) : exactCut(ioError);
        if (ioError) return std::nullopt;
        if (!cut) {
          final = true;
          break;
        }
        Importer::Checkpoint checkpoint = importer.checkpoint();
        if (readWindow(importer, cut->first)) {
          m_begin = cut->second;
          ++trace.stats.windows;
          break;
        }
        importer.restore(std::move(checkpoint));
        if (attempt == 1) return std::nullopt;
        ++trace.stats.windowRetries;
      }
      if (final) break;
    }
    if (!readFinal(trace, importer)) return std::nullopt;
    ++trace.stats.windows;
    importer.finish();
    matchBeginEnd(trace);
    return trace;
  }

 private:
  static constexpr size_t kHeadroom = 64;            // room before m_begin for '[' or the synthetic object head
  static constexpr size_t kSlack = size_t{1} << 20;  // bytes loaded past the window to find a cut in
  static constexpr int kMaxRetries = 8;              // bad cuts tried per window before the whole-document parse
  static constexpr char kFinalPrefix[] = "{\"traceEvents\":[";

  struct Cut {
    enum Status { kFound, kNeedMore, kNone } status = kNone;
    size_t end = 0;     // one past the '}' that ends the window
    size_t next = 0;    // the '{' that starts the next window
    size_t resume = 0;  // kNeedMore: where to search again
  };

  static bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  // The first cut at or after m_begin + offset, loading more of the file as needed; nullopt when there is none
  // before the end of the file (the rest is the final document). `ioError` is set when reading fails.
  std::optional<std::pair<size_t, size_t>> nextCut(size_t offset, bool& ioError) {
    while (true) {
      if (m_begin + offset >= m_end) {
        if (m_eof) return std::nullopt;
        // No cut in what is loaded (one event larger than the slack, or a retry far ahead): load more.
        if (!fill(std::max((m_end - m_begin) * 2, offset + kSlack))) {
          ioError = true;
          return std::nullopt;
        }
        continue;
      }
      Cut found = findCut(m_begin + offset);
      if (found.status == Cut::kFound) return std::make_pair(found.end, found.next);
      if (found.status == Cut::kNone || m_eof) return std::nullopt;
      // kNeedMore: search again from where it stopped once more bytes are loaded.
      offset = found.resume - m_begin;
      if (!fill(m_end - m_begin + m_window)) {
        ioError = true;
        return std::nullopt;
      }
    }
  }

  // The first event boundary at least m_window bytes past m_begin, by scanning every byte from m_begin (which
  // starts an event, outside any string, at depth 0): a '}' closing depth 0, then ',' and '{'. nullopt when the
  // events array ends first (the rest is the final document).
  std::optional<std::pair<size_t, size_t>> exactCut(bool& ioError) {
    enum class After { kNothing, kObject, kComma } after = After::kNothing;
    size_t end = 0;
    int64_t depth = 0;
    bool inString = false;
    for (size_t i = m_begin;; ++i) {
      if (i >= m_end) {
        if (m_eof) return std::nullopt;
        size_t at = i - m_begin;
        size_t endAt = end - std::min(end, m_begin);
        if (!fill(m_end - m_begin + m_window)) {
          ioError = true;
          return std::nullopt;
        }
        i = m_begin + at;
        end = m_begin + endAt;
        if (i >= m_end) return std::nullopt;
      }
      char c = m_data[i];
      if (inString) {
        if (c == '\\') {
          ++i;  // the escaped character, even a quote
        } else if (c == '"') {
          inString = false;
        }
        continue;
      }
      if (isSpace(c)) continue;
      if (after == After::kObject) {
        after = c == ',' ? After::kComma : After::kNothing;
        if (c == ',') continue;
      } else if (after == After::kComma) {
        if (c == '{') return std::make_pair(end, i);
        after = After::kNothing;
      }
      switch (c) {
        case '"': inString = true; break;
        case '{':
        case '[': ++depth; break;
        case '}':
        case ']':
          if (--depth < 0) return std::nullopt;  // the events array ends here
          if (depth == 0 && c == '}' && i + 1 - m_begin >= m_window) {
            after = After::kObject;
            end = i + 1;
          }
          break;
        default: break;
      }
    }
  }

  Cut findCut(size_t from) const {
    Cut cut;
    cut.status = m_eof ? Cut::kNone : Cut::kNeedMore;
    cut.resume = m_end;
    while (from < m_end) {
      const void* brace = std::memchr(m_data.get() + from, '}', m_end - from);
      if (brace == nullptr) return cut;
      size_t close = static_cast<size_t>(static_cast<const char*>(brace) - m_data.get());
      size_t at = close + 1;
      while (at < m_end && isSpace(m_data[at])) ++at;
      bool comma = at < m_end && m_data[at] == ',';
      if (comma) {
        ++at;
        while (at < m_end && isSpace(m_data[at])) ++at;
      }
      if (at >= m_end) {
        cut.resume = close;
        return cut;
      }
      if (comma && m_data[at] == '{') {
        cut.status = Cut::kFound;
        cut.end = close + 1;
        cut.next = at;
        return cut;
      }
      from = close + 1;
    }
    return cut;
  }

  // Makes at least `want` bytes past m_begin resident (fewer only at the end of the file), moving the unread bytes
  // to the front of the buffer and growing it when needed. False on a read error.
  bool fill(size_t want) {
    size_t padding = simdjson::SIMDJSON_PADDING + 1;
    if (!m_data || kHeadroom + want + padding > m_capacity) {
      size_t capacity = std::max(kHeadroom + want + padding, m_capacity * 2);
      std::unique_ptr<char[]> data(new char[capacity]);
      if (m_data) std::memcpy(data.get() + kHeadroom, m_data.get() + m_begin, m_end - m_begin);
      m_end = kHeadroom + (m_end - m_begin);
      m_begin = kHeadroom;
      m_data = std::move(data);
      m_capacity = capacity;
    } else if (m_begin + want + padding > m_capacity) {
      std::memmove(m_data.get() + kHeadroom, m_data.get() + m_begin, m_end - m_begin);
      m_end = kHeadroom + (m_end - m_begin);
      m_begin = kHeadroom;
    }
    while (!m_eof && m_end - m_begin < want) {
      ssize_t n = ::read(m_fd, m_data.get() + m_end, m_capacity - padding - m_end);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (n == 0) m_eof = true;
      m_end += static_cast<size_t>(n);
    }
    return true;
  }

  // The object form: everything up to the '[' of a top-level "traceEvents" is parsed as the document
  // `HEAD[]}` (which fails unless the key really is top-level), keeping the keys before the events.
  bool readHead(Trace& trace, Importer& importer, size_t first) {
    static constexpr std::string_view kKey = "\"traceEvents\"";
    std::string_view loaded(m_data.get() + first, m_end - first);
    size_t key = loaded.find(kKey);
    if (key == std::string_view::npos) return false;
    size_t at = key + kKey.size();
    while (at < loaded.size() && isSpace(loaded[at])) ++at;
    if (at >= loaded.size() || loaded[at] != ':') return false;
    ++at;
    while (at < loaded.size() && isSpace(loaded[at])) ++at;
    if (at >= loaded.size() || loaded[at] != '[') return false;
    std::string head(loaded.substr(0, at + 1));
    head += "]}";
    size_t size = head.size();
    head.resize(size + simdjson::SIMDJSON_PADDING, '\0');
    if (!readDocument(trace, importer, m_parser, std::string_view(head.data(), size), head.size(), m_name).ok()) {
      return false;
    }
    m_begin = first + at + 1;
    return true;
  }

  size_t estimateEvents() const {
    std::string_view sample(m_data.get() + m_begin, std::min(m_end - m_begin, m_window));
    if (sample.empty()) return 0;
    size_t count = estimateEventCount(sample);
    return static_cast<size_t>(static_cast<double>(count) * (static_cast<double>(m_fileSize) / sample.size()) * 1.02) +
           16;
  }

  // Parses the events in [m_begin, end) as the array `[...]`, restoring the bytes it borrows around them.
  bool readWindow(Importer& importer, size_t end) {
    size_t padding = simdjson::SIMDJSON_PADDING + 1;
    char savedOpen = m_data[m_begin - 1];
    char savedTail[simdjson::SIMDJSON_PADDING + 1];
    std::memcpy(savedTail, m_data.get() + end, padding);
    m_data[m_begin - 1] = '[';
    m_data[end] = ']';
    std::memset(m_data.get() + end + 1, 0, padding - 1);
    std::string_view text(m_data.get() + m_begin - 1, end + 1 - (m_begin - 1));
    bool ok = readArray(importer, text, text.size() + padding - 1);
    m_data[m_begin - 1] = savedOpen;
    std::memcpy(m_data.get() + end, savedTail, padding);
    return ok;
  }

  bool readArray(Importer& importer, std::string_view text, size_t capacity) {
    simdjson::padded_string_view json(text.data(), text.size(), capacity);
    od::document doc;
    od::array events;
    if (m_parser.iterate(json).get(doc) != simdjson::SUCCESS || doc.get_array().get(events) != simdjson::SUCCESS ||
        importer.readEvents(events) != simdjson::SUCCESS) {
      return false;
    }
    const char* trailing = nullptr;
    return doc.current_location().get(trailing) != simdjson::SUCCESS;
  }

  // The rest of the file, from the last cut to the end, as a document of its own: `[` + rest in the array form,
  // `{"traceEvents":[` + rest in the object form, so the keys after the events are read as usual.
  bool readFinal(Trace& trace, Importer& importer) {
    std::string_view prefix = m_objectForm ? std::string_view(kFinalPrefix) : std::string_view("[");
    size_t start = m_begin - prefix.size();
    std::memcpy(m_data.get() + start, prefix.data(), prefix.size());
    std::memset(m_data.get() + m_end, 0, simdjson::SIMDJSON_PADDING);
    std::string_view text(m_data.get() + start, m_end - start);
    if (!m_objectForm) return readArray(importer, text, text.size() + simdjson::SIMDJSON_PADDING);
    return readDocument(trace, importer, m_parser, text, text.size() + simdjson::SIMDJSON_PADDING, m_name).ok();
  }

  int m_fd;
  size_t m_fileSize;
  std::string m_name;
  size_t m_window;
  std::unique_ptr<char[]> m_data;
  size_t m_capacity = 0;
  size_t m_begin = kHeadroom;
  size_t m_end = kHeadroom;
  bool m_eof = false;
  bool m_objectForm = false;
  od::parser m_parser;
};

// Gives `bytes` the zeroed tail simdjson reads past the end with SIMD loads, without copying the file again.
std::string padInPlace(std::string bytes) {
  size_t size = bytes.size();
  bytes.resize(size + simdjson::SIMDJSON_PADDING, '\0');
  bytes.resize(size);
  return bytes;
}

}  // namespace

StatusOr<Trace> importChromeTrace(const std::string& path) {
  return importChromeTrace(path, ImportOptions{});
}

StatusOr<Trace> importChromeTrace(const std::string& path, const ImportOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    struct stat info {};
    unsigned char magic[2] = {0, 0};
    bool stream = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
                  static_cast<size_t>(info.st_size) >= options.streamThreshold && ::pread(fd, magic, 2, 0) == 2 &&
                  !(magic[0] == 0x1f && magic[1] == 0x8b);
    std::optional<Trace> streamed;
    if (stream) streamed = StreamingImport(fd, static_cast<size_t>(info.st_size), path, options).run();
    ::close(fd);
    if (streamed) return std::move(*streamed);
  }
  StatusOr<std::string> bytes = readFile(path, simdjson::SIMDJSON_PADDING);
  if (!bytes.ok()) return bytes.status();
  if (isGzip(*bytes)) {
    // A look at the start first: what is not JSON (a bomb of zeros, another format) fails at once, not after
    // inflating gigabytes.
    StatusOr<std::string> start = gunzipPrefix(*bytes, path, 4096);
    if (!start.ok()) return start.status();
    if (const size_t first = start->find_first_not_of(" \t\r\n"); first != std::string::npos &&
                                                                  (*start)[first] != '{' && (*start)[first] != '[') {
      return errorAt(path, *start, first, "not a Chrome trace: the decompressed data does not start with '{' or '['");
    }
    StatusOr<std::string> inflated =
        gunzip(*bytes, path, defaultInflateLimit(bytes->size()), simdjson::SIMDJSON_PADDING);
    if (!inflated.ok()) return inflated.status();
    *bytes = std::move(*inflated);
  }
  return parseTrace(padInPlace(std::move(*bytes)), path);
}

StatusOr<Trace> importChromeTraceText(std::string_view text, std::string_view name) {
  std::string bytes;
  bytes.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  bytes.assign(text);
  return parseTrace(padInPlace(std::move(bytes)), std::string(name));
}

}  // namespace fusionscope::profiler
