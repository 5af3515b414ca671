#include "app/cli/info_command.h"
#include "core/base/json_output.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fusionscope::cli {
namespace {

using core::HloComputation;
using core::HloInstruction;
using core::HloModule;

std::string humanBytes(int64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  if (bytes < 1024LL * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

// Opcode counts over the whole module, most frequent first, ties by name.
std::vector<std::pair<std::string, int64_t>> opcodeCounts(const HloModule& module) {
  std::map<std::string, int64_t> counts;
  for (const auto& comp : module.computations()) {
    for (const auto& inst : comp->instructions()) ++counts[std::string(inst->opcodeString())];
  }
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return sorted;
}

std::vector<const HloInstruction*> entryParameters(const HloModule& module) {
  std::vector<const HloInstruction*> params;
  if (!module.entry()) return params;
  for (HloInstruction* p : module.entry()->parameters()) {
    if (p) params.push_back(p);
  }
  return params;
}

struct SourceCount {
  core::SourceLocation location;
  int64_t instructions = 0;
};

// Instructions per source location (metadata's stack frame or source_file/line), most first.
std::vector<SourceCount> sourceCounts(const HloModule& module) {
  std::map<std::string, SourceCount> counts;
  for (const auto& comp : module.computations()) {
    for (const auto& inst : comp->instructions()) {
      const core::OpMetadata* metadata = inst->metadata();
      if (metadata == nullptr) continue;
      std::optional<core::SourceLocation> location = module.sourceLocation(*metadata);
      if (!location) continue;
      SourceCount& count = counts[location->toString()];
      count.location = std::move(*location);
      ++count.instructions;
    }
  }
  std::vector<SourceCount> sorted;
  for (auto& [key, count] : counts) sorted.push_back(std::move(count));
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const SourceCount& a, const SourceCount& b) { return a.instructions > b.instructions; });
  return sorted;
}

constexpr size_t kSourcesShown = 20;

template <typename... Args>
void appendLine(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  out += fmt::format(format, std::forward<Args>(args)...);
  out += '\n';
}

}  // namespace

std::string moduleInfoText(const HloModule& module) {
  std::string out;
  appendLine(out, "module {}", module.name());
  appendLine(out, "  entry: {}", module.entry() ? module.entry()->name() : "(none)");
  appendLine(out, "  instructions: {} in {} computation(s)", module.instructionCount(), module.computations().size());
  appendLine(out, "computations:");
  for (const auto& comp : module.computations()) {
    std::string role = comp->isEntry() ? " [entry]" : comp->isFusionComputation() ? " [fused]" : "";
    appendLine(out, "  {}{}: {} instruction(s), {} parameter(s), root {}", comp->name(), role, comp->instructionCount(),
               comp->parameterCount(), comp->root() ? comp->root()->shape().toString() : "-");
  }
  appendLine(out, "instructions by opcode:");
  for (const auto& [opcode, count] : opcodeCounts(module)) appendLine(out, "  {:<28} {:>7}", opcode, count);
  appendLine(out, "parameters:");
  int64_t inputBytes = 0;
  for (const HloInstruction* p : entryParameters(module)) {
    inputBytes += p->shape().byteSize();
    appendLine(out, "  {:>3} {:<24} {:<32} {}", p->parameterNumber(), p->name(), p->shape().toString(),
               humanBytes(p->shape().byteSize()));
  }
  appendLine(out, "  total {}", humanBytes(inputBytes));
  if (module.entry() && module.entry()->root()) {
    const core::Shape& out0 = module.entry()->root()->shape();
    appendLine(out, "output:");
    if (out0.isTuple()) {
      for (int i = 0; i < out0.tupleSize(); ++i) {
        appendLine(out, "  {:>3} {:<32} {}", i, out0.tupleElement(i).toString(),
                   humanBytes(out0.tupleElement(i).byteSize()));
      }
    } else {
      appendLine(out, "  {:<36} {}", out0.toString(), humanBytes(out0.byteSize()));
    }
    appendLine(out, "  total {}", humanBytes(out0.byteSize()));
  }
  std::vector<SourceCount> sources = sourceCounts(module);
  if (!sources.empty()) {
    appendLine(out, "sources (instructions per line of the program):");
    for (size_t i = 0; i < std::min(sources.size(), kSourcesShown); ++i)
      appendLine(out, "  {:>7}  {}", sources[i].instructions, sources[i].location.toString());
    if (sources.size() > kSourcesShown) appendLine(out, "  ... {} more", sources.size() - kSourcesShown);
  }
  return out;
}

std::string moduleInfoJson(const HloModule& module) {
  nlohmann::ordered_json j;
  j["module"] = module.name();
  j["entry"] = module.entry() ? module.entry()->name() : "";
  j["instruction_count"] = module.instructionCount();
  nlohmann::ordered_json comps = nlohmann::ordered_json::array();
  for (const auto& comp : module.computations()) {
    comps.push_back({{"name", comp->name()},
                     {"entry", comp->isEntry()},
                     {"fused", comp->isFusionComputation()},
                     {"instructions", comp->instructionCount()},
                     {"parameters", comp->parameterCount()}});
  }
  j["computations"] = comps;
  nlohmann::ordered_json opcodes = nlohmann::ordered_json::object();
  for (const auto& [opcode, count] : opcodeCounts(module)) opcodes[opcode] = count;
  j["opcodes"] = opcodes;
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const HloInstruction* p : entryParameters(module)) {
    params.push_back({{"number", p->parameterNumber()},
                      {"name", p->name()},
                      {"shape", p->shape().toString()},
                      {"bytes", p->shape().byteSize()}});
  }
  j["parameters"] = params;
  if (module.entry() && module.entry()->root()) {
    j["output"] = {{"shape", module.entry()->root()->shape().toString()},
                   {"bytes", module.entry()->root()->shape().byteSize()}};
  }
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (const SourceCount& source : sourceCounts(module)) {
    sources.push_back({{"file", source.location.file},
                       {"line", source.location.line},
                       {"column", source.location.column},
                       {"function", source.location.function},
                       {"instructions", source.instructions}});
  }
  if (!sources.empty()) j["sources"] = sources;
  return jsonOutputText(j, 2) + "\n";
}

}  // namespace fusionscope::cli
