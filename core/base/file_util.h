#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace fusionscope {

// Reads a whole file. Errors read `PATH: error: cannot read: REASON`. `extraCapacity` bytes are reserved
// past the end (parsers such as simdjson need padding after the text) without changing the size.
// Only regular files are read: a directory, FIFO, device or socket is refused before any byte is read
// ("is a FIFO (named pipe)"), so /dev/zero cannot fill memory and a FIFO with no writer cannot hang the caller.
StatusOr<std::string> readFile(const std::string& path, size_t extraCapacity = 0);

// Opens `path` for reading, refusing what readFile refuses, without blocking on a FIFO; the caller closes the
// descriptor.
StatusOr<int> openRegularFile(const std::string& path);

// Writes `content` to `path` atomically: a temporary file in the same directory is written, flushed and
// renamed over `path`, so readers see the old file or the new one, never half of it. On failure the
// temporary file is removed and `path` is untouched. A symbolic link is followed (the link stays, its target gets
// the content); a device, FIFO or socket is written in place (`-o /dev/null`), never replaced by a regular file.
Status writeFileAtomic(const std::string& path, std::string_view content);

// Writes several files: every file goes to a temporary first, and the renames happen only when all the
// writes worked, so a full disk or an unwritable directory leaves none of the new files behind.
struct FileContent {
  std::string path;
  std::string content;
};
Status writeFilesAtomic(const std::vector<FileContent>& files);

// Creates a directory and its parents; fine if it exists. Errors name the directory.
Status makeDirectories(const std::string& path);

// An exclusive lock on an output directory for as long as the object lives: a second fusionscope-cli writing into
// the same directory is refused ("another fusionscope-cli (pid N) is writing to DIR") instead of both finishing
// with an index that names the other's files. flock(2) on DIR/.fusionscope-lock: the kernel releases it when the
// holder exits, however it exits (SIGKILL included), so a lock is never stale. The holder removes the file when it is
// done (a killed one leaves it, harmlessly: the next writer takes it over); a writer that locked a file another one
// had just removed sees it is no longer at the path and tries again.
class DirectoryLock {
 public:
  DirectoryLock() = default;
  DirectoryLock(DirectoryLock&& other) noexcept : m_fd(other.m_fd), m_path(std::move(other.m_path)) { other.m_fd = -1; }
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  friend StatusOr<DirectoryLock> lockDirectory(const std::string& directory);
  void release();
  int m_fd = -1;
  std::string m_path;
};
// Creates `directory` if needed and locks it. The lock file's name.
StatusOr<DirectoryLock> lockDirectory(const std::string& directory);
inline constexpr const char* kDirectoryLockName = ".fusionscope-lock";

}  // namespace fusionscope
