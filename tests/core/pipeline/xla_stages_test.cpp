// XLA's own pipeline read from an --xla_dump_to directory: file names, order, module choice, stages, diffs and
// the fusions inferred from them; on a hand-made directory and on a real JAX dump (tests/data/xla).
#include "core/pipeline/xla_stages.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/base/file_util.h"
#include "tests/common/source_paths.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "fs_xla_stages_XXXXXX").string();
    m_path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code error;
    fs::remove_all(m_path, error);
  }
  const fs::path& path() const { return m_path; }
  void write(const std::string& name, const std::string& text) const { std::ofstream(m_path / name) << text; }

 private:
  fs::path m_path;
};

constexpr const char* kUnfused = R"(HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY main.5 {
  x = f32[8]{0} parameter(0)
  e = f32[8]{0} exponential(x)
  n = f32[8]{0} negate(e)
  ROOT a = f32[8]{0} add(n, x)
}
)";

constexpr const char* kSimplified = R"(HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY main.5 {
  x = f32[8]{0} parameter(0)
  e = f32[8]{0} exponential(x)
  n = f32[8]{0} negate(e)
  ROOT a = f32[8]{0} add(n, x), metadata={op_name="jit(f)/add"}
}
)";

constexpr const char* kFused = R"(HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

fused_computation {
  p0 = f32[8]{0} parameter(0)
  e = f32[8]{0} exponential(p0)
  n = f32[8]{0} negate(e)
  ROOT a = f32[8]{0} add(n, p0)
}

ENTRY main.5 {
  x = f32[8]{0} parameter(0)
  ROOT exponential_negate_fusion = f32[8]{0} fusion(x), kind=kLoop, calls=fused_computation
}
)";

// A directory as XLA writes it: two modules, per-pass files, reports and other files that are not stages.
void writeDump(const TempDir& dir) {
  dir.write("module_0001.jit_f.before_optimizations.txt", kUnfused);
  dir.write("module_0001.jit_f.before_optimizations.dot", "digraph g { a -> b }");
  dir.write("module_0001.jit_f.0000.simplification.after_pipeline-start.before_algsimp.txt", kUnfused);
  dir.write("module_0001.jit_f.0001.simplification.after_algsimp.before_dce.txt", kSimplified);
  dir.write("module_0001.jit_f.0002.fusion-pipeline.after_fusion.before_fusion-wrapper.txt", kFused);
  dir.write("module_0001.jit_f.0003.copy-insertion.after_adding_copies_to_resolve_interference.txt", kFused);
  dir.write("module_0001.jit_f.cpu_after_optimizations.txt", kFused);
  dir.write("module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt", "not HLO");
  dir.write("module_0001.jit_f.exponential_negate_fusion_kernel_module.ir-no-opt.ll", "; llvm");
  dir.write("module_0001.jit_f.debug_options", "");
  dir.write("module_0000.jit_iota.before_optimizations.dot", "digraph g { a -> b }");
  dir.write("module_0000.jit_iota.cpu_after_optimizations.dot", "digraph g { a -> c }");
}

TEST(XlaStages, ScansModulesAndOrdersFilesAsXlaRanThem) {
  TempDir dir;
  writeDump(dir);
  EXPECT_TRUE(isXlaDumpDirectory(dir.path().string()));
  StatusOr<XlaDumpDirectory> scanned = scanXlaDumpDirectory(dir.path().string());
  ASSERT_TRUE(scanned.ok()) << scanned.message();
  ASSERT_EQ(scanned->modules.size(), 2u);
  EXPECT_EQ(scanned->modules[0].name, "jit_iota");
  const XlaDumpModule& f = scanned->modules[1];
  EXPECT_EQ(f.id, 1);
  EXPECT_EQ(f.name, "jit_f");
  EXPECT_EQ(f.passFileCount(), 4);
  ASSERT_EQ(f.files.size(), 6u);
  EXPECT_EQ(f.files[0].kind, XlaDumpFile::Kind::kBeforeOptimizations);
  EXPECT_FALSE(f.files[0].dotPath.empty());
  EXPECT_EQ(f.files[1].step, 0);
  EXPECT_EQ(f.files[1].pipeline, "simplification");
  EXPECT_EQ(f.files[1].pass, "pipeline-start");
  EXPECT_EQ(f.files[1].nextPass, "algsimp");
  EXPECT_EQ(f.files[3].pass, "fusion");
  EXPECT_EQ(f.files[4].pipeline, "copy-insertion");
  EXPECT_EQ(f.files[4].pass, "adding_copies_to_resolve_interference");
  EXPECT_EQ(f.files[4].nextPass, "");
  EXPECT_EQ(f.files[5].kind, XlaDumpFile::Kind::kAfterOptimizations);
  EXPECT_EQ(f.files[5].pass, "cpu_after_optimizations");
}

