#include "core/base/file_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace fusionscope {
namespace {

std::string errnoText(int err) {
  return std::strerror(err);
}

// Creates a new file next to `path` named `PATH.tmp.PID.N` with mode 0666 less the umask, as any file the user
// creates. (mkstemp would make it 0600, and reading the umask to widen it means setting it, which races with
// other threads creating files.) O_EXCL makes the name ours; a leftover from a crashed run is skipped.
int createTemporary(const std::string& path, std::string& name) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), counter++);
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

// Writes all of `content` to `fd` and closes it; errors name `path`.
Status writeAllAndClose(int fd, const std::string& path, std::string_view content) {
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(err)));
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(errno)));
  return okStatus();
}

// Writes content to a fresh temporary next to `path`; returns its name.
StatusOr<std::string> writeTemporary(const std::string& path, std::string_view content) {
  std::string tmpl;
  int fd = createTemporary(path, tmpl);
  if (fd < 0) return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(errno)));
  if (Status written = writeAllAndClose(fd, path, content); !written.ok()) {
    ::unlink(tmpl.c_str());
    return written;
  }
  return tmpl;
}

}  // namespace

static std::string_view fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";  // every kind is named above; kept for a system with more
}

StatusOr<int> openRegularFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever; the type is checked on the
  // descriptor itself (no window between a stat and the open). A regular file ignores the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::error(fmt::format("{}: error: cannot read: {}", path, errnoText(errno)));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    return Status::error(fmt::format("{}: error: cannot read: {}", path, errnoText(err)));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::error(fmt::format("{}: error: cannot read: is {}", path, fileKind(info.st_mode)));
  }
  return fd;
}

StatusOr<std::string> readFile(const std::string& path, size_t extraCapacity) {
  StatusOr<int> opened = openRegularFile(path);
  if (!opened.ok()) return opened.status();
  FILE* f = ::fdopen(*opened, "rb");
  if (!f) {
    int err = errno;
    ::close(*opened);
    return Status::error(fmt::format("{}: error: cannot read: {}", path, errnoText(err)));
  }
  // Read straight into the string (a 200 MB trace must not be copied through a bounce buffer); the loop
  // also copes with files whose size changes or is unknown (/proc).
  std::string content;
  struct stat info {};
  size_t capacity =
      ::fstat(*opened, &info) == 0 && info.st_size > 0 ? static_cast<size_t>(info.st_size) + 1 : (size_t{1} << 16);
  content.reserve(capacity + extraCapacity);
  size_t used = 0;
  for (;;) {
    if (used == content.size()) content.resize(std::max(capacity, content.size() * 2));
    size_t n = std::fread(content.data() + used, 1, content.size() - used, f);
    used += n;
    if (n == 0) break;
  }
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::error(fmt::format("{}: error: cannot read: I/O error", path));
  content.resize(used);
  if (content.capacity() < used + extraCapacity) content.reserve(used + extraCapacity);
  return content;
}

namespace {

// Where a write to `path` lands: a symbolic link is followed (to its final target, which need not exist yet), so
// the link stays a link and its target gets the new content, as a shell's `>` does. Empty on a loop.
std::string followLinks(const std::string& path) {
  std::filesystem::path current = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(std::filesystem::symlink_status(current, ec))) return current.string();
    std::filesystem::path target = std::filesystem::read_symlink(current, ec);
    if (ec) return current.string();
    current = target.is_absolute() ? target : current.parent_path() / target;
  }
  return {};
}

// A device, FIFO or socket named as an output is written in place (/dev/null, /dev/stdout, a pipe): it cannot be
// replaced by a rename, and replacing it with a regular file is never what was meant.
Status writeInPlace(const std::string& path, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(errno)));
  return writeAllAndClose(fd, path, content);
}

}  // namespace

Status writeFileAtomic(const std::string& requested, std::string_view content) {
  const std::string path = followLinks(requested);
  if (path.empty()) {
    return Status::error(fmt::format("{}: error: cannot write: too many levels of symbolic links", requested));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return Status::error(fmt::format("{}: error: cannot write: is a directory", requested));
    return writeInPlace(path, content);
  }
  // The single-file case writes the view directly: wrapping it in a FileContent would copy it.
  StatusOr<std::string> tmp = writeTemporary(path, content);
  if (!tmp.ok()) return tmp.status();
  if (::rename(tmp->c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp->c_str());
    return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(err)));
  }
  return okStatus();
}

