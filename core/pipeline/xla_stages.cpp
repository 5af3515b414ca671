#include "core/pipeline/xla_stages.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/base/file_util.h"
#include "core/base/json_output.h"
#include "core/text/hlo_parser.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kBefore = "before_optimizations";
constexpr std::string_view kAfter = "after_optimizations";
constexpr std::string_view kPrefix = "module_";

bool isDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t toInt(std::string_view digits) {
  int64_t value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

// A module or step number in a `module_NNNN.NAME.SSSS....` name too large for int64 (it read as 0, and the stages
// lost their order): the digits, else empty.
std::string overflowingNumber(std::string_view stem) {
  for (size_t i = 0; i < stem.size();) {
    if (stem[i] < '0' || stem[i] > '9') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < stem.size() && stem[j] >= '0' && stem[j] <= '9') ++j;
    std::string_view digits = stem.substr(i, j - i);
    int64_t value = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), value).ec == std::errc::result_out_of_range) {
      return std::string(digits);
    }
    i = j;
  }
  return {};
}

// What follows `module_NNNN.NAME.` in a stage file's name (extension removed); nullopt for other files.
std::optional<XlaDumpFile> classify(std::string_view rest) {
  XlaDumpFile file;
  if (rest == kBefore) {
    file.kind = XlaDumpFile::Kind::kBeforeOptimizations;
    file.pass = std::string(kBefore);
    return file;
  }
  // `cpu_after_optimizations`, `gpu_after_optimizations`, `sm_9.0_gpu_after_optimizations`; not the
  // `...after_optimizations-buffer-assignment` reports.
  if (rest.size() >= kAfter.size() && rest.substr(rest.size() - kAfter.size()) == kAfter) {
    std::string_view backend = rest.substr(0, rest.size() - kAfter.size());
    if (!backend.empty() && backend.back() != '_') return std::nullopt;
    file.kind = XlaDumpFile::Kind::kAfterOptimizations;
    file.pass = std::string(rest);
    return file;
  }
  // `SSSS.PIPELINE.after_PASS[.before_NEXT]`
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot < 4 || !isDigits(rest.substr(0, dot))) return std::nullopt;
  std::string_view tail = rest.substr(dot + 1);
  size_t after = tail.find(".after_");
  if (after == std::string_view::npos || after == 0) return std::nullopt;
  file.kind = XlaDumpFile::Kind::kAfterPass;
  file.step = toInt(rest.substr(0, dot));
  file.pipeline = std::string(tail.substr(0, after));
  std::string_view passes = tail.substr(after + 7);
  size_t before = passes.find(".before_");
  file.pass = std::string(passes.substr(0, before));
  if (before != std::string_view::npos) file.nextPass = std::string(passes.substr(before + 8));
  if (file.pass.empty()) return std::nullopt;
  return file;
}

struct NamedFile {
  int64_t id = 0;
  std::string name;
  XlaDumpFile file;
};

