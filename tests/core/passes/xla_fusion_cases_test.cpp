// XLA's fusion test suites as the project's tests (issue 39): tests/data/xla_fusion/*.hlo, one case each, written for
// this project from the situation an XLA test sets up (its name in the header), with what XLA expects stated in
// our own words and checked by small assertions. Each case also records whether our passes match XLA today
// (`status: match` or `status: miss: WHY`); the test fails when the outcome differs from the record in either
// direction, so a fix flips the record and scripts/xla-fusion-table regenerates the table in docs/PIPELINES.md.
//
// Header lines (`// key: value` at the top of the file):
//   xla:      the XLA test (suite file and test name)
//   passes:   our passes to run, comma-separated, as `explain --passes` takes them
//   backend:  gpu or cpu (whose fusion rules apply)
//   expects:  what XLA expects, in words (for the table)
//   rule:     the rule that decides it, in words (for the table)
//   check:    one assertion (several lines allowed):
//               changed | unchanged                 whether the passes changed the module
//               fusions N                           fusion instructions in the entry computation
//               root fusion KIND | root OPCODE      the entry's root
//               together A B ...                    the named instructions end up in one fusion
//               apart A B                           not in one fusion (either may be unfused)
//               unfused A                           A is still an instruction of the entry computation
//               copies A N                          A is inside N fusions (duplicated into each)
//               kind A KIND                         the fusion holding A has that kind
//               multi-output A                      the fusion holding A has a tuple root
//   status:   match | miss: WHY
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/common/source_paths.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

struct FusionCase {
  fs::path path;
  std::map<std::string, std::string> header;
  std::vector<std::string> checks;
  std::string text;
};

FusionCase readCase(const fs::path& path) {
  FusionCase c;
  c.path = path;
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  c.text = buffer.str();
  std::istringstream lines(c.text);
  std::string line;
  while (std::getline(lines, line) && line.rfind("// ", 0) == 0) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(3, colon - 3);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (key == "check") {
      c.checks.push_back(value);
    } else {
      c.header[key] += c.header[key].empty() ? value : " " + value;
    }
  }
  return c;
}

