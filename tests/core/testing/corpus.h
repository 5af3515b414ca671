#pragma once

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "tests/common/source_paths.h"

namespace fusionscope::testing {

// How much interpretation one test may ask of the evaluator, in estimateEvaluationWork's scalar operations per
// evaluation. The evaluator does about 1e9 a second in the dev build (xla_isolated_convolution, 1.9e9 estimated:
// 1.5 s) and 5-10x fewer under the sanitizers, so there the budget is lower and the dev suite checks the modules
// above it: their skip message says so (scripts/skip-report lists it). Mobilenet's training step (~1e11) is over
// both; tests/data/corpus holds smaller programs of the same ops.
#ifdef __SANITIZE_ADDRESS__
inline constexpr bool kSanitizedBuild = true;
inline constexpr int64_t kEvaluationBudget = 300'000'000;
#else
inline constexpr bool kSanitizedBuild = false;
inline constexpr int64_t kEvaluationBudget = 4'000'000'000;
#endif

// The skip message of a module whose evaluation costs `work` operations, over `budget`.
inline std::string tooExpensiveToInterpret(int64_t work, int64_t budget) {
  std::ostringstream out;
  out << "too expensive to interpret " << (kSanitizedBuild ? "under the sanitizers" : "in a unit test") << " (~"
      << static_cast<double>(work) << " operations per evaluation, budget " << static_cast<double>(budget) << ")"
      << (kSanitizedBuild && work <= 4'000'000'000 ? ": the dev suite checks it" : "");
  return out.str();
}

// The shared corpus lives beside the repository (../shared/corpus); tests that use it skip with a message
// when it is absent.
inline std::filesystem::path corpusDir() {
  return std::filesystem::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus";
}
inline std::filesystem::path samplesDir() {
  return std::filesystem::path(FS_SOURCE_DIR) / "samples";
}

// Sorted list of files with `extension` directly in `dir`, or in its immediate subdirectories.
inline std::vector<std::filesystem::path> filesWithExtension(const std::filesystem::path& dir,
                                                             const std::string& extension) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == extension) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Whether ../shared/corpus is there (the presence tests skip with a message when not).
inline bool sharedCorpusPresent() {
  return !filesWithExtension(corpusDir() / "hlo", ".hlo").empty();
}

// The shared corpus's modules, plus those vendored in tests/data/corpus that it does not have (all of them when it
// is absent), so the realistic cases run in a clone without ../shared.
inline std::vector<std::filesystem::path> corpusHloFiles() {
  std::vector<std::filesystem::path> files = filesWithExtension(corpusDir() / "hlo", ".hlo");
  const std::vector<std::filesystem::path> shared = files;
  for (const auto& vendored :
       filesWithExtension(std::filesystem::path(FS_SOURCE_DIR) / "tests" / "data" / "corpus", ".hlo")) {
    const bool inShared =
        std::any_of(shared.begin(), shared.end(), [&](const auto& p) { return p.filename() == vendored.filename(); });
    if (!inShared) files.push_back(vendored);
  }
  return files;
}
inline std::vector<std::filesystem::path> sampleHloFiles() {
  return filesWithExtension(samplesDir(), ".hlo");
}

// Samples first, then the corpus: the parameter list of the tests that run on every module.
inline std::vector<std::string> allModulePaths() {
  std::vector<std::string> paths;
  for (const auto& p : sampleHloFiles()) paths.push_back(p.string());
  for (const auto& p : corpusHloFiles()) paths.push_back(p.string());
  return paths;
}

// A gtest-safe test name from a module path: its stem with every non-alphanumeric character as '_'.
inline std::string moduleTestName(const std::string& path) {
  std::string name = std::filesystem::path(path).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// A fresh directory under the system temp dir, unique to this process, so concurrent test runs (ctest -j,
// two checkouts) never share scratch space. The caller removes it.
inline std::filesystem::path scratchDirectory(const std::string& name) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (name + "_" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string readBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace fusionscope::testing
