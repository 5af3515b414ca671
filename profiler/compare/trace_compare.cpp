#include "profiler/compare/trace_compare.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/base/file_util.h"
#include "profiler/compare/report_json.h"

namespace fusionscope::profiler {
namespace {

namespace od = simdjson::ondemand;

Status jsonError(const std::string& name, std::string_view text, od::document& doc, simdjson::error_code error) {
  size_t offset = 0;
  const char* location = nullptr;
  if (doc.current_location().get(location) == simdjson::SUCCESS && location >= text.data() &&
      location <= text.data() + text.size()) {
    offset = static_cast<size_t>(location - text.data());
  }
  return Status::error(name + ": error: not valid stages.json: " + simdjson::error_message(error) +
                       " (at byte offset " + std::to_string(offset) + ")");
}

// Names listed in a kernel's args under the membership keys.
void argsMembers(std::string_view args, std::vector<std::string>& out) {
  if (args.empty()) return;
  if (args.find("members") == std::string_view::npos && args.find("_ops") == std::string_view::npos &&
      args.find("instruction") == std::string_view::npos && args.find("hlo_op") == std::string_view::npos) {
    return;
  }
  simdjson::padded_string padded(args);
  thread_local od::parser parser;
  od::document doc;
  od::object object;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS || doc.get_object().get(object) != simdjson::SUCCESS) {
    return;
  }
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return;
    bool list = key == "members" || key == "fused_ops" || key == "hlo_ops";
    bool single = key == "instruction" || key == "hlo_op";
    if (!list && !single) continue;
    od::value value;
    if (field.value().get(value) != simdjson::SUCCESS) return;
    od::json_type type;
    if (value.type().get(type) != simdjson::SUCCESS) return;
    if (type == od::json_type::string) {
      std::string_view text;
      if (value.get_string().get(text) == simdjson::SUCCESS) out.emplace_back(text);
    } else if (type == od::json_type::array) {
      od::array array;
      if (value.get_array().get(array) != simdjson::SUCCESS) return;
      for (auto element : array) {
        std::string_view text;
        if (element.get_string().get(text) == simdjson::SUCCESS) out.emplace_back(text);
      }
    }
  }
}

struct KernelGroup {
  int64_t count = 0;
  int64_t ns = 0;
  std::string hloOp;                 // the instruction it ran (hloOp()), when its events say
  std::vector<std::string> members;  // from args, union over its events
};

std::map<std::string, KernelGroup> kernelGroups(const Trace& trace, bool wantMembers) {
  std::map<std::string, KernelGroup> groups;
  const KernelClassifier kernels(trace);
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (!kernels.isKernel(i)) continue;
    const TraceEvent& event = trace.events[i];
    KernelGroup& group = groups[std::string(event.name)];
    ++group.count;
    group.ns += event.durNs;
    if (group.count <= 4) {  // what a kernel ran does not change between launches; sample a few
      if (group.hloOp.empty()) group.hloOp = hloOp(event);
      if (!wantMembers) continue;
      std::vector<std::string> members;
      argsMembers(event.args, members);
      // XLA names a kernel after the op it ran: an hlo_op equal to the name says nothing about members.
      if (members.size() == 1 && normalizeKernelName(members[0]) == normalizeKernelName(event.name)) members.clear();
      for (std::string& m : members) {
        if (std::find(group.members.begin(), group.members.end(), m) == group.members.end()) {
          group.members.push_back(std::move(m));
        }
      }
    }
  }
  return groups;
}

}  // namespace

