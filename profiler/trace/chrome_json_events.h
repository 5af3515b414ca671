#pragma once

// Chrome trace import internals (profiler/trace only): the event reader both import paths share.
// chrome_json_events.cpp reads events into a Trace (Importer) and whole documents (readDocument);
// chrome_json_import.cpp holds the public functions and the streaming import of big files.
#include <simdjson.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler::import_internal {

namespace od = simdjson::ondemand;

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
  Checkpoint checkpoint() const;
  void restore(Checkpoint checkpoint);

  // Returns a non-success code only for document-level errors; bad events are counted and skipped.
  simdjson::error_code readEvents(od::array events);

 private:
  void skip(const char* reason) { ++m_trace.stats.skipped[reason]; }

  simdjson::error_code readEvent(od::value value);

 public:
  // Moves the per-phase tallies (an array on the hot path) into the trace's stats.
  void finish();

 private:
  // Moves process/thread names and sort indices onto the records; returns false for other metadata, which stays
  // an event. The args are parsed a second time here because "name" may come after "args" in the object.
  bool foldMetadata(const TraceEvent& event);

  Trace& m_trace;
  Interner m_interner;
  bool m_transient = false;
  od::parser m_argsParser;
  std::string m_extra;
  std::array<int64_t, 256> m_phaseCounts{};
};

// How many events to reserve for: the density of "ph" keys in the first MiB, scaled to the whole text.
size_t estimateEventCount(std::string_view text);
// Offset of the first byte that is not white space.
size_t firstContentOffset(std::string_view text);
// `NAME:LINE:COL: error: WHAT (at byte offset N)`.
Status errorAt(const std::string& name, std::string_view text, size_t offset, std::string_view what);
// simdjson's error at its location in `text`, as errorAt.
Status jsonError(const std::string& name, od::document& doc, std::string_view text, simdjson::error_code error);
// Reads one whole document (array or object form) into `trace` through `importer`; `text` must have
// SIMDJSON_PADDING readable bytes past its end. Errors name `name` and a position in `text`.
Status readDocument(Trace& trace, Importer& importer, od::parser& parser, std::string_view text, size_t capacity,
                    const std::string& name);

}  // namespace fusionscope::profiler::import_internal
