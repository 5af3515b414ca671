#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

// A pid or tid as text: the number, or the string the trace wrote.
std::string trackText(const TrackId& id);
// A track title: "NAME (ID)", or "ID" when the trace names nothing (or names it by its id).
std::string trackTitle(const std::string& name, const TrackId& id);

// An async span built from S/F events sharing (pid, cat, name, id), or b/e events sharing (pid, cat, id). Its steps
// (T/p with S/F, n with b/e, between start and finish) are AsyncSpans::steps [firstStep, firstStep + stepCount).
struct AsyncSpan {
  uint32_t begin = 0;  // event index of the S/b
  int64_t startNs = 0;
  int64_t endNs = 0;  // never before startNs
  uint32_t firstStep = 0;
  uint32_t stepCount = 0;
};

// The async spans of one trace, in the order they finish. Starts pair with finishes in timestamp order (file order
// on ties); b/e nest, so a finish closes the innermost open start with its key. A step belongs to the innermost
// open span with its key and is kept once that span finishes, if it lies within it. Starts that never finish,
// finishes and steps with nothing open, and steps outside their span are not part of any span.
struct AsyncSpans {
  std::vector<AsyncSpan> spans;
  std::vector<uint32_t> steps;  // event indices, grouped by span, by time within one
  int64_t pairedEvents = 0;     // starts, finishes and steps that became part of a span
};
AsyncSpans pairAsyncSpans(const Trace& trace);

// One counter sample: the values of its track's series at tsNs (0 where the sample does not give one).
struct CounterSample {
  int64_t tsNs = 0;
  std::vector<double> values;  // one per TraceTrack::series
};

// What a track holds: a thread's slices (with nesting) and instants, a process's async spans, or one counter.
enum class TrackKind { kThread, kAsync, kCounter };

// One track of a trace, as a timeline shows it (Perfetto's trace processor builds the same before its UI draws).
//  - kThread, one per (pid, tid) with complete or instant events: `items` are the complete events by start (the
//    enclosing slice first on ties, then event order), `depths` their nesting (an item sits one below the innermost
//    item still open at its start; items of one depth never overlap); `instants` by ts.
//  - kAsync, one per process with async spans, titled "async": `items` are AsyncSpans::spans indices by start (the
//    longer first on ties), `depths` as above.
//  - kCounter, one per (pid, counter name): `items` the C events by ts, `series` the args keys in the order first
//    seen (counterValues), `samples` one per item.
struct TraceTrack {
  TrackKind kind = TrackKind::kThread;
  TrackId pid;
  TrackId tid;  // kThread only
  std::string title;
  std::string processTitle;
  std::vector<uint32_t> items;
  std::vector<uint16_t> depths;
  std::vector<uint32_t> instants;
  std::vector<std::string> series;
  std::vector<CounterSample> samples;
};

// The tracks of a trace in display order: processes by (sort index, pid); in each, its threads by (sort index, tid),
// then its async track, then its counters by name. Events of other phases (flows, objects, metadata, unmatched B/E)
// are on no track.
struct TraceTracks {
  std::vector<TraceTrack> tracks;
  AsyncSpans async;
};
TraceTracks traceTracks(const Trace& trace);

}  // namespace fusionscope::profiler