// `module_NNNN.NAME.REST`: NAME is taken from the module's before_optimizations file when there is one
// (`known`), else from the leftmost split that leaves a stage name.
std::optional<NamedFile> parseFileName(std::string_view stem, const std::multimap<int64_t, std::string>& known) {
  if (stem.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view afterPrefix = stem.substr(kPrefix.size());
  size_t dot = afterPrefix.find('.');
  if (dot == std::string_view::npos || !isDigits(afterPrefix.substr(0, dot))) return std::nullopt;
  NamedFile out;
  out.id = toInt(afterPrefix.substr(0, dot));
  std::string_view named = afterPrefix.substr(dot + 1);  // NAME.REST
  // Two modules may share a number (two processes dumping into one directory): the longest known name that fits.
  const std::string* fits = nullptr;
  for (auto [it, end] = known.equal_range(out.id); it != end; ++it) {
    const std::string& name = it->second;
    if (named.size() > name.size() + 1 && named.substr(0, name.size()) == name && named[name.size()] == '.' &&
        (!fits || name.size() > fits->size())) {
      fits = &name;
    }
  }
  if (fits) {
    std::optional<XlaDumpFile> file = classify(named.substr(fits->size() + 1));
    if (!file) return std::nullopt;
    out.name = *fits;
    out.file = std::move(*file);
    return out;
  }
  for (size_t split = named.find('.'); split != std::string_view::npos; split = named.find('.', split + 1)) {
    if (split == 0) continue;
    if (std::optional<XlaDumpFile> file = classify(named.substr(split + 1))) {
      out.name = std::string(named.substr(0, split));
      out.file = std::move(*file);
      return out;
    }
  }
  return std::nullopt;
}

bool isStageExtension(const fs::path& path) {
  return path.extension() == ".txt" || path.extension() == ".dot";
}

// XLA's order: before_optimizations, per-pass files by step, after_optimizations.
bool xlaOrder(const XlaDumpFile& a, const XlaDumpFile& b) {
  auto rank = [](const XlaDumpFile& f) {
    return f.kind == XlaDumpFile::Kind::kBeforeOptimizations ? 0 : f.kind == XlaDumpFile::Kind::kAfterPass ? 1 : 2;
  };
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  if (a.step != b.step) return a.step < b.step;
  return a.pass < b.pass;
}

std::string describe(const XlaDumpFile& file) {
  switch (file.kind) {
    case XlaDumpFile::Kind::kBeforeOptimizations: return "XLA: before optimizations";
    case XlaDumpFile::Kind::kAfterOptimizations: {
      std::string backend = file.pass.substr(0, file.pass.size() - kAfter.size());
      if (!backend.empty()) backend.pop_back();
      return backend.empty() ? "XLA: after optimizations" : fmt::format("XLA {}: after optimizations", backend);
    }
    case XlaDumpFile::Kind::kAfterPass: break;
  }
  std::string after = file.pass == "pipeline-start" ? "pipeline start" : fmt::format("after {}", file.pass);
  std::string before = file.nextPass.empty()             ? std::string()
                       : file.nextPass == "pipeline-end" ? ", pipeline end"
                                                         : fmt::format(", before {}", file.nextPass);
  return fmt::format("{}: {}{}", file.pipeline, after, before);
}

std::string joinNames(const std::vector<std::string>& names) {
  constexpr size_t kShown = 6;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  if (names.size() > kShown) out += fmt::format(" and {} more", names.size() - kShown);
  return out;
}

// The fusions XLA formed or grew in this stage, one decision per instruction that went into a fusion, with a
// reason naming the whole group.
std::vector<FusionDecision> inferDecisions(const Stage& stage) {
  std::map<std::string, std::vector<std::string>> byFusion;
  std::vector<std::string> order;
  for (const StageChanges::FusedInto& fused : stage.changes.fused) {
    auto [it, inserted] = byFusion.try_emplace(fused.fusion);
    if (inserted) order.push_back(fused.fusion);
    it->second.push_back(fused.instruction);
  }
  std::unordered_map<std::string, const FusionSummary*> summaries;
  for (const FusionSummary& summary : stage.fusions) {
    bool entry = stage.module && stage.module->entry() && stage.module->entry()->name() == summary.computation;
    summaries.emplace(entry ? summary.name : fmt::format("{}/{}", summary.computation, summary.name), &summary);
  }
  std::vector<FusionDecision> decisions;
  for (const std::string& fusion : order) {
    const std::vector<std::string>& members = byFusion[fusion];
    std::string reason =
        fmt::format("XLA fused {} into {} in pass {} (inferred from XLA's dump: XLA does not record why)",
                    joinNames(members), fusion, stage.pass);
    for (const std::string& member : members) {
      FusionDecision decision;
      decision.pass = stage.pass;
      size_t slash = fusion.find('/');
      decision.computation =
          slash == std::string::npos
              ? (stage.module && stage.module->entry() ? stage.module->entry()->name() : std::string())
              : fusion.substr(0, slash);
      decision.producer = member;
      decision.consumer = fusion;
      decision.fused = true;
      decision.fusion = fusion;
      if (auto it = summaries.find(fusion); it != summaries.end()) decision.kind = it->second->kind;
      decision.reason = reason;
      decisions.push_back(std::move(decision));
    }
  }
  return decisions;
}

// XLA's DOT dumps name their file in the graph's label: without that line, two dumps of an unchanged module are
// the same text.
std::string withoutGraphLabel(const std::string& dot) {
  size_t at = dot.find("\nlabel = ");
  if (at == std::string::npos) return dot;
  size_t end = dot.find('\n', at + 1);
  return dot.substr(0, at) + (end == std::string::npos ? std::string() : dot.substr(end));
}

// Node and cluster statements of an XLA DOT dump (`123 [label=...`, `subgraph cluster_123 {`): its instructions
// and fusions, near enough to show counts for a stage dumped only as DOT.
void countDotStatements(const std::string& dot, int64_t& nodes, int64_t& clusters) {
  nodes = 0;
  clusters = 0;
  size_t start = 0;
  while (start < dot.size()) {
    size_t end = dot.find('\n', start);
    if (end == std::string::npos) end = dot.size();
    std::string_view line(dot.data() + start, end - start);
    size_t digits = line.find_first_not_of("0123456789");
    if (digits != std::string_view::npos && digits > 0 && line.substr(digits, 8) == " [label=") ++nodes;
    if (line.find("subgraph cluster_") != std::string_view::npos) ++clusters;
    start = end + 1;
  }
}

}  // namespace

