#include "viewer/document.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/base/file_util.h"
#include "core/graphviz/graphviz_renderer.h"
#include "core/ir/hlo_verifier.h"
#include "core/pipeline/pass_pipeline.h"
#include "core/pipeline/xla_stages.h"
#include "core/text/hlo_parser.h"

namespace fusionscope::viewer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Status cancelledStatus() {
  return Status::error("cancelled");
}

bool isCancelled(const LoadCallbacks& callbacks) {
  return callbacks.cancelled && callbacks.cancelled();
}

void report(const LoadCallbacks& callbacks, const std::string& what, int done, int total) {
  if (callbacks.progress) callbacks.progress(what, done, total);
}

// A stage that only rewrote attributes or reordered text changes no node of the graph; "hide unchanged" hides it.
bool structurallyChanged(const StageEntry& entry) {
  const core::StageChanges& changes = entry.changes;
  return entry.index > 0 && (!changes.added.empty() || !changes.removed.empty() || !changes.fused.empty() ||
                             changes.instructionDelta != 0);
}

// Instructions outside fusion computations: the operations that run on their own, as the graph draws them. The
// module's count includes every fusion's body, so a fusion pass reads as growth (+N+1 for N instructions fused).
int64_t unfusedInstructionCount(const core::HloModule& module) {
  std::set<const core::HloComputation*> fused;
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions())
      if (inst->fusedComputation() != nullptr) fused.insert(inst->fusedComputation());
  }
  int64_t count = 0;
  for (const auto& computation : module.computations())
    if (fused.count(computation.get()) == 0) count += computation->instructionCount();
  return count;
}

// Fills the stages' unfused counts and deltas (from the modules; a stage without one keeps the module-wide
// numbers it was given) and freezes the document.
std::shared_ptr<const Document> finished(std::shared_ptr<Document> document) {
  for (size_t i = 0; i < document->stages.size(); ++i) {
    StageEntry& stage = document->stages[i];
    stage.unfusedInstructionCount = stage.module ? unfusedInstructionCount(*stage.module) : stage.instructionCount;
    const StageEntry* previous = i > 0 ? &document->stages[i - 1] : nullptr;
    stage.unfusedDelta = previous != nullptr && previous->module && stage.module
                             ? stage.unfusedInstructionCount - previous->unfusedInstructionCount
                             : stage.changes.instructionDelta;
  }
  return document;
}

StageEntry entryFromStage(const core::Stage& stage) {
  StageEntry entry;
  entry.index = stage.index;
  entry.pass = stage.pass;
  entry.label = stage.label();
  entry.instructionCount = stage.instructionCount;
  entry.fusionCount = stage.fusionCount;
  entry.changes = stage.changes;
  entry.changed = structurallyChanged(entry);
  entry.decisions = stage.decisions;
  entry.fusions = stage.fusions;
  entry.module = stage.module;
  entry.loadError = stage.loadError;
  return entry;
}

std::string stringOr(const json& object, const char* key, std::string fallback = {}) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

int64_t intOr(const json& object, const char* key, int64_t fallback = 0) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return fallback;
  return it->get<int64_t>();
}

