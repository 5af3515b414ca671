// fusionscope-cli: headless access to everything FusionScope does. Exit codes: 0 ok, 1 the work failed
// (e.g. a file could not be written), 2 bad usage or bad input (unknown flag, malformed HLO, missing file).
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/cli/info_command.h"
#include "core/base/file_util.h"
#include "core/dump/dump_directory.h"
#include "core/ir/hlo_verifier.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"

namespace {

using namespace fusionscope;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

// Parses and (unless disabled) verifies; prints the error and returns null on bad input.
std::unique_ptr<core::HloModule> loadModule(const std::string& path, bool verify) {
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModuleFile(path);
  if (!module.ok()) {
    fmt::print(stderr, "{}\n", module.message());
    return nullptr;
  }
  if (verify) {
    if (Status verified = core::verifyModule(**module); !verified.ok()) {
      fmt::print(stderr, "{}: {}\n(use --no-verify to load it anyway)\n", path, verified.message());
      return nullptr;
    }
  }
  return std::move(*module);
}

// Writes to stdout, or atomically to a file when `output` is set.
int emit(const std::string& text, const std::string& output) {
  if (output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitFailed;
  }
  if (Status s = writeFileAtomic(output, text); !s.ok()) {
    fmt::print(stderr, "{}\n", s.message());
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FusionScope: watch a tensor compiler fuse an HLO graph.", "fusionscope-cli"};
  app.set_version_flag("--version", std::string("fusionscope-cli ") + FS_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  std::string input;
  std::string output;
  bool noVerify = false;

  CLI::App* dump = app.add_subcommand("dump", "Write the module's graph as DIR/hlo_graph_0.dot (and PNG/SVG)");
  bool png = false;
  bool svg = false;
  dump->add_option("module", input, "HLO text file")->required()->check(CLI::ExistingFile);
  dump->add_option("-o,--output", output, "Dump directory (created if missing)")->required();
  dump->add_flag("--png", png, "Also render hlo_graph_N.png in-process with Graphviz");
  dump->add_flag("--svg", svg, "Also render hlo_graph_N.svg in-process with Graphviz");
  dump->add_flag("--no-verify", noVerify, "Skip the verifier (draw malformed modules as they are)");

  CLI::App* print = app.add_subcommand("print", "Print the module as canonical HLO text");
  print->add_option("module", input, "HLO text file")->required()->check(CLI::ExistingFile);
  print->add_option("-o,--output", output, "Write to this file instead of stdout (atomically)");
  print->add_flag("--no-verify", noVerify, "Skip the verifier");

  CLI::App* info = app.add_subcommand("info", "Summarise computations, opcodes, parameters and outputs");
  bool json = false;
  info->add_option("module", input, "HLO text file")->required()->check(CLI::ExistingFile);
  info->add_flag("--json", json, "Machine-readable JSON");
  info->add_flag("--no-verify", noVerify, "Skip the verifier");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // --help and --version are successes; every real usage error is exit 2.
    return code == 0 ? kExitOk : kExitBadInput;
  }

  std::unique_ptr<core::HloModule> module = loadModule(input, !noVerify);
  if (!module) return kExitBadInput;

  if (*dump) {
    core::DumpOptions options;
    options.png = png;
    options.svg = svg;
    StatusOr<core::DumpedStage> stage = core::dumpStage(*module, 0, "pipeline start", output, options);
    if (!stage.ok()) {
      fmt::print(stderr, "{}\n", stage.message());
      return kExitFailed;
    }
    fmt::print("{}\n", stage->consoleLine);
    return kExitOk;
  }
  if (*print) return emit(core::printModule(*module), output);
  if (*info) return emit(json ? cli::moduleInfoJson(*module) : cli::moduleInfoText(*module), "");
  return kExitBadInput;
}
