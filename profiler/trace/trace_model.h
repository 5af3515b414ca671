#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fusionscope::profiler {

// Marks an event that has no duration (everything except complete slices).
inline constexpr int64_t kNoDuration = -1;

// A pid or tid as the trace wrote it. Kineto uses numbers for devices and streams but strings for synthetic tracks
// ("Spans", "Traces"), so both forms are kept and written back unchanged.
struct TrackId {
  int64_t number = 0;
  std::string text;
  bool isText = false;

  static TrackId fromNumber(int64_t value) { return TrackId{value, {}, false}; }
  static TrackId fromText(std::string value) { return TrackId{0, std::move(value), true}; }

  friend bool operator==(const TrackId&, const TrackId&) = default;
  friend std::strong_ordering operator<=>(const TrackId&, const TrackId&) = default;
};

// One Chrome trace event. Times are integer nanoseconds so that sums and differences are exact; the JSON's
// microsecond doubles are converted once, on import and export. `args` is the event's args value as raw JSON text,
// kept verbatim because most consumers only display it and building a DOM for 16k events is the slow part of a
// load. Fields the model does not name (id2, s, tts, ...) are kept in `extra` as raw `"key":value` pairs so that
// export loses nothing. A B/E pair matched on import becomes one 'X' event with `fromBeginEnd` set.
struct TraceEvent {
  char phase = 'X';
  std::string name;
  std::string cat;
  TrackId pid;
  TrackId tid;
  int64_t tsNs = 0;
  int64_t durNs = kNoDuration;
  std::string id;  // flow/async/object id, unquoted; empty when absent
  bool idIsNumber = false;
  std::string bp;     // flow binding point ("e" for enclosing slice); empty when absent
  std::string args;   // raw JSON; empty when absent
  std::string extra;  // raw `"key":value` pairs joined by ','; empty when none
  bool fromBeginEnd = false;

  friend bool operator==(const TraceEvent&, const TraceEvent&) = default;
};

// What the phase letter means, for code that should not switch on characters.
enum class PhaseKind { kComplete, kBegin, kEnd, kInstant, kCounter, kMetadata, kFlow, kAsync, kLegacyAsync, kOther };
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
  std::map<char, int64_t> phaseCounts;
  std::map<std::string, int64_t> skipped;
  int64_t matchedBeginEnd = 0;
  int64_t unmatchedBegin = 0;
  int64_t unmatchedEnd = 0;

  int64_t skippedTotal() const;
};

// A whole trace: events in file order (minus metadata folded into processes/threads and E events folded into
// their B), plus the top-level keys of the object form. `otherKeys` holds every top-level key except traceEvents
// and displayTimeUnit as (unescaped key, raw JSON value), in file order.
struct Trace {
  std::string name;
  std::vector<TraceEvent> events;
  std::map<TrackId, ProcessInfo> processes;
  std::map<std::pair<TrackId, TrackId>, ThreadInfo> threads;
  std::string displayTimeUnit;
  std::vector<std::pair<std::string, std::string>> otherKeys;
  ImportStats stats;
};

// Pairs B and E events per (pid, tid) in timestamp order (file order on ties) into complete 'X' events placed where
// the B was; E args are merged into the slice's args. Unmatched B and E events stay as they are and are counted in
// trace.stats.
void matchBeginEnd(Trace& trace);

}  // namespace fusionscope::profiler
