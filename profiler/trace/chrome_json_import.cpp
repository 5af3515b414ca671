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
#include "profiler/trace/chrome_json_events.h"
#include "profiler/trace/json_text.h"

namespace fusionscope::profiler {
namespace {

using namespace import_internal;

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
  FS_RETURN_IF_ERROR(readDocument(trace, importer, parser, text.substr(0, size), capacity, name));
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
  StatusOr<int> opened = openRegularFile(path);  // a FIFO or device is refused here, before any read
  if (!opened.ok()) return opened.status();
  {
    const int fd = *opened;
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
    if (const size_t first = start->find_first_not_of(" \t\r\n");
        first != std::string::npos && (*start)[first] != '{' && (*start)[first] != '[') {
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
