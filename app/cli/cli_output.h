#pragma once

#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::cli {

// Exit codes of every subcommand: 0 ok, 1 the work failed (e.g. an output could not be written), 2 bad usage or
// bad input (unknown flag, malformed file, missing file).
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

// The exit code for an error: as its kind says (Status::badInput: 2, Status::failedWork: 1), else `unstated`.
inline int exitCodeFor(const Status& status, int unstated) {
  switch (status.kind()) {
    case ErrorKind::kBadInput: return kExitBadInput;
    case ErrorKind::kFailedWork: return kExitFailed;
    case ErrorKind::kUnstated: break;
  }
  return unstated;
}

// Writes `text` to stdout, or atomically to the file `output` when it is set. kExitFailed, with one line on stderr,
// when it cannot be written.
int emit(const std::string& text, const std::string& output);

// Flushes stdout at the end of a command: a write that failed anywhere (a full disk, /dev/full, a closed pipe)
// turns a successful exit code into kExitFailed with one line on stderr. Returns the exit code to use.
int finishOutput(int exitCode);

// Parses an HLO text file and (unless `verify` is false) verifies it; prints the error (with a hint at --no-verify
// for commands that have it) and returns null on bad input.
std::unique_ptr<core::HloModule> loadModule(const std::string& path, bool verify = true, bool hasNoVerify = true);

// An output directory a command is about to create. Unless keep() is called, the destructor removes what was
// created (the topmost directory that did not exist, with whatever was written into it), so a command that fails
// half-way leaves no empty or half-filled directory behind. A directory that existed before is never touched.
class OutputDirectoryGuard {
 public:
  explicit OutputDirectoryGuard(const std::string& path);
  ~OutputDirectoryGuard();
  OutputDirectoryGuard(const OutputDirectoryGuard&) = delete;
  OutputDirectoryGuard& operator=(const OutputDirectoryGuard&) = delete;
  void keep() { m_kept = true; }

 private:
  std::string m_created;  // empty when the directory already existed
  bool m_kept = false;
};

}  // namespace fusionscope::cli
