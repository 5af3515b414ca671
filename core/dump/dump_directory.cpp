#include "core/dump/dump_directory.h"

#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/base/file_util.h"
#include "core/dot/dot_writer.h"
#include "core/dot/scope_groups.h"
#include "core/graphviz/graphviz_renderer.h"
#include "core/text/hlo_printer.h"

namespace fusionscope::core {

StatusOr<DumpedStage> dumpStage(const HloModule& module, int index, std::string_view label,
                                const std::string& directory, const DumpOptions& options) {
  std::error_code ec;
  bool existed = std::filesystem::exists(directory, ec);
  FS_RETURN_IF_ERROR(makeDirectories(directory));
  // A directory this call created is removed again if nothing could be written into it.
  auto fail = [&](Status status) -> StatusOr<DumpedStage> {
    if (!existed) std::filesystem::remove(directory, ec);
    return status;
  };
  DumpedStage stage;
  std::string base = fmt::format("{}/hlo_graph_{}", directory, index);
  stage.dotPath = base + ".dot";
  std::string dot = writeDot(module);
  std::vector<graphviz::ImageFormat> formats;
  if (options.png) {
    stage.pngPath = base + ".png";
    formats.push_back(graphviz::ImageFormat::kPng);
  }
  if (options.svg) {
    stage.svgPath = base + ".svg";
    formats.push_back(graphviz::ImageFormat::kSvg);
  }
  std::vector<std::string> images;
  if (!formats.empty()) {
    // One layout serves every image (layout is most of the cost on big graphs).
    StatusOr<std::vector<std::string>> rendered = graphviz::renderDot(dot, formats, stage.dotPath);
    if (!rendered.ok()) return fail(rendered.status());
    images = std::move(*rendered);
  }
  std::vector<FileContent> files;
  files.push_back({stage.dotPath, std::move(dot)});
  for (size_t i = 0; i < formats.size(); ++i) {
    files.push_back({formats[i] == graphviz::ImageFormat::kPng ? stage.pngPath : stage.svgPath, std::move(images[i])});
  }
  if (Status written = writeFilesAtomic(files); !written.ok()) return fail(written);
  std::string computation = module.entry() ? module.entry()->name() : module.name();
  stage.consoleLine = fmt::format("computation {} [{}]: {}", computation, label, stage.dotPath);
  return stage;
}

namespace {

// The names of the files an earlier dump into `directory` wrote, as its stages.json lists them (relative to the
// directory, stages.json included); nullopt when there is no stages.json, and an empty set when there is one that
// is not ours (not JSON, no "schema").
std::optional<std::set<std::string>> filesOfEarlierDump(const std::string& directory) {
  const std::string index = directory + "/stages.json";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(index, ec))) return std::nullopt;
  std::set<std::string> names;
  StatusOr<std::string> text = readFile(index);
  if (!text.ok()) return names;
  const nlohmann::json root = nlohmann::json::parse(*text, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("schema") || !root.contains("stages") ||
      !root["stages"].is_array()) {
    return names;
  }
  names.insert("stages.json");
  for (const nlohmann::json& stage : root["stages"]) {
    if (!stage.is_object() || !stage.contains("files") || !stage["files"].is_object()) continue;
    for (const auto& [kind, name] : stage["files"].items()) {
      // Only plain names: a stages.json that names ../x or /x must not make us delete outside the directory.
      if (name.is_string() && name.get<std::string>().find('/') == std::string::npos) {
        names.insert(name.get<std::string>());
      }
    }
  }
  return names;
}

// The dump never replaces a file it did not write: each name it is about to write that exists in `directory` must
// be listed by an earlier dump's stages.json there. A folder of the user's own (module_7.txt, hlo_graph_42.png,
// another tool's stages.json) is refused before any work, with the first such file named.
Status checkOnlyOwnFilesReplaced(const std::string& directory, const std::vector<std::string>& names,
                                 const std::optional<std::set<std::string>>& earlier) {
  std::error_code ec;
  for (const std::string& name : names) {
    const std::filesystem::path path = std::filesystem::path(directory) / name;
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) continue;
    if (earlier && earlier->count(name) &&
        std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) {
      continue;
    }
    return Status::error(fmt::format(
        "{}: error: would replace {}, which no earlier dump into this directory wrote ({}); choose a new or empty "
        "directory, or move that file",
        directory, name,
        !earlier           ? "there is no stages.json"
        : earlier->empty() ? "its stages.json is not a FusionScope stages.json"
                           : "its stages.json does not list it, or it is not a regular file"));
  }
  return okStatus();
}

// A dump directory describes one run: stage files an earlier, longer dump left behind would contradict
// stages.json, so they go once the new files are in place. Only files that earlier dump's stages.json lists are
// removed: nothing the user put there.
void removeStaleStageFiles(const std::string& directory, const std::vector<FileContent>& written,
                           const std::optional<std::set<std::string>>& earlier) {
  if (!earlier) return;
  std::set<std::string> keep;
  for (const FileContent& file : written) keep.insert(std::filesystem::path(file.path).filename().string());
  static const std::regex kStageFile(R"((hlo_graph_\d+\.(dot|png|svg))|(module_\d+\.txt))");
  std::error_code ec;
  for (const std::string& name : *earlier) {
    const std::filesystem::path path = std::filesystem::path(directory) / name;
    if (std::regex_match(name, kStageFile) && !keep.count(name) &&
        std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) {
      std::filesystem::remove(path, ec);
    }
  }
}

}  // namespace

