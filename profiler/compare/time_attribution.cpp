#include "profiler/compare/time_attribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/base/gzip.h"
#include "profiler/compare/trace_stats.h"
#include "profiler/trace/kernel_events.h"

namespace fusionscope::profiler {

std::string attributionKeyName(AttributionKey key) {
  switch (key) {
    case AttributionKey::kSource: return "source";
    case AttributionKey::kScope: return "scope";
    case AttributionKey::kOp: return "op";
    case AttributionKey::kFusion: return "fusion";
  }
  return "source";
}

namespace {

std::string sourceKey(const AttributedOp& op) {
  if (op.stack.empty()) return "(no source line)";
  const SourceFrame& frame = op.stack.front();
  return frame.file + ":" + std::to_string(frame.line);
}

std::string rowKey(const AttributedOp& op, const std::string& instruction, AttributionKey key) {
  switch (key) {
    case AttributionKey::kSource: return sourceKey(op);
    case AttributionKey::kScope: return op.scope.empty() ? "(no op_name)" : op.scope;
    case AttributionKey::kOp: return op.op;
    case AttributionKey::kFusion: return op.kernel.empty() ? instruction : op.kernel;
  }
  return instruction;
}

// Each matched kernel launch, split: calls fn(instruction, op index, ns, estimated) per operation.
template <typename Fn>
void forEachShare(const Trace& trace, const OpAttribution& ops, TimeAttribution* totals, Fn&& fn) {
  const KernelClassifier kernels(trace);
  const InstructionIndex index(trace);
  std::map<std::string, int64_t> unmatched;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (!kernels.isKernel(i)) continue;
    const TraceEvent& event = trace.events[i];
    const int64_t ns = std::max<int64_t>(event.durNs, 0);
    const std::string instruction = normalizeKernelName(index.instructionOf(trace, i));
    auto found = ops.find(instruction);
    if (totals != nullptr) {
      ++totals->kernelCount;
      totals->kernelTotalNs += ns;
    }
    if (found == ops.end() || found->second.empty()) {
      if (totals != nullptr) {
        ++totals->unmatchedKernels;
        unmatched[std::string(index.instructionOf(trace, i))] += ns;
      }
      continue;
    }
    if (totals != nullptr) {
      ++totals->matchedKernels;
      totals->matchedNs += ns;
    }
    const std::vector<AttributedOp>& members = found->second;
    double weights = 0;
    for (const AttributedOp& op : members) weights += std::max(op.weight, 0.0);
    const bool estimated = members.size() > 1;
    for (size_t m = 0; m < members.size(); ++m) {
      const double part = weights > 0 ? std::max(members[m].weight, 0.0) / weights : 1.0 / members.size();
      fn(found->first, m, static_cast<double>(ns) * part, estimated);
    }
  }
  if (totals != nullptr) {
    std::vector<std::pair<std::string, int64_t>> sorted(unmatched.begin(), unmatched.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (size_t k = 0; k < sorted.size() && k < 10; ++k) totals->unmatchedNames.push_back(sorted[k].first);
  }
}

}  // namespace

TimeAttribution attributeTime(const Trace& trace, const OpAttribution& ops, AttributionKey key,
                              const std::string& model) {
  TimeAttribution result;
  result.key = key;
  result.model = model;
  std::map<std::string, AttributionRow> rows;
  std::map<std::string, int64_t> lastLaunch;  // row -> the last launch counted in its `kernels`
  std::map<std::string, std::set<std::string>> operations;
  std::map<std::string, std::set<std::string>> kernelsRun;
  int64_t launch = 0;
  forEachShare(trace, ops, &result, [&](const std::string& instruction, size_t m, double ns, bool estimated) {
    const AttributedOp& op = ops.at(instruction)[m];
    const std::string k = rowKey(op, instruction, key);
    AttributionRow& row = rows[k];
    row.key = k;
    row.ns += ns;
    row.estimated = row.estimated || estimated;
    operations[k].insert(op.name);
    kernelsRun[k].insert(instruction);
    if (m == 0) ++launch;
    // Launches come one after another: one counts once per row, whatever number of its operations fall in it.
    int64_t& last = lastLaunch[k];
    if (last != launch) {
      last = launch;
      ++row.kernels;
    }
  });
  for (auto& [k, row] : rows) {
    row.share = result.matchedNs > 0 ? row.ns / static_cast<double>(result.matchedNs) : 0;
    row.operations.assign(operations[k].begin(), operations[k].end());
    row.kernelsRun.assign(kernelsRun[k].begin(), kernelsRun[k].end());
    result.rows.push_back(row);
  }
  std::sort(result.rows.begin(), result.rows.end(), [](const AttributionRow& a, const AttributionRow& b) {
    return std::tie(b.ns, a.key) < std::tie(a.ns, b.key);
  });
  return result;
}

std::string attributionText(const TimeAttribution& a, size_t top) {
  std::string out;
  char line[512];
  std::snprintf(
      line, sizeof line, "kernel time by %s: %s in %lld kernel launches; %lld launches (%s) matched the module\n",
      attributionKeyName(a.key).c_str(), formatNs(a.kernelTotalNs).c_str(), static_cast<long long>(a.kernelCount),
      static_cast<long long>(a.matchedKernels), formatNs(a.matchedNs).c_str());
  out += line;
  if (a.unmatchedKernels > 0) {
    std::snprintf(line, sizeof line, "%lld launches ran no instruction of the module (e.g. %s)\n",
                  static_cast<long long>(a.unmatchedKernels),
                  a.unmatchedNames.empty() ? "?" : a.unmatchedNames.front().c_str());
    out += line;
  }
  out += "shares: " + a.model + "; rows marked ~ hold estimated shares, the others are exact\n\n";
  std::snprintf(line, sizeof line, "  %12s %7s %8s  %s\n", "time", "share", "kernels",
                attributionKeyName(a.key).c_str());
  out += line;
  for (size_t i = 0; i < a.rows.size() && i < top; ++i) {
    const AttributionRow& row = a.rows[i];
    std::snprintf(line, sizeof line, "%s %12s %6.1f%% %8lld  %s\n", row.estimated ? " ~" : "  ",
                  formatNs(static_cast<int64_t>(std::llround(row.ns))).c_str(), 100 * row.share,
                  static_cast<long long>(row.kernels), row.key.c_str());
    out += line;
  }
  if (a.rows.size() > top) out += "  ... " + std::to_string(a.rows.size() - top) + " more rows (--top)\n";
  return out;
}

std::string attributionJson(const TimeAttribution& a) {
  nlohmann::ordered_json root;
  root["by"] = attributionKeyName(a.key);
  root["kernel_count"] = a.kernelCount;
  root["kernel_total_ns"] = a.kernelTotalNs;
  root["matched_kernels"] = a.matchedKernels;
  root["matched_ns"] = a.matchedNs;
  root["unmatched_kernels"] = a.unmatchedKernels;
  root["unmatched_examples"] = a.unmatchedNames;
  root["model"] = a.model;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const AttributionRow& row : a.rows) {
    rows.push_back({{attributionKeyName(a.key), row.key},
                    {"ns", row.ns},
                    {"share", row.share},
                    {"kernels", row.kernels},
                    {"estimated", row.estimated}});
  }
  root["rows"] = std::move(rows);
  return root.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

namespace {

struct JoinedRow {
  std::string key;
  double beforeNs = 0;
  double afterNs = 0;
  bool estimated = false;
};

std::vector<JoinedRow> joinRows(const TimeAttribution& before, const TimeAttribution& after) {
  std::map<std::string, JoinedRow> joined;
  for (const AttributionRow& row : before.rows) {
    JoinedRow& j = joined[row.key];
    j.key = row.key;
    j.beforeNs = row.ns;
    j.estimated = j.estimated || row.estimated;
  }
  for (const AttributionRow& row : after.rows) {
    JoinedRow& j = joined[row.key];
    j.key = row.key;
    j.afterNs = row.ns;
    j.estimated = j.estimated || row.estimated;
  }
  std::vector<JoinedRow> rows;
  for (auto& [key, row] : joined) rows.push_back(row);
  std::sort(rows.begin(), rows.end(), [](const JoinedRow& a, const JoinedRow& b) {
    const double savedA = a.beforeNs - a.afterNs;
    const double savedB = b.beforeNs - b.afterNs;
    return savedA != savedB ? savedA > savedB : a.key < b.key;
  });
  return rows;
}

}  // namespace

std::string attributionComparisonText(const TimeAttribution& before, const TimeAttribution& after, size_t top) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "kernel time by %s: before %s (%lld of %lld launches matched), after %s (%lld of %lld)\n",
                attributionKeyName(after.key).c_str(), formatNs(before.matchedNs).c_str(),
                static_cast<long long>(before.matchedKernels), static_cast<long long>(before.kernelCount),
                formatNs(after.matchedNs).c_str(), static_cast<long long>(after.matchedKernels),
                static_cast<long long>(after.kernelCount));
  out += line;
  out += "shares: " + after.model + "; rows marked ~ hold estimated shares\n\n";
  std::snprintf(line, sizeof line, "  %12s %12s %12s %8s  %s\n", "before", "after", "saved", "ratio",
                attributionKeyName(after.key).c_str());
  out += line;
  const std::vector<JoinedRow> rows = joinRows(before, after);
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const JoinedRow& row = rows[i];
    const std::string ratio = row.beforeNs > 0 && row.afterNs > 0
                                  ? [&] {
                                      char r[32];
                                      std::snprintf(r, sizeof r, "%.2fx", row.beforeNs / row.afterNs);
                                      return std::string(r);
                                    }()
                                  : row.afterNs > 0 ? "new" : "gone";
    std::snprintf(line, sizeof line, "%s %12s %12s %12s %8s  %s\n", row.estimated ? " ~" : "  ",
                  formatNs(static_cast<int64_t>(std::llround(row.beforeNs))).c_str(),
                  formatNs(static_cast<int64_t>(std::llround(row.afterNs))).c_str(),
                  ((row.beforeNs >= row.afterNs ? "" : "-") +
                   formatNs(static_cast<int64_t>(std::llround(std::abs(row.beforeNs - row.afterNs)))))
                      .c_str(),
                  ratio.c_str(), row.key.c_str());
    out += line;
  }
  if (rows.size() > top) out += "  ... " + std::to_string(rows.size() - top) + " more rows (--top)\n";
  return out;
}

