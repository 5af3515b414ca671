#include "profiler/trace/trace_model.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <tuple>

namespace fusionscope::profiler {
namespace {

bool isEmptyObject(std::string_view json) {
  if (json.empty()) return true;
  size_t first = json.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || json[first] != '{') return false;
  size_t second = json.find_first_not_of(" \t\r\n", first + 1);
  return second != std::string_view::npos && json[second] == '}';
}

// Chrome shows the union of B and E args on the slice; doing it textually keeps both verbatim.
std::string_view mergeArgs(TextStore& store, std::string_view begin, std::string_view end) {
  if (isEmptyObject(end)) return begin;
  if (isEmptyObject(begin)) return end;
  size_t close = begin.find_last_of('}');
  size_t open = end.find_first_of('{');
  if (close == std::string_view::npos || open == std::string_view::npos) return begin;
  std::string merged(begin.substr(0, close));
  merged += ',';
  merged.append(end.substr(open + 1));
  return store.copy(merged);
}

constexpr size_t kBlockSize = size_t{1} << 20;

}  // namespace

std::string_view TextStore::copy(std::string_view text) {
  if (text.empty()) return {};
  if (text.size() > kBlockSize / 4) {
    // Large texts get a block of their own so that they do not waste the rest of the current one.
    Block block{std::make_unique<char[]>(text.size()), text.size()};
    std::memcpy(block.data.get(), text.data(), text.size());
    std::string_view view(block.data.get(), text.size());
    m_blocks.insert(m_blocks.empty() ? m_blocks.end() : m_blocks.end() - 1, std::move(block));
    return view;
  }
  if (m_blocks.empty() || m_blocks.back().size - m_used < text.size()) {
    m_blocks.push_back(Block{std::make_unique<char[]>(kBlockSize), kBlockSize});
    m_used = 0;
  }
  char* target = m_blocks.back().data.get() + m_used;
  std::memcpy(target, text.data(), text.size());
  m_used += text.size();
  return {target, text.size()};
}

std::string_view TextStore::adopt(std::string buffer) {
  m_adopted.push_back(std::make_unique<std::string>(std::move(buffer)));
  return *m_adopted.back();
}

bool TextStore::owns(std::string_view text) const {
  if (text.empty()) return true;
  auto inside = [&](const char* begin, size_t size) {
    std::less_equal<const char*> le;
    return le(begin, text.data()) && le(text.data() + text.size(), begin + size);
  };
  for (const Block& block : m_blocks) {
    if (inside(block.data.get(), block.size)) return true;
  }
  for (const auto& buffer : m_adopted) {
    if (inside(buffer->data(), buffer->size())) return true;
  }
  return false;
}

size_t TextStore::bytesHeld() const {
  size_t total = 0;
  for (const Block& block : m_blocks) total += block.size;
  for (const auto& buffer : m_adopted) total += buffer->capacity();
  return total;
}

Trace Trace::clone() const {
  Trace copy;
  copy.name = name;
  copy.displayTimeUnit = displayTimeUnit;
  copy.otherKeys = otherKeys;
  copy.stats = stats;
  copy.events.reserve(events.size());
  for (const TraceEvent& event : events) {
    TraceEvent& out = copy.events.emplace_back(event);
    out.name = copy.copyText(event.name);
    out.cat = copy.copyText(event.cat);
    out.pid = copy.copyTrack(event.pid);
    out.tid = copy.copyTrack(event.tid);
    out.id = copy.copyText(event.id);
    out.bp = copy.copyText(event.bp);
    out.args = copy.copyText(event.args);
    out.extra = copy.copyText(event.extra);
  }
  for (const auto& [pid, info] : processes) copy.processes[copy.copyTrack(pid)] = info;
  for (const auto& [key, info] : threads) copy.threads[{copy.copyTrack(key.first), copy.copyTrack(key.second)}] = info;
  return copy;
}

PhaseKind phaseKind(char phase) {
  switch (phase) {
    case 'X': return PhaseKind::kComplete;
    case 'B': return PhaseKind::kBegin;
    case 'E': return PhaseKind::kEnd;
    case 'i':
    case 'I': return PhaseKind::kInstant;
    case 'C': return PhaseKind::kCounter;
    case 'M': return PhaseKind::kMetadata;
    case 's':
    case 't':
    case 'f': return PhaseKind::kFlow;
    case 'b':
    case 'e':
    case 'n': return PhaseKind::kAsync;
    case 'S':
    case 'T':
    case 'F': return PhaseKind::kLegacyAsync;
    case 'N':
    case 'O':
    case 'D': return PhaseKind::kObject;
    default: return PhaseKind::kOther;
  }
}

int64_t ImportStats::skippedTotal() const {
  int64_t total = 0;
  for (const auto& [reason, count] : skipped) total += count;
  return total;
}

void matchBeginEnd(Trace& trace) {
  std::vector<size_t> order;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    char ph = trace.events[i].phase;
    if (ph == 'B' || ph == 'E') order.push_back(i);
  }
  if (order.empty()) return;
  // Traces are usually sorted per thread already, but nothing in the format promises it.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TraceEvent& x = trace.events[a];
    const TraceEvent& y = trace.events[b];
    return std::tie(x.pid, x.tid, x.tsNs) < std::tie(y.pid, y.tid, y.tsNs);
  });

  std::vector<bool> remove(trace.events.size(), false);
  std::vector<size_t> open;
  for (size_t k = 0; k < order.size(); ++k) {
    const TraceEvent& current = trace.events[order[k]];
    if (k > 0) {
      const TraceEvent& previous = trace.events[order[k - 1]];
      if (previous.pid != current.pid || previous.tid != current.tid) {
        trace.stats.unmatchedBegin += static_cast<int64_t>(open.size());
        open.clear();
      }
    }
    if (current.phase == 'B') {
      open.push_back(order[k]);
      continue;
    }
    if (open.empty()) {
      ++trace.stats.unmatchedEnd;
      continue;
    }
    TraceEvent& begin = trace.events[open.back()];
    open.pop_back();
    begin.phase = 'X';
    begin.durNs = current.tsNs - begin.tsNs;
    begin.fromBeginEnd = true;
    begin.args = mergeArgs(trace.text, begin.args, current.args);
    remove[order[k]] = true;
    ++trace.stats.matchedBeginEnd;
  }
  trace.stats.unmatchedBegin += static_cast<int64_t>(open.size());

  size_t out = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (remove[i]) continue;
    if (out != i) trace.events[out] = std::move(trace.events[i]);
    ++out;
  }
  trace.events.resize(out);
}

}  // namespace fusionscope::profiler