Status writeFilesAtomic(const std::vector<FileContent>& files) {
  std::vector<std::string> temporaries;
  auto removeTemporaries = [&] {
    for (const std::string& t : temporaries) {
      if (!t.empty()) ::unlink(t.c_str());
    }
  };
  for (const FileContent& file : files) {
    StatusOr<std::string> tmp = writeTemporary(file.path, file.content);
    if (!tmp.ok()) {
      removeTemporaries();
      return tmp.status();
    }
    temporaries.push_back(*tmp);
  }
  // A file being replaced is kept under a backup name (a hard link) until every rename worked, so a
  // failure half-way restores the old files and removes the new ones.
  std::vector<std::string> backups(files.size());
  auto rollback = [&](size_t published) {
    for (size_t i = 0; i < published; ++i) {
      if (!backups[i].empty()) {
        ::rename(backups[i].c_str(), files[i].path.c_str());
      } else {
        ::unlink(files[i].path.c_str());
      }
    }
    removeTemporaries();
  };
  auto dropBackups = [&] {
    for (const std::string& b : backups) {
      if (!b.empty()) ::unlink(b.c_str());
    }
  };
  static std::atomic<unsigned> backupCounter{0};
  for (size_t i = 0; i < files.size(); ++i) {
    // A fresh name per backup (PATH.bak.PID.N): a backup a killed run left behind is never reused, so a failure
    // here still restores the file as it was before this call.
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string backup = fmt::format("{}.bak.{}.{}", files[i].path, static_cast<long>(::getpid()), backupCounter++);
      if (::link(files[i].path.c_str(), backup.c_str()) == 0) {
        backups[i] = backup;
        break;
      }
      if (errno != EEXIST) break;  // no file to keep (ENOENT), or a file system without hard links
    }
    if (::rename(temporaries[i].c_str(), files[i].path.c_str()) != 0) {
      int err = errno;
      if (!backups[i].empty()) ::unlink(backups[i].c_str());
      backups[i].clear();
      rollback(i);
      dropBackups();
      return Status::error(fmt::format("{}: error: cannot write: {}", files[i].path, errnoText(err)));
    }
    temporaries[i].clear();
  }
  dropBackups();
  return okStatus();
}

Status makeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::error(fmt::format("{}: error: cannot create directory: {}", path, ec.message()));
  if (!std::filesystem::is_directory(path, ec)) {
    return Status::error(fmt::format("{}: error: cannot create directory: not a directory", path));
  }
  return okStatus();
}

void DirectoryLock::release() {
  if (m_fd < 0) return;
  ::unlink(m_path.c_str());  // while still holding it, so nobody locks a file that is about to go
  ::close(m_fd);             // releases the flock
  m_fd = -1;
}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = other.m_fd;
    m_path = std::move(other.m_path);
    other.m_fd = -1;
  }
  return *this;
}

DirectoryLock::~DirectoryLock() {
  release();
}

StatusOr<DirectoryLock> lockDirectory(const std::string& directory) {
  FS_RETURN_IF_ERROR(makeDirectories(directory));
  const std::string path = (std::filesystem::path(directory) / kDirectoryLockName).string();
  for (int attempt = 0;; ++attempt) {
    // O_NOFOLLOW: a link planted under the lock's name cannot make us open (and write a pid into) another file.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return Status::error(fmt::format("{}: error: cannot lock: {}", directory, errnoText(errno)));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char pid[32] = {};
      const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
      ::close(fd);
      if (err == EWOULDBLOCK) {
        std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string();
        holder.erase(std::remove_if(holder.begin(), holder.end(), [](char c) { return c < '0' || c > '9'; }),
                     holder.end());
        return Status::failedWork(
            fmt::format("{}: error: another fusionscope-cli{} is writing to this directory; "
                        "wait for it or choose another",
                        directory, holder.empty() ? "" : fmt::format(" (pid {})", holder)));
      }
      return Status::error(fmt::format("{}: error: cannot lock: {}", directory, errnoText(err)));
    }
    // The holder before us may have removed the file between our open and our flock: then the lock we hold is on a
    // file nobody else will see. Only a lock on the file at the path counts.
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) != 0 || ::lstat(path.c_str(), &named) != 0 || held.st_ino != named.st_ino ||
        held.st_dev != named.st_dev) {
      ::close(fd);
      if (attempt < 8) continue;
      return Status::error(fmt::format("{}: error: cannot lock: the lock file keeps changing", directory));
    }
    const std::string self = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, self.data(), self.size(), 0);
    DirectoryLock lock;
    lock.m_fd = fd;
    lock.m_path = path;
    return lock;
  }
}

}  // namespace fusionscope
