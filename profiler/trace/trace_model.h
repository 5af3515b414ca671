#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fusionscope::profiler {

// Marks an event that has no duration (everything except complete slices).
inline constexpr int64_t kNoDuration = -1;

// Stable storage for the text events point at. Copied text goes into large blocks that never move, and adopted
// buffers (the imported file itself) are kept whole, so a std::string_view into either stays valid for the store's
// lifetime, including across moves of the store. This is what lets an import of a 1M-event trace make no heap
// allocation per event: names, args and unknown fields are views into the file buffer (or into a block when they
// had to be unescaped or merged).
class TextStore {
 public:
  TextStore() = default;
  TextStore(TextStore&&) noexcept = default;
  TextStore& operator=(TextStore&&) noexcept = default;
  TextStore(const TextStore&) = delete;
  TextStore& operator=(const TextStore&) = delete;

  // Copies `text` into the store and returns the copy. An empty text gives an empty view (no storage).
  std::string_view copy(std::string_view text);
  // Keeps `buffer` alive as long as the store; returns a view of its bytes.
  std::string_view adopt(std::string buffer);
  // Whether `text` lies inside storage this store owns (empty views count as owned: they need none).
  bool owns(std::string_view text) const;
  // Bytes held (blocks plus adopted buffers), for memory reports.
  size_t bytesHeld() const;

 private:
  struct Block {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  std::vector<Block> m_blocks;
  std::vector<std::unique_ptr<std::string>> m_adopted;
  size_t m_used = 0;  // bytes used in m_blocks.back()
};

// A pid or tid as the trace wrote it. Kineto uses numbers for devices and streams but strings for synthetic tracks
// ("Spans", "Traces"), so both forms are kept and written back unchanged. `text` points into the owning Trace's
// store (or at a string literal).
struct TrackId {
  int64_t number = 0;
  std::string_view text;
  bool isText = false;

  static TrackId fromNumber(int64_t value) { return TrackId{value, {}, false}; }
  static TrackId fromText(std::string_view value) { return TrackId{0, value, true}; }

  friend bool operator==(const TrackId&, const TrackId&) = default;
  friend std::strong_ordering operator<=>(const TrackId& a, const TrackId& b) {
    if (auto c = a.isText <=> b.isText; c != 0) return c;
    if (auto c = a.number <=> b.number; c != 0) return c;
    return a.text.compare(b.text) <=> 0;
  }
};

// One Chrome trace event. Times are integer nanoseconds so that sums and differences are exact; the JSON's
// microsecond doubles are converted once, on import and export. `args` is the event's args value as raw JSON text,
// kept verbatim because most consumers only display it and building a DOM for 1M events is the slow part of a
// load. Fields the model does not name (id2, s, tts, ...) are kept in `extra` as raw `"key":value` pairs so that
// export loses nothing. A B/E pair matched on import becomes one 'X' event with `fromBeginEnd` set.
//
// Every text field is a view into the owning Trace's `text` store (or a string literal): to set one from a
// temporary string, go through Trace::copyText. Copying an event is cheap and safe while its Trace lives.
struct TraceEvent {
  char phase = 'X';
  bool idIsNumber = false;
  bool fromBeginEnd = false;
  std::string_view name;
  std::string_view cat;
  TrackId pid;
  TrackId tid;
  int64_t tsNs = 0;
  int64_t durNs = kNoDuration;
  std::string_view id;     // flow/async/object id, unquoted; empty when absent
  std::string_view bp;     // flow binding point ("e" for enclosing slice); empty when absent
  std::string_view args;   // raw JSON; empty when absent
  std::string_view extra;  // raw `"key":value` pairs joined by ','; empty when none

  int64_t endNs() const { return durNs == kNoDuration ? tsNs : tsNs + durNs; }

  friend bool operator==(const TraceEvent&, const TraceEvent&) = default;
};

// What the phase letter means, for code that should not switch on characters.
enum class PhaseKind {
  kComplete,
  kBegin,
  kEnd,
  kInstant,
  kCounter,
  kMetadata,
  kFlow,
  kAsync,
  kLegacyAsync,
  kObject,
  kOther
};
PhaseKind phaseKind(char phase);

// Names and ordering from M (metadata) events; the M events themselves are not kept in Trace::events.
struct ProcessInfo {
  std::string name;
  std::optional<int64_t> sortIndex;
  friend bool operator==(const ProcessInfo&, const ProcessInfo&) = default;
};
struct ThreadInfo {
  std::string name;
  std::optional<int64_t> sortIndex;
  friend bool operator==(const ThreadInfo&, const ThreadInfo&) = default;
};

// What an import saw. `phaseCounts` counts accepted events by their phase as written (before B/E matching), so it
// can be checked against the file; `skipped` maps a reason ("missing ph", "bad ts", ...) to how many events it hit.
struct ImportStats {
  int64_t eventsRead = 0;
  // `{}` entries: XLA's profiler ends traceEvents with one. Read, but neither an event nor malformed.
  int64_t emptyObjects = 0;
  std::map<char, int64_t> phaseCounts;
  std::map<std::string, int64_t> skipped;
  int64_t matchedBeginEnd = 0;
  int64_t unmatchedBegin = 0;
  int64_t unmatchedEnd = 0;
  int64_t windows = 0;        // windows a streaming import parsed (0: the whole document was parsed at once)
  int64_t windowRetries = 0;  // windows whose first cut was inside a string or nested value and were cut again

  int64_t skippedTotal() const;
};

// A whole trace: events in file order (minus metadata folded into processes/threads and E events folded into
// their B), plus the top-level keys of the object form. `otherKeys` holds every top-level key except traceEvents
// and displayTimeUnit as (unescaped key, raw JSON value), in file order.
//
// A Trace owns the text its events point at, so it moves but does not copy implicitly; clone() makes an
// independent deep copy.
struct Trace {
  Trace() = default;
  Trace(Trace&&) noexcept = default;
  Trace& operator=(Trace&&) noexcept = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // Copies `value` into this trace's store, for setting event fields from temporary strings.
  std::string_view copyText(std::string_view value) { return text.copy(value); }
  TrackId copyTrack(const TrackId& track) { return track.isText ? TrackId::fromText(copyText(track.text)) : track; }
  Trace clone() const;

  std::string name;
  std::vector<TraceEvent> events;
  std::map<TrackId, ProcessInfo> processes;
  std::map<std::pair<TrackId, TrackId>, ThreadInfo> threads;
  std::string displayTimeUnit;
  std::vector<std::pair<std::string, std::string>> otherKeys;
  ImportStats stats;
  TextStore text;
};

// Pairs B and E events per (pid, tid) in timestamp order (file order on ties) into complete 'X' events placed where
// the B was; E args are merged into the slice's args. Unmatched B and E events stay as they are and are counted in
// trace.stats.
void matchBeginEnd(Trace& trace);

}  // namespace fusionscope::profiler