StatusOr<std::vector<DumpedStage>> dumpStages(const std::vector<StageDumpRequest>& stages, const std::string& directory,
                                              const StagesDumpOptions& options,
                                              const std::vector<std::pair<std::string, std::string>>& extraFiles) {
  std::error_code ec;
  bool existed = std::filesystem::exists(directory, ec);
  // One writer at a time: a second dump into this directory is refused while this one runs.
  DirectoryLock lock;
  if (existed) {
    StatusOr<DirectoryLock> locked = lockDirectory(directory);
    if (!locked.ok()) return locked.status();
    lock = std::move(*locked);
  }
  const std::optional<std::set<std::string>> earlier =
      existed ? filesOfEarlierDump(directory) : std::optional<std::set<std::string>>();
  if (existed) {
    std::vector<std::string> names;
    for (const StageDumpRequest& request : stages) {
      names.push_back(fmt::format("hlo_graph_{}.dot", request.index));
      if (options.png) names.push_back(fmt::format("hlo_graph_{}.png", request.index));
      if (options.svg) names.push_back(fmt::format("hlo_graph_{}.svg", request.index));
      if (options.moduleText) names.push_back(fmt::format("module_{}.txt", request.index));
    }
    for (const auto& extra : extraFiles) names.push_back(extra.first);
    FS_RETURN_IF_ERROR(checkOnlyOwnFilesReplaced(directory, names, earlier));
  }
  // A new directory is made only when the files are ready to go in (after rendering, which can take minutes): a dump
  // interrupted before then leaves nothing behind.
  auto fail = [&](Status status) -> StatusOr<std::vector<DumpedStage>> {
    if (!existed) {
      lock = DirectoryLock();
      std::filesystem::remove(std::filesystem::path(directory) / kDirectoryLockName, ec);
      std::filesystem::remove(directory, ec);
    }
    return status;
  };

  std::vector<graphviz::ImageFormat> formats;
  if (options.png) formats.push_back(graphviz::ImageFormat::kPng);
  if (options.svg) formats.push_back(graphviz::ImageFormat::kSvg);

  std::vector<DumpedStage> dumped(stages.size());
  std::vector<std::string> dots(stages.size());
  // Grouped: every stage by the first stage's groups, opened as the first view opens them.
  std::optional<ScopeTree> reference;
  std::set<std::string> expanded;
  if (options.groupScopes && !stages.empty() && stages.front().module->entry() != nullptr) {
    reference = buildScopeTree(*stages.front().module->entry());
    expanded = reference->autoExpanded(kFirstViewNodes);
  }
  auto dotOf = [&](const HloModule& module) {
    if (!reference || module.entry() == nullptr) return writeDot(module);
    const ScopeTree tree = buildScopeTree(*module.entry(), &*reference);
    return renderDot(buildGroupedDotGraph(module, DotOptions{}, tree, expanded));
  };
  std::vector<FileContent> files;
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageDumpRequest& request = stages[i];
    DumpedStage& stage = dumped[i];
    stage.index = request.index;
    std::string base = fmt::format("{}/hlo_graph_{}", directory, request.index);
    stage.dotPath = base + ".dot";
    if (options.png) stage.pngPath = base + ".png";
    if (options.svg) stage.svgPath = base + ".svg";
    dots[i] = dotOf(*request.module);
    if (options.moduleText) {
      stage.modulePath = fmt::format("{}/module_{}.txt", directory, request.index);
      files.push_back({stage.modulePath, printModule(*request.module)});
    }
    std::string computation = request.module->entry() ? request.module->entry()->name() : request.module->name();
    stage.consoleLine = fmt::format("computation {} [{}]: {}", computation, request.label, stage.dotPath);
  }
  if (!formats.empty()) {
    std::vector<graphviz::RenderJob> jobs;
    for (size_t i = 0; i < stages.size(); ++i) jobs.push_back({dots[i], formats, dumped[i].dotPath});
    int processes = options.processes > 0 ? options.processes : static_cast<int>(std::thread::hardware_concurrency());
    StatusOr<std::vector<std::vector<std::string>>> images = graphviz::renderDotBatch(jobs, processes);
    if (!images.ok()) return fail(images.status());
    for (size_t i = 0; i < stages.size(); ++i) {
      for (size_t f = 0; f < formats.size(); ++f) {
        const std::string& path = formats[f] == graphviz::ImageFormat::kPng ? dumped[i].pngPath : dumped[i].svgPath;
        files.push_back({path, std::move((*images)[i][f])});
      }
    }
  }
  for (size_t i = 0; i < stages.size(); ++i) files.push_back({dumped[i].dotPath, std::move(dots[i])});
  for (const auto& [name, content] : extraFiles) files.push_back({fmt::format("{}/{}", directory, name), content});
  if (!existed) {
    StatusOr<DirectoryLock> locked = lockDirectory(directory);  // creates it
    if (!locked.ok()) return fail(locked.status());
    lock = std::move(*locked);
  }
  if (Status written = writeFilesAtomic(files); !written.ok()) return fail(written);
  removeStaleStageFiles(directory, files, earlier);
  return dumped;
}

}  // namespace fusionscope::core