StatusOr<FusionMembership> parseFusionMembership(std::string_view text, const std::string& name) {
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  if (auto error = parser.iterate(padded).get(doc)) {
    return Status::error(name + ": error: not valid JSON: " + simdjson::error_message(error));
  }
  std::string_view view(padded.data(), padded.size());
  FusionMembership membership;
  od::object top;
  if (auto error = doc.get_object().get(top)) return jsonError(name, view, doc, error);
  bool sawStages = false;
  for (auto field : top) {
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return jsonError(name, view, doc, error);
    if (key != "stages") continue;
    od::array stages;
    if (auto error = field.value().get_array().get(stages)) return jsonError(name, view, doc, error);
    sawStages = true;
    for (auto stageResult : stages) {
      od::object stage;
      if (auto error = stageResult.get_object().get(stage)) return jsonError(name, view, doc, error);
      for (auto stageField : stage) {
        std::string_view stageKey;
        if (auto error = stageField.unescaped_key().get(stageKey)) return jsonError(name, view, doc, error);
        if (stageKey != "fusion_list") continue;
        od::array fusions;
        if (auto error = stageField.value().get_array().get(fusions)) return jsonError(name, view, doc, error);
        for (auto fusionResult : fusions) {
          od::object fusion;
          if (auto error = fusionResult.get_object().get(fusion)) return jsonError(name, view, doc, error);
          std::string fusionName;
          std::vector<std::string> members;
          for (auto fusionField : fusion) {
            std::string_view fusionKey;
            if (auto error = fusionField.unescaped_key().get(fusionKey)) return jsonError(name, view, doc, error);
            if (fusionKey == "name") {
              std::string_view text;
              if (auto error = fusionField.value().get_string().get(text)) return jsonError(name, view, doc, error);
              fusionName.assign(text);
            } else if (fusionKey == "members") {
              od::array array;
              if (auto error = fusionField.value().get_array().get(array)) return jsonError(name, view, doc, error);
              for (auto element : array) {
                std::string_view text;
                if (auto error = element.get_string().get(text)) return jsonError(name, view, doc, error);
                members.emplace_back(text);
              }
            }
          }
          if (!fusionName.empty()) membership.members[fusionName] = std::move(members);
        }
      }
    }
  }
  if (!sawStages) return Status::error(name + ": error: not a stages.json: no \"stages\" array");
  return membership;
}

StatusOr<FusionMembership> loadFusionMembership(const std::string& path) {
  StatusOr<std::string> text = readFile(path);
  if (!text.ok()) return text.status();
  return parseFusionMembership(*text, path);
}