std::string attributionComparisonJson(const TimeAttribution& before, const TimeAttribution& after) {
  nlohmann::ordered_json root;
  root["by"] = attributionKeyName(after.key);
  root["model"] = after.model;
  for (const auto& [name, side] :
       {std::pair<const char*, const TimeAttribution*>{"before", &before}, {"after", &after}}) {
    root[name] = {{"kernel_count", side->kernelCount},
                  {"kernel_total_ns", side->kernelTotalNs},
                  {"matched_kernels", side->matchedKernels},
                  {"matched_ns", side->matchedNs},
                  {"unmatched_kernels", side->unmatchedKernels}};
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const JoinedRow& row : joinRows(before, after)) {
    rows.push_back({{attributionKeyName(after.key), row.key},
                    {"before_ns", row.beforeNs},
                    {"after_ns", row.afterNs},
                    {"saved_ns", row.beforeNs - row.afterNs},
                    {"estimated", row.estimated}});
  }
  root["rows"] = std::move(rows);
  return root.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

namespace {

// The protobuf wire format, as much of it as profile.proto needs: varints, and length-delimited fields.
class ProtoWriter {
 public:
  void varint(uint64_t value) {
    while (value >= 0x80) {
      m_bytes.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    m_bytes.push_back(static_cast<char>(value));
  }
  void tag(int field, int wireType) { varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wireType)); }
  void intField(int field, int64_t value) {
    tag(field, 0);
    varint(static_cast<uint64_t>(value));
  }
  void bytesField(int field, const std::string& bytes) {
    tag(field, 2);
    varint(bytes.size());
    m_bytes += bytes;
  }
  void packed(int field, const std::vector<uint64_t>& values) {
    ProtoWriter inner;
    for (uint64_t v : values) inner.varint(v);
    bytesField(field, inner.bytes());
  }
  const std::string& bytes() const { return m_bytes; }

 private:
  std::string m_bytes;
};

class StringTable {
 public:
  StringTable() { id(""); }
  int64_t id(const std::string& s) {
    auto [it, added] = m_ids.emplace(s, static_cast<int64_t>(m_strings.size()));
    if (added) m_strings.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return m_strings; }

 private:
  std::map<std::string, int64_t> m_ids;
  std::vector<std::string> m_strings;
};

}  // namespace

