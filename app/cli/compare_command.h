#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/pipeline/fusion_comparison.h"

namespace fusionscope::cli {

// `compare-fusions A B`: how A and B group the same ops into fusions (pairs fused in both / only in A / only in
// B, precision and recall, the differing groups side by side). With --pipeline, A is first run through that
// pipeline and each difference shows our decisions about it.
struct CompareCommand;

std::shared_ptr<CompareCommand> addCompareCommand(CLI::App& app);

// nullopt when the selected subcommand is not this one; else the exit code (0 ok, 1 output could not be written,
// 2 bad input).
std::optional<int> runCompareCommand(const CompareCommand& command);

// The report, for people and for scripts. `aLabel` says what A is ("a.hlo after the cpu pipeline").
std::string comparisonText(const core::FusionComparison& comparison, const std::string& aLabel,
                           const std::string& bLabel, bool withDecisions);
std::string comparisonJson(const core::FusionComparison& comparison, const std::string& aFile, const std::string& bFile,
                           const std::string& pipeline);

}  // namespace fusionscope::cli