std::vector<fs::path> caseFiles() {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla_fusion";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The entry fusions holding an instruction named `name` (or a copy of it: `name.N`, `name.clone...`), searched in
// their fused computations and the fusions nested there.
bool holds(const HloComputation& computation, const std::string& name) {
  for (const auto& inst : computation.instructions()) {
    const std::string& n = inst->name();
    if (n == name || (n.size() > name.size() && n.compare(0, name.size(), name) == 0 && n[name.size()] == '.')) {
      return true;
    }
    if (const HloComputation* nested = inst->fusedComputation(); nested != nullptr && holds(*nested, name)) return true;
  }
  return false;
}

std::vector<const HloInstruction*> fusionsHolding(const HloModule& module, const std::string& name) {
  std::vector<const HloInstruction*> fusions;
  for (const auto& inst : module.entry()->instructions()) {
    if (inst->isFusion() && inst->fusedComputation() != nullptr && holds(*inst->fusedComputation(), name)) {
      fusions.push_back(inst.get());
    }
  }
  return fusions;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "" when `check` holds on `after`, else what was found instead.
std::string evaluateCheck(const std::string& check, const HloModule& after, bool changed) {
  const std::vector<std::string> w = words(check);
  if (w.empty()) return "empty check";
  const std::string& what = w[0];
  auto fusionCount = [&] {
    int n = 0;
    for (const auto& inst : after.entry()->instructions()) n += inst->isFusion();
    return n;
  };
  if (what == "changed") return changed ? "" : "the module was not changed";
  if (what == "unchanged") return changed ? "the module was changed" : "";
  if (what == "fusions" && w.size() == 2) {
    const int n = fusionCount();
    return n == std::stoi(w[1]) ? "" : "found " + std::to_string(n);
  }
  if (what == "root" && w.size() >= 2) {
    const HloInstruction* root = after.entry()->root();
    if (w[1] == "fusion") {
      if (!root->isFusion()) return "the root is " + std::string(root->opcodeString());
      if (w.size() == 3 && fusionKindName(root->fusionKind()) != w[2]) {
        return "the root is a " + std::string(fusionKindName(root->fusionKind())) + " fusion";
      }
      return "";
    }
    return root->opcodeString() == w[1] ? "" : "the root is " + std::string(root->opcodeString());
  }
  if (what == "together" && w.size() >= 3) {
    std::vector<const HloInstruction*> first = fusionsHolding(after, w[1]);
    if (first.empty()) return w[1] + " is in no fusion";
    for (size_t i = 2; i < w.size(); ++i) {
      std::vector<const HloInstruction*> other = fusionsHolding(after, w[i]);
      bool shared = false;
      for (const HloInstruction* f : other) shared = shared || std::count(first.begin(), first.end(), f) > 0;
      if (!shared) return w[1] + " and " + w[i] + " are not in one fusion";
    }
    return "";
  }
  if (what == "apart" && w.size() == 3) {
    std::vector<const HloInstruction*> a = fusionsHolding(after, w[1]);
    for (const HloInstruction* f : fusionsHolding(after, w[2])) {
      if (std::count(a.begin(), a.end(), f) > 0) return w[1] + " and " + w[2] + " share " + f->name();
    }
    return "";
  }
  if (what == "unfused" && w.size() == 2) {
    const HloInstruction* inst = after.entry()->findInstruction(w[1]);
    return inst != nullptr && !inst->isFusion() ? "" : w[1] + " is not an instruction of the entry";
  }
  if (what == "copies" && w.size() == 3) {
    const size_t n = fusionsHolding(after, w[1]).size();
    return n == static_cast<size_t>(std::stoi(w[2])) ? "" : "in " + std::to_string(n) + " fusions";
  }
  if (what == "kind" && w.size() == 3) {
    std::vector<const HloInstruction*> f = fusionsHolding(after, w[1]);
    if (f.size() != 1) return w[1] + " is in " + std::to_string(f.size()) + " fusions";
    return fusionKindName(f[0]->fusionKind()) == w[2] ? "" : "kind " + std::string(fusionKindName(f[0]->fusionKind()));
  }
  if (what == "multi-output" && w.size() == 2) {
    std::vector<const HloInstruction*> f = fusionsHolding(after, w[1]);
    if (f.size() != 1) return w[1] + " is in " + std::to_string(f.size()) + " fusions";
    return f[0]->fusedComputation()->root()->opcode() == HloOpcode::kTuple ? "" : "the fusion has one output";
  }
  return "unknown check";
}

class XlaFusionCaseTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(XlaFusionCaseTest, OutcomeIsTheRecordedOne) {
  const FusionCase c = readCase(GetParam());
  for (const char* key : {"xla", "passes", "backend", "expects", "rule", "status"}) {
    ASSERT_TRUE(c.header.count(key)) << c.path << ": no '" << key << ":' line";
  }
  ASSERT_FALSE(c.checks.empty()) << c.path << ": no check";
  StatusOr<std::unique_ptr<HloModule>> parsed = parseHloModule(c.text, c.path.string());
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  HloModule& module = **parsed;
  const std::string before = printModule(module);

  PipelineSpec spec;
  spec.preset = c.header.at("backend");
  std::string passes = c.header.at("passes");
  std::replace(passes.begin(), passes.end(), ',', ' ');
  spec.passes = words(passes);
  StatusOr<std::unique_ptr<PassPipeline>> pipeline = buildPipeline(spec);
  ASSERT_TRUE(pipeline.ok()) << pipeline.message();
  PassContext context(fusionConfigFor(backendFor(spec)));
  StatusOr<PipelineRun> run = runPipeline(**pipeline, module, context);
  ASSERT_TRUE(run.ok()) << run.message();
  const bool changed = printModule(module) != before;

  std::string failures;
  for (const std::string& check : c.checks) {
    const std::string failure = evaluateCheck(check, module, changed);
    ASSERT_NE(failure, "unknown check") << c.path << ": " << check;
    if (!failure.empty()) failures += "\n  " + check + ": " + failure;
  }
  const bool matches = failures.empty();
  const bool recordedMatch = c.header.at("status") == "match";
  EXPECT_EQ(matches, recordedMatch) << c.path.filename().string() << " (" << c.header.at("xla") << "): "
                                    << (matches ? "now matches XLA: record `status: match`"
                                                : "no longer matches XLA:" + failures)
                                    << "\n"
                                    << printModule(module);
}

std::string caseName(const ::testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.stem().string();
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, XlaFusionCaseTest, ::testing::ValuesIn(caseFiles()), caseName);

}  // namespace
}  // namespace fusionscope::core