StatusOr<std::string> attributionPprof(const Trace& trace, const OpAttribution& ops) {
  // (instruction, op index) -> ns, over every launch.
  std::map<std::pair<std::string, size_t>, double> samples;
  forEachShare(trace, ops, nullptr, [&](const std::string& instruction, size_t m, double ns, bool) {
    samples[{instruction, m}] += ns;
  });
  StringTable strings;
  std::map<std::tuple<std::string, std::string>, uint64_t> functions;  // (name, file) -> id
  std::map<std::tuple<uint64_t, int64_t>, uint64_t> locations;         // (function, line) -> id
  ProtoWriter profile;
  ProtoWriter sampleType;
  sampleType.intField(1, strings.id("time"));
  sampleType.intField(2, strings.id("nanoseconds"));
  profile.bytesField(1, sampleType.bytes());
  auto location = [&](const std::string& function, const std::string& file, int64_t line) {
    auto [f, newFunction] = functions.emplace(std::make_tuple(function, file), functions.size() + 1);
    if (newFunction) {
      ProtoWriter fn;
      fn.intField(1, static_cast<int64_t>(f->second));
      fn.intField(2, strings.id(function));
      fn.intField(3, strings.id(function));
      fn.intField(4, strings.id(file));
      profile.bytesField(5, fn.bytes());
    }
    auto [l, newLocation] = locations.emplace(std::make_tuple(f->second, line), locations.size() + 1);
    if (newLocation) {
      ProtoWriter at;
      at.intField(1, static_cast<int64_t>(l->second));
      ProtoWriter lineMessage;
      lineMessage.intField(1, static_cast<int64_t>(f->second));
      lineMessage.intField(2, line);
      at.bytesField(4, lineMessage.bytes());
      profile.bytesField(4, at.bytes());
    }
    return l->second;
  };
  for (const auto& [where, ns] : samples) {
    const AttributedOp& op = ops.at(where.first)[where.second];
    std::vector<uint64_t> stack;  // leaf first
    if (!op.stack.empty()) {
      for (const SourceFrame& frame : op.stack) stack.push_back(location(frame.function, frame.file, frame.line));
    } else {
      stack.push_back(location(op.op, "", 0));
      std::string scope = op.scope;
      while (!scope.empty()) {
        const size_t slash = scope.rfind('/');
        stack.push_back(location(scope.substr(slash == std::string::npos ? 0 : slash + 1), "", 0));
        scope = slash == std::string::npos ? "" : scope.substr(0, slash);
      }
    }
    ProtoWriter sample;
    sample.packed(1, stack);
    sample.packed(2, {static_cast<uint64_t>(std::llround(ns))});
    profile.bytesField(2, sample.bytes());
  }
  for (const std::string& s : strings.strings()) profile.bytesField(6, s);
  return gzipCompress(profile.bytes());
}

}  // namespace fusionscope::profiler
