#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace fusionscope::cli {

// `stages DIR`: XLA's own pipeline, read from a directory written by `--xla_dump_to`, one line (or JSON object)
// per stage.
struct XlaCommands;

std::shared_ptr<XlaCommands> addXlaCommands(CLI::App& app);

// nullopt when the selected subcommand is not one of these; else the exit code (0 ok, 1 output could not be
// written, 2 bad input).
std::optional<int> runXlaCommands(const XlaCommands& commands);

struct XlaDumpArgs {
  std::string directory;   // the --xla_dump_to directory to read
  std::string module;      // --module
  std::string output;      // -o
  std::string passRegex;   // --dump-pass-re
  bool png = false;
  bool svg = false;
  int jobs = 0;
  bool groupScopes = false;  // --group-scopes
};

// `dump XLA_DIR -o OUT`: writes XLA's stages as FusionScope's hlo_graph_N.dot / module_N.txt / stages.json, so
// the viewer and every tool read them alike.
int runXlaDump(const XlaDumpArgs& args);

// Registers on `dump` the `--xla_dump_*` flags XLA users type that FusionScope does not implement; after parsing,
// noteIgnoredXlaFlags prints one line per flag given, saying it is ignored.
struct IgnoredXlaFlags;
std::shared_ptr<IgnoredXlaFlags> addIgnoredXlaFlags(CLI::App* command);
void noteIgnoredXlaFlags(const IgnoredXlaFlags& flags);

}  // namespace fusionscope::cli