std::vector<std::string> stringList(const json& object, const char* key) {
  std::vector<std::string> out;
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return out;
  for (const json& item : *it) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

core::FusionDecision decisionFromJson(const json& object) {
  core::FusionDecision decision;
  decision.pass = stringOr(object, "pass");
  decision.computation = stringOr(object, "computation");
  decision.producer = stringOr(object, "producer");
  decision.consumer = stringOr(object, "consumer");
  auto fused = object.find("fused");
  decision.fused = fused != object.end() && fused->is_boolean() && fused->get<bool>();
  decision.fusion = stringOr(object, "fusion");
  if (auto kind = core::parseFusionKind(stringOr(object, "kind"))) decision.kind = *kind;
  decision.bytesSaved = intOr(object, "bytes_saved");
  decision.reason = stringOr(object, "reason");
  return decision;
}

// Reads one module_N.txt; a stage whose module does not parse is an error for the whole directory, because the
// stage list would otherwise silently show less than was dumped.
Status readStageModule(const fs::path& file, StageEntry& entry) {
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModuleFile(file.string());
  if (!module.ok()) return module.status();
  entry.module = std::shared_ptr<const core::HloModule>(std::move(*module));
  return okStatus();
}

StatusOr<std::shared_ptr<const Document>> loadStagesJson(const fs::path& directory, const LoadCallbacks& callbacks) {
  fs::path indexPath = directory / "stages.json";
  StatusOr<std::string> text = readFile(indexPath.string());
  if (!text.ok()) return text.status();
  json root = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return Status::error(indexPath.string() + ": error: not valid JSON");
  }
  std::string schema = stringOr(root, "schema");
  if (schema.rfind("fusionscope.stages/", 0) != 0) {
    return Status::error(indexPath.string() + ": error: unknown schema '" + schema +
                         "' (expected fusionscope.stages/1)");
  }
  auto stages = root.find("stages");
  if (stages == root.end() || !stages->is_array()) {
    return Status::error(indexPath.string() + ": error: no 'stages' array");
  }
  auto document = std::make_shared<Document>();
  document->kind = Document::Kind::kDumpDirectory;
  document->path = directory.string();
  document->pipeline = stringOr(root, "pipeline");
  int total = static_cast<int>(stages->size());
  int done = 0;
  for (const json& stage : *stages) {
    if (isCancelled(callbacks)) return cancelledStatus();
    report(callbacks, "reading stage " + std::to_string(done), done, total);
    ++done;
    if (!stage.is_object()) return Status::error(indexPath.string() + ": error: a stage is not an object");
    StageEntry entry;
    entry.index = static_cast<int>(intOr(stage, "index", done - 1));
    entry.pass = stringOr(stage, "pass");
    entry.label = stringOr(stage, "label");
    entry.instructionCount = intOr(stage, "instructions");
    entry.fusionCount = intOr(stage, "fusions");
    if (auto changes = stage.find("changes"); changes != stage.end() && changes->is_object()) {
      entry.changes.added = stringList(*changes, "added");
      entry.changes.removed = stringList(*changes, "removed");
      entry.changes.instructionDelta = intOr(*changes, "instruction_delta");
      if (auto fused = changes->find("fused"); fused != changes->end() && fused->is_array()) {
        for (const json& item : *fused) {
          if (item.is_object())
            entry.changes.fused.push_back({stringOr(item, "instruction"), stringOr(item, "fusion")});
        }
      }
    }
    if (auto decisions = stage.find("decisions"); decisions != stage.end() && decisions->is_array()) {
      for (const json& item : *decisions) {
        if (item.is_object()) entry.decisions.push_back(decisionFromJson(item));
      }
    }
    if (auto fusions = stage.find("fusion_list"); fusions != stage.end() && fusions->is_array()) {
      for (const json& item : *fusions) {
        if (!item.is_object()) continue;
        core::FusionSummary summary;
        summary.name = stringOr(item, "name");
        summary.computation = stringOr(item, "computation");
        summary.fusedComputation = stringOr(item, "fused_computation");
        summary.kind = core::parseFusionKind(stringOr(item, "kind")).value_or(core::FusionKind::kLoop);
        summary.members = stringList(item, "members");
        summary.operandCount = intOr(item, "operands");
        summary.outputCount = intOr(item, "outputs", 1);
        entry.fusions.push_back(std::move(summary));
      }
    }
    entry.changed = structurallyChanged(entry);
    json files = stage.value("files", json::object());
    if (!files.is_object()) files = json::object();
    std::string moduleFile = stringOr(files, "module");
    std::string dotFile = stringOr(files, "dot");
    if (!moduleFile.empty()) {
      FS_RETURN_IF_ERROR(readStageModule(directory / moduleFile, entry));
    } else if (!dotFile.empty()) {
      StatusOr<std::string> dot = readFile((directory / dotFile).string());
      if (!dot.ok()) return dot.status();
      entry.dotText = std::move(*dot);
      entry.dotSource = (directory / dotFile).string();
    } else {
      continue;  // not dumped (--dump-pass-re): nothing to show
    }
    document->stages.push_back(std::move(entry));
  }
  if (document->stages.empty()) return Status::error(indexPath.string() + ": error: no stage was dumped");
  return finished(std::move(document));
}

