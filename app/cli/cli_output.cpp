#include "app/cli/cli_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/base/file_util.h"

namespace fusionscope::cli {

int emit(const std::string& text, const std::string& output) {
  if (output.empty()) {
    errno = 0;
    const size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
    if (written != text.size() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      const int error = errno;
      std::clearerr(stdout);  // reported here, not again by finishOutput
      fmt::print(stderr, "cannot write to standard output: {}\n", error ? std::strerror(error) : "write error");
      return kExitFailed;
    }
    return kExitOk;
  }
  if (Status s = writeFileAtomic(output, text); !s.ok()) {
    fmt::print(stderr, "{}\n", s.message().substr(0, s.message().find('\n')));
    return kExitFailed;
  }
  return kExitOk;
}

int finishOutput(int exitCode) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int error = errno;
    std::clearerr(stdout);
    fmt::print(stderr, "cannot write to standard output: {}\n", error ? std::strerror(error) : "write error");
    return exitCode == kExitOk ? kExitFailed : exitCode;
  }
  return exitCode;
}

OutputDirectoryGuard::OutputDirectoryGuard(const std::string& path) {
  if (path.empty()) return;
  std::error_code error;
  std::filesystem::path missing;
  for (std::filesystem::path p = std::filesystem::absolute(path, error);
       !p.empty() && !std::filesystem::exists(p, error); p = p.parent_path()) {
    missing = p;
    if (p == p.parent_path()) break;
  }
  m_created = missing.string();
}

OutputDirectoryGuard::~OutputDirectoryGuard() {
  if (m_kept || m_created.empty()) return;
  std::error_code error;
  std::filesystem::remove_all(m_created, error);
}

}  // namespace fusionscope::cli
