#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace fusionscope::testing {

// The shared corpus lives beside the repository (../shared/corpus); tests that use it skip with a message
// when it is absent.
inline std::filesystem::path corpusDir() { return std::filesystem::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus"; }
inline std::filesystem::path samplesDir() { return std::filesystem::path(FS_SOURCE_DIR) / "samples"; }

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

inline std::vector<std::filesystem::path> corpusHloFiles() { return filesWithExtension(corpusDir() / "hlo", ".hlo"); }
inline std::vector<std::filesystem::path> sampleHloFiles() { return filesWithExtension(samplesDir(), ".hlo"); }

}  // namespace fusionscope::testing
