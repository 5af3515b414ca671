#include "app/cli/cli_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/base/file_util.h"
#include "core/ir/hlo_verifier.h"
#include "core/text/hlo_parser.h"

namespace fusionscope::cli {
namespace {

// Flushes stdout; when that or an earlier write to it failed, says so on stderr (once: the error is cleared) and
// returns true. Callers zero errno before their writes so the reason is theirs.
bool stdoutWriteFailed() {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return false;
  const int error = errno;
  std::clearerr(stdout);
  fmt::print(stderr, "cannot write to standard output: {}\n", error ? std::strerror(error) : "write error");
  return true;
}

}  // namespace

int emit(const std::string& text, const std::string& output) {
  if (output.empty()) {
    errno = 0;
    std::fwrite(text.data(), 1, text.size(), stdout);
    return stdoutWriteFailed() ? kExitFailed : kExitOk;
  }
  if (Status s = writeFileAtomic(output, text); !s.ok()) {
    fmt::print(stderr, "{}\n", s.message().substr(0, s.message().find('\n')));
    return kExitFailed;
  }
  return kExitOk;
}

int finishOutput(int exitCode) {
  errno = 0;
  if (stdoutWriteFailed()) return exitCode == kExitOk ? kExitFailed : exitCode;
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

std::unique_ptr<core::HloModule> loadModule(const std::string& path, bool verify, bool hasNoVerify) {
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModuleFile(path);
  if (!module.ok()) {
    fmt::print(stderr, "{}\n", module.message());
    return nullptr;
  }
  if (verify) {
    if (Status verified = core::verifyModule(**module); !verified.ok()) {
      fmt::print(stderr, "{}\n{}", verified.message(), hasNoVerify ? "(use --no-verify to load it anyway)\n" : "");
      return nullptr;
    }
  }
  return std::move(*module);
}

}  // namespace fusionscope::cli
