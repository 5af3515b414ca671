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
  std::vector<FileContent> files;
  files.push_back({stage.dotPath, dot});
  auto render = [&](graphviz::ImageFormat format, std::string path) -> Status {
    StatusOr<std::string> image = graphviz::renderDot(dot, format, stage.dotPath);
    if (!image.ok()) return image.status();
    files.push_back({path, std::move(*image)});
    return okStatus();
  };
  if (options.png) {
    stage.pngPath = base + ".png";
    if (Status s = render(graphviz::ImageFormat::kPng, stage.pngPath); !s.ok()) return fail(s);
  }
  if (options.svg) {
    stage.svgPath = base + ".svg";
    if (Status s = render(graphviz::ImageFormat::kSvg, stage.svgPath); !s.ok()) return fail(s);
  }
  if (Status written = writeFilesAtomic(files); !written.ok()) return fail(written);
  std::string computation = module.entry() ? module.entry()->name() : module.name();
  stage.consoleLine = fmt::format("computation {} [{}]: {}", computation, label, stage.dotPath);
  return stage;
}

}  // namespace fusionscope::core