TEST(XlaStages, SelectsByNameNumberOrMostPasses) {
  TempDir dir;
  writeDump(dir);
  StatusOr<XlaDumpDirectory> scanned = scanXlaDumpDirectory(dir.path().string());
  ASSERT_TRUE(scanned.ok()) << scanned.message();
  EXPECT_EQ((*selectXlaModule(*scanned, ""))->name, "jit_f");
  EXPECT_EQ((*selectXlaModule(*scanned, "jit_iota"))->name, "jit_iota");
  EXPECT_EQ((*selectXlaModule(*scanned, "0"))->name, "jit_iota");
  EXPECT_EQ((*selectXlaModule(*scanned, "0001"))->name, "jit_f");
  StatusOr<const XlaDumpModule*> missing = selectXlaModule(*scanned, "jit_g");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no module 'jit_g'"), std::string::npos);
  EXPECT_NE(missing.message().find("0001 jit_f: 4 per-pass dump(s)"), std::string::npos) << missing.message();
}

TEST(XlaStages, StagesCarryPassesCountsDiffsAndInferredFusions) {
  TempDir dir;
  writeDump(dir);
  StatusOr<XlaDumpDirectory> scanned = scanXlaDumpDirectory(dir.path().string());
  ASSERT_TRUE(scanned.ok()) << scanned.message();
  StatusOr<XlaStages> stages = loadXlaStages(*scanned, scanned->modules[1]);
  ASSERT_TRUE(stages.ok()) << stages.message();
  const std::vector<Stage>& s = stages->run.stages;
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].label(), "XLA: before optimizations");
  EXPECT_EQ(s[0].instructionCount, 4);
  EXPECT_FALSE(stages->changed[1]);  // pipeline start: the same text
  EXPECT_EQ(s[1].label(), "simplification: pipeline start, before algsimp");
  EXPECT_TRUE(stages->changed[2]);  // metadata only: changed, but no node added or removed
  EXPECT_TRUE(s[2].changes.added.empty());
  EXPECT_EQ(s[3].passPath, "fusion-pipeline/fusion");
  EXPECT_EQ(s[3].fusionCount, 1);
  EXPECT_EQ(s[3].changes.added, std::vector<std::string>{"exponential_negate_fusion"});
  ASSERT_EQ(s[3].decisions.size(), 3u);
  EXPECT_EQ(s[3].decisions[0].producer, "e");
  EXPECT_EQ(s[3].decisions[0].fusion, "exponential_negate_fusion");
  EXPECT_EQ(s[3].decisions[0].kind, FusionKind::kLoop);
  EXPECT_NE(s[3].decisions[0].reason.find("XLA fused e, n, a into exponential_negate_fusion in pass fusion"),
            std::string::npos)
      << s[3].decisions[0].reason;
  EXPECT_FALSE(stages->changed[4]);
  EXPECT_TRUE(s[4].decisions.empty());
  EXPECT_EQ(s[5].label(), "XLA cpu: after optimizations");

  nlohmann::json json = nlohmann::json::parse(xlaStagesToJson(*stages));
  EXPECT_EQ(json["module"], "jit_f");
  ASSERT_EQ(json["stages"].size(), 6u);
  EXPECT_EQ(json["stages"][0]["pass"], "before_optimizations");
  EXPECT_EQ(json["stages"][3]["pipeline"], "fusion-pipeline");
  EXPECT_EQ(json["stages"][3]["fusions"], 1);
  EXPECT_EQ(json["stages"][3]["fused"][0]["fusion"], "exponential_negate_fusion");
  EXPECT_EQ(json["stages"][5]["file"], "module_0001.jit_f.cpu_after_optimizations.txt");
}

TEST(XlaStages, DotOnlyModuleHasStagesWithoutModules) {
  TempDir dir;
  writeDump(dir);
  StatusOr<XlaDumpDirectory> scanned = scanXlaDumpDirectory(dir.path().string());
  ASSERT_TRUE(scanned.ok()) << scanned.message();
  StatusOr<XlaStages> stages = loadXlaStages(*scanned, scanned->modules[0]);
  ASSERT_TRUE(stages.ok()) << stages.message();
  ASSERT_EQ(stages->run.stages.size(), 2u);
  EXPECT_EQ(stages->run.stages[1].module, nullptr);
  EXPECT_TRUE(stages->changed[1]);
}

TEST(XlaStages, BadInputIsRefusedWithAMessage) {
  TempDir empty;
  empty.write("notes.txt", "hello");
  EXPECT_FALSE(isXlaDumpDirectory(empty.path().string()));
  StatusOr<XlaDumpDirectory> none = scanXlaDumpDirectory(empty.path().string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("no HLO dump of XLA's here"), std::string::npos) << none.message();
  EXPECT_FALSE(scanXlaDumpDirectory((empty.path() / "missing").string()).ok());

  TempDir truncated;
  truncated.write("module_0001.jit_f.before_optimizations.txt", kUnfused);
  std::string cut(kFused);
  truncated.write("module_0001.jit_f.0001.p.after_fusion.before_dce.txt", cut.substr(0, cut.size() / 2));
  StatusOr<XlaDumpDirectory> scanned = scanXlaDumpDirectory(truncated.path().string());
  ASSERT_TRUE(scanned.ok()) << scanned.message();
  StatusOr<XlaStages> stages = loadXlaStages(*scanned, scanned->modules[0]);
  ASSERT_FALSE(stages.ok());
  // FILE:LINE:COL of the truncated file.
  EXPECT_TRUE(std::regex_search(stages.message(), std::regex(R"(after_fusion\.before_dce\.txt:\d+:\d+: error)")))
      << stages.message();
}

