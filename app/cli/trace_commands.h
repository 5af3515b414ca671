#pragma once

#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

namespace fusionscope::cli {

// The trace subcommands (`stats`, `compare`): they read Chrome traces through fs_profiler and never load HLO.
struct TraceCommands;

// Registers the subcommands on `app`; the returned object holds their options and must outlive parsing.
std::shared_ptr<TraceCommands> addTraceCommands(CLI::App& app);

// After parsing: runs the selected trace subcommand and returns its exit code (0 ok, 1 output could not be
// written, 2 a trace or stages.json could not be read, with a one-line message on stderr); nullopt when the
// selected subcommand is not a trace subcommand.
std::optional<int> runTraceCommands(const TraceCommands& commands);

}  // namespace fusionscope::cli
