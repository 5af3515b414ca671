#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"

namespace fusionscope::viewer {

// One stage as the viewer shows it. Stages come from a pipeline run (module always set), from a dump
// directory (module set when module_N.txt was written, else only the DOT text), or from a single .dot file.
struct StageEntry {
  int index = 0;
  std::string pass;   // empty for stage 0
  std::string label;  // "after fusion, before dce"
  int64_t instructionCount = 0;
  int64_t fusionCount = 0;
  // Instructions outside fusion computations (instructionCount counts fusions' bodies too), and its change from
  // the stage before: what the stage list shows, so that fusing reads as a reduction.
  int64_t unfusedInstructionCount = 0;
  int64_t unfusedDelta = 0;
  // Nodes were added, removed or fused compared with the stage before (stage 0: false). A stage that only
  // rewrote attributes is not "changed" in this sense; "hide unchanged" hides it.
  bool changed = false;
  core::StageChanges changes;
  std::vector<core::FusionDecision> decisions;
  std::vector<core::FusionSummary> fusions;
  std::shared_ptr<const core::HloModule> module;  // may be null (DOT-only stage)
  std::string dotText;                            // DOT-only stages: the graph to lay out
  std::string dotSource;                          // its file name, for error messages
  // A stage of a dump directory whose file could not be read or parsed: why (file:line:col); no module, no graph.
  // The other stages open; this one says why when shown.
  std::string loadError;
};

// Everything loaded from one file or directory. Immutable once built, so worker threads may read it while the
// GUI thread shows it; shared by pointer.
struct Document {
  enum class Kind { kHloModule, kDumpDirectory, kDotFile };
  Kind kind = Kind::kHloModule;
  std::string path;      // what the user opened
  std::string pipeline;  // "gpu", "cpu", "custom", "none"; empty for DOT files
  std::vector<StageEntry> stages;
  // An XLA dump directory: the module shown (its name) and every module there, `NNNN NAME` (for a chooser).
  std::string xlaModule;
  std::vector<std::string> xlaModules;
};

// Reports progress of a load ("running gpu/fusion", done, total-or-0) and asks whether to stop. Called on the
// loading thread.
struct LoadCallbacks {
  std::function<void(const std::string& what, int done, int total)> progress;
  std::function<bool()> cancelled;
  // Which module of an XLA dump directory to show (name or number); empty: the default pick.
  std::string xlaModule;
};

// Parses an HLO module file, verifies it and runs `spec` on it, recording every stage. Errors carry the
// parser's FILE:LINE:COL message. A cancel request is honoured between passes' progress reports: the
// pipeline itself cannot be interrupted mid-pass, so the result is then discarded and "cancelled" returned.
StatusOr<std::shared_ptr<const Document>> loadHloModule(const std::string& path, const core::PipelineSpec& spec,
                                                        const LoadCallbacks& callbacks = {});
// A directory written by `fusionscope-cli dump` (stages.json + module_N.txt), by XLA's `--xla_dump_to` (its
// pipeline stage by stage, parsed from the per-pass .txt dumps; .dot where no text was dumped; the module with
// the most passes), or any set of hlo_graph_N.dot files.
StatusOr<std::shared_ptr<const Document>> loadDumpDirectory(const std::string& path,
                                                            const LoadCallbacks& callbacks = {});
// One Graphviz file; checked by laying it out, so a syntax error is reported here with its line.
StatusOr<std::shared_ptr<const Document>> loadDotFile(const std::string& path);
// Chooses by what `path` is: a directory, a .dot/.gv file, or otherwise HLO text.
StatusOr<std::shared_ptr<const Document>> loadPath(const std::string& path, const core::PipelineSpec& spec,
                                                   const LoadCallbacks& callbacks = {});

}  // namespace fusionscope::viewer
