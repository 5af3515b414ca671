#include "core/dump/dump_directory.h"

#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "core/base/file_util.h"
#include "core/dot/dot_writer.h"
#include "core/graphviz/graphviz_renderer.h"

namespace fusionscope::core {

StatusOr<DumpedStage> dumpStage(const HloModule& module, int index, std::string_view label,
                                const std::string& directory, const DumpOptions& options) {
  std::error_code ec;
  bool existed = std::filesystem::exists(directory, ec);
  if (Status made = makeDirectories(directory); !made.ok()) return made;
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

}  // namespace fusionscope::core