int64_t XlaDumpModule::passFileCount() const {
  return std::count_if(files.begin(), files.end(),
                       [](const XlaDumpFile& f) { return f.kind == XlaDumpFile::Kind::kAfterPass; });
}

bool isXlaDumpDirectory(const std::string& path) {
  std::error_code error;
  if (!fs::is_directory(path, error)) return false;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
    const fs::path& file = entry.path();
    if (!isStageExtension(file)) continue;
    if (parseFileName(file.stem().string(), {})) return true;
  }
  return false;
}

StatusOr<XlaDumpDirectory> scanXlaDumpDirectory(const std::string& path) {
  std::error_code error;
  if (!fs::is_directory(path, error)) return Status::error(fmt::format("{}: error: not a directory", path));
  std::vector<fs::path> candidates;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    const fs::path& file = it->path();
    if (isStageExtension(file) && file.filename().string().rfind(kPrefix, 0) == 0) candidates.push_back(file);
  }
  if (error) return Status::error(fmt::format("{}: error: cannot list: {}", path, error.message()));
  std::sort(candidates.begin(), candidates.end());

  for (const fs::path& file : candidates) {
    if (const std::string digits = overflowingNumber(file.stem().string()); !digits.empty()) {
      return Status::badInput(
          fmt::format("{}: error: the number {} in its name is larger than XLA writes (at most "
                      "2^63-1); the stages' order cannot be read from it",
                      file.string(), digits));
    }
  }
  // Names from the before_optimizations files first: a module's name may contain dots.
  std::multimap<int64_t, std::string> known;
  for (const fs::path& file : candidates) {
    std::string stem = file.stem().string();
    if (stem.size() <= kBefore.size() + 1 || stem.compare(stem.size() - kBefore.size(), kBefore.size(), kBefore) != 0)
      continue;
    if (std::optional<NamedFile> named = parseFileName(stem, {})) {
      if (named->file.kind == XlaDumpFile::Kind::kBeforeOptimizations) known.emplace(named->id, named->name);
    }
  }

  // Keyed by number and name: two modules with one number (two runs into one directory) stay apart.
  std::map<std::pair<int64_t, std::string>, XlaDumpModule> modules;
  for (const fs::path& file : candidates) {
    std::optional<NamedFile> named = parseFileName(file.stem().string(), known);
    if (!named) continue;
    XlaDumpModule& module = modules[{named->id, named->name}];
    module.id = named->id;
    if (module.name.empty()) module.name = named->name;
    auto same = std::find_if(module.files.begin(), module.files.end(), [&](const XlaDumpFile& f) {
      return f.kind == named->file.kind && f.step == named->file.step && f.pipeline == named->file.pipeline &&
             f.pass == named->file.pass && f.nextPass == named->file.nextPass;
    });
    XlaDumpFile& target = same != module.files.end() ? *same : module.files.emplace_back(std::move(named->file));
    (file.extension() == ".txt" ? target.textPath : target.dotPath) = file.string();
  }
  if (modules.empty()) {
    return Status::error(fmt::format(
        "{}: error: no HLO dump of XLA's here (expected files named module_NNNN.NAME.before_optimizations.txt, "
        "...after_optimizations.txt or per-pass dumps; write them with XLA_FLAGS=\"--xla_dump_to=DIR "
        "--xla_dump_hlo_pass_re=.* --xla_dump_hlo_as_text\")",
        path));
  }
  XlaDumpDirectory out;
  out.path = path;
  for (auto& [id, module] : modules) {
    std::stable_sort(module.files.begin(), module.files.end(), xlaOrder);
    out.modules.push_back(std::move(module));
  }
  return out;
}