// hlo_graph_N.dot in N order; without any, every *.dot in name order (XLA's own dump file names).
StatusOr<std::shared_ptr<const Document>> loadDotDirectory(const fs::path& directory, const LoadCallbacks& callbacks) {
  static const std::regex kStageFile(R"(hlo_graph_(\d+)\.dot)");
  std::vector<std::pair<long, fs::path>> numbered;
  std::vector<fs::path> others;
  std::error_code error;
  for (const fs::directory_entry& file : fs::directory_iterator(directory, error)) {
    if (!file.is_regular_file()) continue;
    std::string name = file.path().filename().string();
    std::smatch match;
    if (std::regex_match(name, match, kStageFile)) {
      numbered.emplace_back(std::stol(match[1].str()), file.path());
    } else if (file.path().extension() == ".dot") {
      others.push_back(file.path());
    }
  }
  if (error) return Status::error(directory.string() + ": error: cannot list: " + error.message());
  std::vector<fs::path> files;
  if (!numbered.empty()) {
    std::sort(numbered.begin(), numbered.end());
    for (auto& [index, path] : numbered) files.push_back(path);
  } else {
    std::sort(others.begin(), others.end());
    files = others;
  }
  if (files.empty()) {
    return Status::error(directory.string() + ": error: neither stages.json nor any .dot file in this directory");
  }
  auto document = std::make_shared<Document>();
  document->kind = Document::Kind::kDumpDirectory;
  document->path = directory.string();
  for (size_t i = 0; i < files.size(); ++i) {
    if (isCancelled(callbacks)) return cancelledStatus();
    report(callbacks, "reading " + files[i].filename().string(), static_cast<int>(i), static_cast<int>(files.size()));
    StatusOr<std::string> dot = readFile(files[i].string());
    if (!dot.ok()) return dot.status();
    StageEntry entry;
    entry.index = static_cast<int>(i);
    entry.label = files[i].filename().string();
    entry.changed = i > 0 && *dot != document->stages.back().dotText;
    entry.dotText = std::move(*dot);
    entry.dotSource = files[i].string();
    document->stages.push_back(std::move(entry));
  }
  return finished(std::move(document));
}

// A directory written by XLA's --xla_dump_to: the module with the most per-pass dumps, stage by stage.
StatusOr<std::shared_ptr<const Document>> loadXlaDirectory(const fs::path& directory, const LoadCallbacks& callbacks) {
  StatusOr<core::XlaDumpDirectory> scanned = core::scanXlaDumpDirectory(directory.string());
  if (!scanned.ok()) return scanned.status();
  StatusOr<const core::XlaDumpModule*> module = core::selectXlaModule(*scanned, callbacks.xlaModule);
  if (!module.ok()) return module.status();
  core::XlaStagesOptions options;
  options.progress = callbacks.progress;
  options.cancelled = callbacks.cancelled;
  options.keepGoing = true;  // one truncated file marks its stage; the others open
  StatusOr<core::XlaStages> stages = core::loadXlaStages(*scanned, **module, options);
  if (!stages.ok()) return stages.status();
  auto document = std::make_shared<Document>();
  document->kind = Document::Kind::kDumpDirectory;
  document->path = directory.string();
  document->pipeline = "xla";
  document->xlaModule = (*module)->name;
  for (const core::XlaDumpModule& each : scanned->modules)
    document->xlaModules.push_back(fmt::format("{:04} {}", each.id, each.name));
  for (size_t i = 0; i < stages->run.stages.size(); ++i) {
    StageEntry entry = entryFromStage(stages->run.stages[i]);
    if (!entry.loadError.empty()) {
      entry.changed = false;
    } else if (!entry.module) {
      const std::string& dotPath = stages->files[i].dotPath;
      StatusOr<std::string> dot = readFile(dotPath);
      if (!dot.ok()) return dot.status();
      entry.dotText = std::move(*dot);
      entry.dotSource = dotPath;
      entry.changed = i > 0 && stages->changed[i];
    } else {
      entry.changed = entry.changed && stages->changed[i];
    }
    document->stages.push_back(std::move(entry));
  }
  return finished(std::move(document));
}

}  // namespace

