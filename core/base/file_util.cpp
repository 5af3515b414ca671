#include "core/base/file_util.h"

#include <fcntl.h>
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

// Writes content to a fresh temporary next to `path`; returns its name.
StatusOr<std::string> writeTemporary(const std::string& path, std::string_view content) {
  std::string tmpl;
  int fd = createTemporary(path, tmpl);
  if (fd < 0) return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(errno)));
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(err)));
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    return Status::error(fmt::format("{}: error: cannot write: {}", path, errnoText(err)));
  }
  return tmpl;
}

}  // namespace

StatusOr<std::string> readFile(const std::string& path, size_t extraCapacity) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::error(fmt::format("{}: error: cannot read: is a directory", path));
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error(fmt::format("{}: error: cannot read: {}", path, errnoText(errno)));
  // Read straight into the string (a 200 MB trace must not be copied through a bounce buffer); the loop
  // also copes with files whose size changes or is unknown (pipes).
  std::string content;
  auto size = std::filesystem::file_size(path, ec);
  size_t capacity = ec ? (size_t{1} << 16) : static_cast<size_t>(size) + 1;
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

Status writeFileAtomic(const std::string& path, std::string_view content) {
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
  for (size_t i = 0; i < files.size(); ++i) {
    std::string backup = files[i].path + ".bak.fs";
    if (::link(files[i].path.c_str(), backup.c_str()) == 0) backups[i] = backup;
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

}  // namespace fusionscope