std::string describeXlaModules(const XlaDumpDirectory& directory) {
  std::string out;
  for (const XlaDumpModule& module : directory.modules) {
    bool text =
        std::all_of(module.files.begin(), module.files.end(), [](const XlaDumpFile& f) { return !f.textPath.empty(); });
    out += fmt::format("  {:04} {}: {} per-pass dump(s), {} file(s) in all{}\n", module.id, module.name,
                       module.passFileCount(), module.files.size(), text ? "" : " (some DOT only)");
  }
  return out;
}

StatusOr<const XlaDumpModule*> selectXlaModule(const XlaDumpDirectory& directory, std::string_view selector) {
  const XlaDumpModule* best = nullptr;
  // JAX's own helpers (`jax.random`'s `_uniform`, `_one_hot`, ...) are private functions, `jit__NAME`: by default
  // the user's function wins over them whatever their pass counts.
  auto helper = [](const XlaDumpModule& module) { return module.name.rfind("jit__", 0) == 0; };
  auto consider = [&](const XlaDumpModule& module) {
    if (!best || (selector.empty() && helper(*best) && !helper(module))) {
      best = &module;
      return;
    }
    if (selector.empty() && helper(module) && !helper(*best)) return;
    if (module.passFileCount() >= best->passFileCount()) best = &module;
  };
  for (const XlaDumpModule& module : directory.modules) {
    if (selector.empty() || module.name == selector) consider(module);
  }
  if (!best && isDigits(selector)) {
    int64_t id = toInt(selector);
    int matches = 0;
    for (const XlaDumpModule& module : directory.modules) {
      if (module.id == id) {
        best = &module;
        ++matches;
      }
    }
    if (matches > 1) {
      return Status::error(fmt::format("{}: error: {} modules have number {}; choose one by name:\n{}", directory.path,
                                       matches, selector, describeXlaModules(directory)));
    }
  }
  if (!best) {
    return Status::error(fmt::format("{}: error: no module '{}' in this dump; it holds:\n{}", directory.path, selector,
                                     describeXlaModules(directory)));
  }
  return best;
}