StatusOr<std::shared_ptr<const Document>> loadHloModule(const std::string& path, const core::PipelineSpec& spec,
                                                        const LoadCallbacks& callbacks) {
  report(callbacks, "parsing " + fs::path(path).filename().string(), 0, 0);
  StatusOr<std::unique_ptr<core::HloModule>> parsed = core::parseHloModuleFile(path);
  if (!parsed.ok()) return parsed.status();
  core::HloModule& module = **parsed;
  FS_RETURN_IF_ERROR(core::verifyModule(module));
  if (isCancelled(callbacks)) return cancelledStatus();

  std::unique_ptr<core::PassPipeline> pipeline;
  if (spec.preset == "none" && spec.passes.empty()) {
    pipeline = std::make_unique<core::PassPipeline>("none");
  } else {
    StatusOr<std::unique_ptr<core::PassPipeline>> built = core::buildPipeline(spec);
    if (!built.ok()) return built.status();
    pipeline = std::move(*built);
  }
  int total = static_cast<int>(pipeline->leafPassNames().size());
  core::PassContext context(core::fusionConfigFor(core::backendFor(spec)));
  core::RunOptions options;
  options.progress = [&](const std::string& passPath, int done) {
    report(callbacks, "running " + passPath, done, std::max(total, done + 1));
  };
  StatusOr<core::PipelineRun> run = core::runPipeline(*pipeline, module, context, options);
  if (!run.ok()) return Status::error(path + ": " + run.message());
  if (isCancelled(callbacks)) return cancelledStatus();

  auto document = std::make_shared<Document>();
  document->kind = Document::Kind::kHloModule;
  document->path = path;
  document->pipeline = run->pipeline;
  for (const core::Stage& stage : run->stages) document->stages.push_back(entryFromStage(stage));
  return finished(std::move(document));
}

StatusOr<std::shared_ptr<const Document>> loadDumpDirectory(const std::string& path, const LoadCallbacks& callbacks) {
  fs::path directory(path);
  std::error_code error;
  if (!fs::is_directory(directory, error)) return Status::error(path + ": error: not a directory");
  if (fs::exists(directory / "stages.json", error)) return loadStagesJson(directory, callbacks);
  if (core::isXlaDumpDirectory(path)) return loadXlaDirectory(directory, callbacks);
  return loadDotDirectory(directory, callbacks);
}

StatusOr<std::shared_ptr<const Document>> loadDotFile(const std::string& path) {
  StatusOr<std::string> dot = readFile(path);
  if (!dot.ok()) return dot.status();
  StatusOr<graphviz::GraphLayout> layout = graphviz::layoutDot(*dot, path);
  if (!layout.ok()) return layout.status();
  auto document = std::make_shared<Document>();
  document->kind = Document::Kind::kDotFile;
  document->path = path;
  StageEntry entry;
  entry.label = fs::path(path).filename().string();
  entry.instructionCount = static_cast<int64_t>(layout->nodes.size());
  entry.dotText = std::move(*dot);
  entry.dotSource = path;
  document->stages.push_back(std::move(entry));
  return finished(std::move(document));
}

StatusOr<std::shared_ptr<const Document>> loadPath(const std::string& path, const core::PipelineSpec& spec,
                                                   const LoadCallbacks& callbacks) {
  std::error_code error;
  fs::path file(path);
  if (fs::is_directory(file, error)) return loadDumpDirectory(path, callbacks);
  if (!fs::exists(file, error)) return Status::error(path + ": error: no such file or directory");
  std::string extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
  if (extension == ".dot" || extension == ".gv") return loadDotFile(path);
  if (file.filename() == "stages.json") return loadDumpDirectory(file.parent_path().string(), callbacks);
  return loadHloModule(path, spec, callbacks);
}

}  // namespace fusionscope::viewer
