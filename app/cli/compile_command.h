#pragma once

#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

namespace fusionscope::cli {

// `compile`: lowers a module ahead of time. `--target nvptx` writes a GPU bundle (PTX + launch plan,
// docs/BUNDLE.md); `--target x86-64|aarch64|host --cpp-class NS::NAME` writes NAME.h and NAME.o, a C++ class and the
// object that a program links with `c++ main.cpp NAME.o -lm` (docs/AOT.md).
struct CompileCommand;

std::shared_ptr<CompileCommand> addCompileCommand(CLI::App& app);

// After parsing: the exit code when `compile` was selected (0 ok, 1 the work failed, 2 bad input), else nullopt.
std::optional<int> runCompileCommand(const CompileCommand& command);

}  // namespace fusionscope::cli
