#include "core/dump/dump_directory.h"

#include <filesystem>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/base/file_util.h"
#include "core/dot/dot_writer.h"
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

// A dump directory describes one run: stage files a previous, longer run left behind would contradict
// stages.json, so they go once the new files are in place.
void removeStaleStageFiles(const std::string& directory, const std::vector<FileContent>& written) {
  std::set<std::string> keep;
  for (const FileContent& file : written) keep.insert(std::filesystem::path(file.path).filename().string());
  static const std::regex kStageFile(R"((hlo_graph_\d+\.(dot|png|svg))|(module_\d+\.txt))");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && std::regex_match(name, kStageFile) && !keep.count(name)) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

}  // namespace

StatusOr<std::vector<DumpedStage>> dumpStages(const std::vector<StageDumpRequest>& stages, const std::string& directory,
                                              const StagesDumpOptions& options,
                                              const std::vector<std::pair<std::string, std::string>>& extraFiles) {
  std::error_code ec;
  bool existed = std::filesystem::exists(directory, ec);
  FS_RETURN_IF_ERROR(makeDirectories(directory));
  auto fail = [&](Status status) -> StatusOr<std::vector<DumpedStage>> {
    if (!existed) std::filesystem::remove(directory, ec);
    return status;
  };

  std::vector<graphviz::ImageFormat> formats;
  if (options.png) formats.push_back(graphviz::ImageFormat::kPng);
  if (options.svg) formats.push_back(graphviz::ImageFormat::kSvg);

  std::vector<DumpedStage> dumped(stages.size());
  std::vector<std::string> dots(stages.size());
  std::vector<FileContent> files;
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageDumpRequest& request = stages[i];
    DumpedStage& stage = dumped[i];
    stage.index = request.index;
    std::string base = fmt::format("{}/hlo_graph_{}", directory, request.index);
    stage.dotPath = base + ".dot";
    if (options.png) stage.pngPath = base + ".png";
    if (options.svg) stage.svgPath = base + ".svg";
    dots[i] = writeDot(*request.module);
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
  if (Status written = writeFilesAtomic(files); !written.ok()) return fail(written);
  removeStaleStageFiles(directory, files);
  return dumped;
}

}  // namespace fusionscope::core