// Two runs into one directory: two modules numbered 0001 (jit_f and jit_g) were merged into one; both are kept
// apart, and the number alone is ambiguous. A number past int64 read as 0 and lost the stages' order: refused.
TEST(XlaStages, ModulesSharingANumberStayApartAndOverflowingNumbersAreRefused) {
  TempDir dir;
  dir.write("module_0001.jit_f.before_optimizations.txt", kUnfused);
  dir.write("module_0001.jit_f.0001.p.after_fusion.before_dce.txt", kFused);
  dir.write("module_0001.jit_g.before_optimizations.txt", kUnfused);
  StatusOr<XlaDumpDirectory> scanned = scanXlaDumpDirectory(dir.path().string());
  ASSERT_TRUE(scanned.ok()) << scanned.message();
  ASSERT_EQ(scanned->modules.size(), 2u);
  EXPECT_EQ(scanned->modules[0].name, "jit_f");
  EXPECT_EQ(scanned->modules[0].files.size(), 2u);
  EXPECT_EQ(scanned->modules[1].name, "jit_g");
  EXPECT_EQ(scanned->modules[1].files.size(), 1u);
  StatusOr<const XlaDumpModule*> byNumber = selectXlaModule(*scanned, "1");
  ASSERT_FALSE(byNumber.ok());
  EXPECT_NE(byNumber.message().find("2 modules have number 1"), std::string::npos) << byNumber.message();
  StatusOr<const XlaDumpModule*> byName = selectXlaModule(*scanned, "jit_g");
  ASSERT_TRUE(byName.ok());
  EXPECT_EQ((*byName)->name, "jit_g");

  TempDir overflow;
  overflow.write("module_0001.jit_f.before_optimizations.txt", kUnfused);
  overflow.write("module_0001.jit_f.99999999999999999999.p.after_fusion.before_dce.txt", kFused);
  StatusOr<XlaDumpDirectory> refused = scanXlaDumpDirectory(overflow.path().string());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("99999999999999999999"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("after_fusion.before_dce.txt: error"), std::string::npos) << refused.message();
}

// A real dump: jaxlib 0.10.2 on the CPU, the MNIST softmax step (tests/data/xla/README.md says how it was made).
TEST(XlaStages, RealJaxDumpOfTheMnistStep) {
  fs::path dir = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "mnist_step" / "fused";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is absent (scripts/xla-testdata writes it)";
  StatusOr<XlaDumpDirectory> scanned = scanXlaDumpDirectory(dir.string());
  ASSERT_TRUE(scanned.ok()) << scanned.message();
  StatusOr<const XlaDumpModule*> module = selectXlaModule(*scanned, "");
  ASSERT_TRUE(module.ok()) << module.message();
  EXPECT_EQ((*module)->name, "jit_step");
  StatusOr<XlaStages> stages = loadXlaStages(*scanned, **module);
  ASSERT_TRUE(stages.ok()) << stages.message();
  const std::vector<Stage>& s = stages->run.stages;
  ASSERT_GE(s.size(), 10u);
  EXPECT_EQ(s.front().pass, "before_optimizations");
  EXPECT_EQ(s.back().pass, "cpu_after_optimizations");
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    EXPECT_EQ(stages->files[i].kind, XlaDumpFile::Kind::kAfterPass);
    if (i > 1) {
      EXPECT_LT(stages->files[i - 1].step, stages->files[i].step);
    }
  }
  EXPECT_EQ(s.front().fusionCount, 0);
  // The last stage's fusions are the fusion instructions of XLA's optimized module, counted here from its text.
  StatusOr<std::string> text = readFile(stages->files.back().textPath);
  ASSERT_TRUE(text.ok());
  std::regex fusionLine(R"(= [^\n]* fusion\([^\n]*kind=k)");
  int64_t expected =
      std::distance(std::sregex_iterator(text->begin(), text->end(), fusionLine), std::sregex_iterator());
  EXPECT_GT(expected, 0);
  EXPECT_EQ(s.back().fusionCount, expected);
  // XLA's fusion pass is a stage of its own, and the fusions it formed are inferred with their members.
  auto fusion = std::find_if(s.begin(), s.end(), [](const Stage& stage) { return stage.pass == "fusion"; });
  ASSERT_NE(fusion, s.end());
  EXPECT_GT(fusion->fusionCount, 0);
  ASSERT_FALSE(fusion->decisions.empty());
  EXPECT_NE(fusion->decisions[0].reason.find("XLA fused "), std::string::npos);
  EXPECT_NE(fusion->decisions[0].reason.find(" in pass fusion"), std::string::npos);
}

}  // namespace
}  // namespace fusionscope::core
