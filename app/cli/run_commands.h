#pragma once

#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

namespace fusionscope::cli {

// `run` (execute a module on the CPU through fs_codegen, check it against the evaluator, time its kernels, write
// a Chrome trace through fs_profiler, run a training step in a loop with --loop). The CLI is the only place that joins
// fs_codegen and fs_profiler.
struct RunCommands;

// Registers the subcommands on `app`; the returned object holds their options and must outlive parsing.
std::shared_ptr<RunCommands> addRunCommands(CLI::App& app);

// After parsing: runs the selected subcommand and returns its exit code (0 ok; 1 the work failed: an opcode
// codegen cannot lower, a result that disagrees with the evaluator, a file that cannot be written; 2 bad input);
// nullopt when the selected subcommand is not `run`.
std::optional<int> runRunCommands(const RunCommands& commands);

}  // namespace fusionscope::cli
