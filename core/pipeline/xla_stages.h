#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/pipeline/stage.h"

namespace fusionscope::core {

// One file of a directory written by XLA's `--xla_dump_to` that holds a whole module at one point of XLA's
// pipeline: `module_NNNN.NAME.before_optimizations`, the per-pass dumps
// `module_NNNN.NAME.SSSS.PIPELINE.after_PASS[.before_NEXT]` (`--xla_dump_hlo_pass_re`) and
// `module_NNNN.NAME.BACKEND_after_optimizations`, each as `.txt` (`--xla_dump_hlo_as_text`) and/or `.dot`
// (`--xla_dump_hlo_as_dot`). Buffer-assignment reports, LLVM IR, object files and the like are not stages.
struct XlaDumpFile {
  enum class Kind { kBeforeOptimizations, kAfterPass, kAfterOptimizations };
  Kind kind = Kind::kAfterPass;
  int64_t step = -1;     // SSSS of a per-pass file (XLA's order); -1 for the two ends
  std::string pipeline;  // "simplification"; empty for the two ends
  std::string pass;      // "algsimp"; "before_optimizations" / "cpu_after_optimizations" for the two ends
  std::string nextPass;  // the pass XLA ran next (`before_NEXT`), empty when the name has none
  std::string textPath;  // empty when only a .dot was dumped
  std::string dotPath;   // empty when only a .txt was dumped
  // The file to read: the text when there is one.
  const std::string& path() const { return textPath.empty() ? dotPath : textPath; }
};

// One module of a dump directory (XLA numbers every compiled module; JAX compiles little helper modules too).
struct XlaDumpModule {
  int64_t id = 0;     // NNNN
  std::string name;   // "jit_step"
  std::vector<XlaDumpFile> files;  // XLA's order: before_optimizations, per-pass by step, after_optimizations
  int64_t passFileCount() const;
};

struct XlaDumpDirectory {
  std::string path;
  std::vector<XlaDumpModule> modules;  // by id
};

// True when `path` is a directory holding at least one file named as XLA's dumps are (cheap: names only).
bool isXlaDumpDirectory(const std::string& path);

// Lists the modules of an `--xla_dump_to` directory. Errors (`PATH: error: ...`): not a directory, cannot be
// listed, or holds no HLO dump of XLA's.
StatusOr<XlaDumpDirectory> scanXlaDumpDirectory(const std::string& path);

// Picks a module by name (`jit_step`) or number (`18` or `0018`, XLA's module_NNNN); empty: the module with
// the most per-pass files (ties: the later one, as JAX compiles the user's function after its helpers), JAX's
// private helpers (`jit__uniform`, ...) only when there is nothing else.
// A name that several modules share picks the one with the most per-pass files. Errors list the modules.
StatusOr<const XlaDumpModule*> selectXlaModule(const XlaDumpDirectory& directory, std::string_view selector);

// The modules, one per line: `NNNN NAME: K per-pass dumps (text|dot)`, for messages and `stages --list`.
std::string describeXlaModules(const XlaDumpDirectory& directory);

struct XlaStagesOptions {
  std::function<void(const std::string& what, int done, int total)> progress;
  std::function<bool()> cancelled;  // checked between files; a cancelled load returns the error "cancelled"
  // A file that cannot be read or parsed becomes a stage with Stage::loadError (and no module) instead of failing
  // the whole load; the next stage is compared with the last one that loaded. At least one stage must load.
  bool keepGoing = false;
};

// XLA's pipeline for one module as stages, each parsed from its .txt (DOT-only stages have no module, only
// `files[i].dotPath`, and counts of the DOT's node and cluster statements). Stage 0 is before_optimizations; every stage has the real pass and pipeline names
// (`pass`, `passPath` = PIPELINE/PASS, `nextPass`), counts, the diff against the previous stage and the
// fusions XLA formed in it as decisions ("XLA fused a, b into f in pass fusion"); XLA does not record why,
// so the reasons say that they are inferred. A file that does not parse fails the whole load with its
// FILE:LINE:COL message: a stage list that silently skips what XLA dumped would mislead.
struct XlaStages {
  std::string directory;
  std::string moduleName;
  int64_t moduleId = 0;
  PipelineRun run;                  // pipeline "xla"
  std::vector<XlaDumpFile> files;   // indexed like run.stages
  std::vector<bool> changed;        // text differs from the stage before (stage 0: true)
};
StatusOr<XlaStages> loadXlaStages(const XlaDumpDirectory& directory, const XlaDumpModule& module,
                                  const XlaStagesOptions& options = {});

// `stages --json`: {"module", "module_id", "directory", "stages": [{"index", "pass", "pipeline", "file",
// "instructions", "fusions", "added", "removed", "changed", "fused"}]} (docs/STAGES_JSON.md).
std::string xlaStagesToJson(const XlaStages& stages);

}  // namespace fusionscope::core
