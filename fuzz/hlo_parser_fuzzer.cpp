// libFuzzer target: HLO text → parser → (when it parses) verifier, printer round trip, DOT writer, and on
// verified modules the gpu pipeline with pass checking. Any crash, sanitizer report or broken invariant
// (printed text that does not parse again, a pass that breaks the verifier) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "core/dot/dot_writer.h"
#include "core/ir/hlo_verifier.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"

namespace fs = fusionscope::core;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "invariant broken: %s\n%s\n", what, detail.c_str());
  __builtin_trap();
}

// The pipeline is only run on small modules: the fuzzer wants many executions per second, and big modules
// come from the seed corpus, which the regular test suite already runs through the pipelines.
constexpr int64_t kMaxInstructionsForPipeline = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = fs::parseHloModule(text, "<fuzz>");
  if (!parsed.ok()) return 0;
  std::unique_ptr<fs::HloModule> module = std::move(parsed).value();

  std::string printed = fs::printModule(*module);
  auto reparsed = fs::parseHloModule(printed, "<printed>");
  if (!reparsed.ok()) fail("printed module does not parse", reparsed.status().message() + "\n" + printed);

  if (!fs::verifyModule(*module).ok()) return -1;  // not worth keeping in the corpus beyond the parser
  (void)fs::writeDot(*module);

  if (module->instructionCount() > kMaxInstructionsForPipeline) return 0;

  fs::PipelineSpec spec;
  auto pipeline = fs::buildPipeline(spec);
  if (!pipeline.ok()) fail("gpu preset does not build", pipeline.status().message());
  fs::PassContext context(fs::fusionConfigFor(fs::backendFor(spec)));
  fs::RunOptions options;
  options.checkPasses = true;
  auto run = fs::runPipeline(**pipeline, *module, context, options);
  if (!run.ok() && run.status().message().find("verifier") != std::string::npos) {
    fail("a pass broke a verified module", run.status().message() + "\n" + printed);
  }
  return 0;
}