TraceComparison compareTraces(const Trace& before, const Trace& after, const FusionMembership* membership) {
  TraceComparison comparison;
  comparison.before = computeStats(before);
  comparison.after = computeStats(after);
  std::map<std::string, KernelGroup> beforeKernels = kernelGroups(before, false);
  std::map<std::string, KernelGroup> afterKernels = kernelGroups(after, true);

  std::map<std::string, std::string> membershipByNormalized;  // normalized fusion name -> key in membership
  if (membership) {
    for (const auto& [fusion, members] : membership->members)
      membershipByNormalized[normalizeKernelName(fusion)] = fusion;
  }
  // A before kernel answers to its name and to the instruction it ran (XLA's GPU kernels are named apart from
  // their hlo_op; a library call's kernel never is).
  std::map<std::string, std::vector<std::string>> beforeByNormalized;
  for (const auto& [name, group] : beforeKernels) {
    beforeByNormalized[normalizeKernelName(name)].push_back(name);
    std::string op = normalizeKernelName(group.hloOp);
    if (!group.hloOp.empty() && op != normalizeKernelName(name)) beforeByNormalized[op].push_back(name);
  }

  for (const auto& [name, group] : afterKernels) {
    KernelMapping mapping;
    mapping.after = name;
    mapping.afterCount = group.count;
    mapping.afterNs = group.ns;
    comparison.mappings.push_back(std::move(mapping));
  }
  std::sort(comparison.mappings.begin(), comparison.mappings.end(),
            [](const KernelMapping& a, const KernelMapping& b) { return a.afterNs > b.afterNs; });

  // The before kernels each after kernel's members name, in member order.
  const size_t n = comparison.mappings.size();
  std::vector<std::vector<std::string>> candidates(n);
  std::vector<bool> hasMembers(n, false);
  std::map<std::string, int> listedBy;  // before kernel -> how many after kernels list it
  for (size_t k = 0; k < n; ++k) {
    KernelMapping& mapping = comparison.mappings[k];
    const std::string& afterOp = afterKernels.at(mapping.after).hloOp;
    const std::vector<std::string>* members = nullptr;
    auto found = membershipByNormalized.find(normalizeKernelName(mapping.after));
    if (found == membershipByNormalized.end() && !afterOp.empty())
      found = membershipByNormalized.find(normalizeKernelName(afterOp));
    if (found != membershipByNormalized.end()) {
      members = &membership->members.at(found->second);
      mapping.via = membership->source;
    } else if (!afterKernels.at(mapping.after).members.empty()) {
      members = &afterKernels.at(mapping.after).members;
      mapping.via = "args";
    }
    if (!members) continue;
    hasMembers[k] = true;
    for (const std::string& member : *members) {
      auto named = beforeByNormalized.find(normalizeKernelName(member));
      if (named == beforeByNormalized.end()) continue;
      for (const std::string& beforeName : named->second) {
        if (std::find(candidates[k].begin(), candidates[k].end(), beforeName) != candidates[k].end()) continue;
        candidates[k].push_back(beforeName);
        ++listedBy[beforeName];
      }
    }
  }

  // Each before kernel is claimed once. A fusion first takes what it alone lists and a kernel named like itself;
  // what several list (an op XLA duplicated into several fusions, ops alike in all they are matched by) then goes
  // to the first of them by after time. A kernel left with nothing takes the unclaimed kernel with its name.
  std::map<std::string, size_t> owner;  // before kernel -> index of the mapping that claimed it
  for (size_t k = 0; k < n; ++k) {
    const std::string self = normalizeKernelName(comparison.mappings[k].after);
    for (const std::string& name : candidates[k]) {
      if (listedBy[name] == 1 || normalizeKernelName(name) == self) owner.try_emplace(name, k);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    for (const std::string& name : candidates[k]) owner.try_emplace(name, k);
  }
  for (size_t k = 0; k < n; ++k) {
    KernelMapping& mapping = comparison.mappings[k];
    for (const std::string& name : candidates[k]) {
      if (owner.at(name) == k) mapping.before.push_back(name);
    }
    if (mapping.before.empty()) {
      // Unchanged by fusion (or nothing says what it contains): the kernel with the same name or hlo_op, if any.
      const std::string& afterOp = afterKernels.at(mapping.after).hloOp;
      for (const std::string& key : {normalizeKernelName(mapping.after), normalizeKernelName(afterOp)}) {
        auto named = beforeByNormalized.find(key);
        if (key.empty() || named == beforeByNormalized.end()) continue;
        for (const std::string& name : named->second) {
          if (owner.try_emplace(name, k).second) mapping.before.push_back(name);
        }
        if (!mapping.before.empty()) break;
      }
      if (!mapping.before.empty()) {
        mapping.via = "same name";
      } else if (!hasMembers[k]) {
        mapping.via = "";
      }
    }
    for (const std::string& name : mapping.before) {
      mapping.beforeCount += beforeKernels.at(name).count;
      mapping.beforeNs += beforeKernels.at(name).ns;
    }
  }
  for (const auto& [name, group] : beforeKernels) {
    if (!owner.count(name)) comparison.unmappedBefore.push_back(name);
  }
  return comparison;
}

namespace {

std::string ratioText(int64_t before, int64_t after) {
  char buffer[32];
  if (before <= 0 || after <= 0) return "-";
  std::snprintf(buffer, sizeof buffer, "%.2fx", static_cast<double>(before) / static_cast<double>(after));
  return buffer;
}

std::string topKernels(const TraceStats& stats, size_t top) {
  std::string out;
  char line[512];
  if (!stats.kernelsOnly) return "  (no kernels)\n";
  for (size_t i = 0; i < stats.names.size() && i < top; ++i) {
    const NameStats& n = stats.names[i];
    std::snprintf(line, sizeof line, "  %8lld %12s  %s\n", static_cast<long long>(n.durations.count),
                  formatNs(n.durations.totalNs).c_str(), n.name.substr(0, 160).c_str());
    out += line;
  }
  return out;
}

}  // namespace

std::string comparisonText(const TraceComparison& c, size_t top) {
  std::string out;
  char line[640];
  std::snprintf(line, sizeof line, "%-22s %14s %14s %10s\n", "", "before", "after", "before/after");
  out += line;
  auto row = [&](const char* label, int64_t b, int64_t a, bool time) {
    std::snprintf(line, sizeof line, "%-22s %14s %14s %10s\n", label, (time ? formatNs(b) : std::to_string(b)).c_str(),
                  (time ? formatNs(a) : std::to_string(a)).c_str(), ratioText(b, a).c_str());
    out += line;
  };
  row("kernels launched", c.before.kernelCount, c.after.kernelCount, false);
  row("kernel time", c.before.kernelTimeNs, c.after.kernelTimeNs, true);
  row("device time", c.before.deviceTimeNs, c.after.deviceTimeNs, true);
  if (const IterationSpread spread = iterationSpeedups(c.before, c.after); spread.count > 0) {
    std::snprintf(line, sizeof line, "%-22s %14zu %14zu %10s  (median %.2fx, %.2f-%.2fx over %d iteration pairs)\n",
                  "iterations", c.before.iterationDeviceNs.size(), c.after.iterationDeviceNs.size(), "", spread.median,
                  spread.min, spread.max, spread.count);
    out += line;
  }
  std::set<std::string> categories;
  for (const auto& [cat, ns] : c.before.categoryNs) categories.insert(cat);
  for (const auto& [cat, ns] : c.after.categoryNs) categories.insert(cat);
  for (const std::string& cat : categories) {
    auto value = [&](const TraceStats& s) {
      auto it = s.categoryNs.find(cat);
      return it == s.categoryNs.end() ? int64_t{0} : it->second;
    };
    row(("  " + cat).substr(0, 22).c_str(), value(c.before), value(c.after), true);
  }
  row("device busy", c.before.busyNs, c.after.busyNs, true);
  row("device idle", c.before.idleNs, c.after.idleNs, true);
  row("launch gaps (total)", c.before.gaps.totalNs, c.after.gaps.totalNs, true);
  row("launch gap p50", c.before.gaps.p50Ns, c.after.gaps.p50Ns, true);
  std::snprintf(line, sizeof line, "%-22s %14s %14s %10s\n", "bytes moved", formatBytes(c.before.bytes).c_str(),
                formatBytes(c.after.bytes).c_str(), ratioText(c.before.bytes, c.after.bytes).c_str());
  out += line;
  out += "\ntop kernels before:\n" + topKernels(c.before, top);
  out += "top kernels after:\n" + topKernels(c.after, top);
  out += "\nafter kernel -> before kernels it replaced (speedup = before time / after time):\n";
  for (const KernelMapping& m : c.mappings) {
    std::snprintf(line, sizeof line, "  %s: %s x%lld", m.after.substr(0, 120).c_str(), formatNs(m.afterNs).c_str(),
                  static_cast<long long>(m.afterCount));
    out += line;
    if (m.before.empty()) {
      out += "  <- (no matching before kernel)\n";
      continue;
    }
    std::snprintf(line, sizeof line, "  <- %zu kernel(s), %lld launch(es), %s; speedup %.2fx [%s]\n", m.before.size(),
                  static_cast<long long>(m.beforeCount), formatNs(m.beforeNs).c_str(), m.speedup(), m.via.c_str());
    out += line;
    std::string names;
    for (size_t i = 0; i < m.before.size(); ++i) {
      if (i == 8) {
        names += ", ... " + std::to_string(m.before.size() - 8) + " more";
        break;
      }
      names += (i ? ", " : "") + m.before[i].substr(0, 80);
    }
    out += "      " + names + "\n";
  }
  if (!c.unmappedBefore.empty()) {
    out += "before kernels no after kernel accounts for: " + std::to_string(c.unmappedBefore.size()) + "\n";
    for (size_t i = 0; i < c.unmappedBefore.size() && i < top; ++i) out += "  " + c.unmappedBefore[i] + "\n";
  }
  return out;
}

std::string comparisonJson(const TraceComparison& c) {
  nlohmann::json mappings = nlohmann::json::array();
  for (const KernelMapping& m : c.mappings) {
    mappings.push_back({{"after", m.after},
                        {"after_count", m.afterCount},
                        {"after_ns", m.afterNs},
                        {"before", m.before},
                        {"before_count", m.beforeCount},
                        {"before_ns", m.beforeNs},
                        {"via", m.via},
                        {"speedup", m.speedup()}});
  }
  nlohmann::json out = {{"before", statsToJson(c.before)},
                        {"after", statsToJson(c.after)},
                        {"mappings", mappings},
                        {"unmapped_before", c.unmappedBefore}};
  if (const IterationSpread spread = iterationSpeedups(c.before, c.after); spread.count > 0) {
    out["iteration_speedup"] = {
        {"pairs", spread.count}, {"median", spread.median}, {"min", spread.min}, {"max", spread.max}};
  }
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace fusionscope::profiler