StatusOr<XlaStages> loadXlaStages(const XlaDumpDirectory& directory, const XlaDumpModule& module,
                                  const XlaStagesOptions& options) {
  XlaStages out;
  out.directory = directory.path;
  out.moduleName = module.name;
  out.moduleId = module.id;
  out.run.pipeline = "xla";
  std::string previousText;
  std::shared_ptr<const HloModule> previousModule;
  int total = static_cast<int>(module.files.size());
  for (int i = 0; i < total; ++i) {
    if (options.cancelled && options.cancelled()) return Status::error("cancelled");
    const XlaDumpFile& file = module.files[static_cast<size_t>(i)];
    if (options.progress) options.progress("reading " + fs::path(file.path()).filename().string(), i, total);
    Stage stage;
    stage.index = i;
    stage.pass = file.pass;
    stage.passPath = file.pipeline.empty() ? file.pass : fmt::format("{}/{}", file.pipeline, file.pass);
    stage.nextPass = file.nextPass;
    stage.description = describe(file);
    bool changed = true;
    // With keepGoing, a file that fails becomes a stage saying why; without, the load fails.
    auto failed = [&](const Status& status) -> bool {
      if (!options.keepGoing) return false;
      stage.loadError = status.message();
      out.changed.push_back(true);
      out.files.push_back(file);
      out.run.stages.push_back(std::move(stage));
      return true;
    };
    if (!file.textPath.empty()) {
      StatusOr<std::string> text = readFile(file.textPath);
      if (!text.ok()) {
        if (failed(text.status())) continue;
        return text.status();
      }
      if (previousModule && *text == previousText) {
        changed = false;
        stage.module = previousModule;  // XLA dumps the module unchanged at every pipeline start
      } else {
        StatusOr<std::unique_ptr<HloModule>> parsed = parseHloModule(*text, file.textPath);
        if (!parsed.ok()) {
          if (failed(parsed.status())) continue;
          return parsed.status();
        }
        (*parsed)->updateFusionComputationFlags();
        stage.module = std::shared_ptr<const HloModule>(std::move(*parsed));
      }
      fillStageCounts(stage, *stage.module);
      if (previousModule && changed) stage.changes = diffModules(*previousModule, *stage.module);
      stage.decisions = inferDecisions(stage);
      previousText = std::move(*text);
      previousModule = stage.module;
    } else {
      StatusOr<std::string> dot = readFile(file.dotPath);
      if (!dot.ok()) {
        if (failed(dot.status())) continue;
        return dot.status();
      }
      std::string graph = withoutGraphLabel(*dot);
      changed = i == 0 || graph != previousText;
      countDotStatements(graph, stage.instructionCount, stage.fusionCount);
      previousText = std::move(graph);
      previousModule = nullptr;
    }
    out.changed.push_back(changed);
    out.files.push_back(file);
    out.run.stages.push_back(std::move(stage));
  }
  if (options.progress) options.progress("done", total, total);
  const auto loaded = std::find_if(out.run.stages.begin(), out.run.stages.end(),
                                   [](const Stage& stage) { return stage.loadError.empty(); });
  if (!out.run.stages.empty() && loaded == out.run.stages.end()) return Status::error(out.run.stages.front().loadError);
  return out;
}

std::string xlaStagesToJson(const XlaStages& stages) {
  using nlohmann::ordered_json;
  ordered_json root;
  root["schema"] = "fusionscope.xla-stages/1";
  root["module"] = stages.moduleName;
  root["module_id"] = stages.moduleId;
  root["directory"] = stages.directory;
  ordered_json list = ordered_json::array();
  for (size_t i = 0; i < stages.run.stages.size(); ++i) {
    const Stage& stage = stages.run.stages[i];
    const XlaDumpFile& file = stages.files[i];
    ordered_json s;
    s["index"] = stage.index;
    s["pass"] = stage.pass;
    s["pipeline"] = file.pipeline;
    s["next_pass"] = file.nextPass;
    s["step"] = file.step;
    s["label"] = stage.label();
    s["file"] = fs::path(file.path()).filename().string();
    s["instructions"] = stage.instructionCount;
    s["fusions"] = stage.fusionCount;
    s["dot_only"] = stage.module == nullptr;
    s["changed"] = static_cast<bool>(stages.changed[i]);
    s["added"] = stage.changes.added;
    s["removed"] = stage.changes.removed;
    ordered_json fused = ordered_json::array();
    for (const StageChanges::FusedInto& f : stage.changes.fused)
      fused.push_back({{"instruction", f.instruction}, {"fusion", f.fusion}});
    s["fused"] = fused;
    list.push_back(std::move(s));
  }
  root["stages"] = list;
  return jsonOutputText(root, 2) + "\n";
}

}  // namespace fusionscope::core
