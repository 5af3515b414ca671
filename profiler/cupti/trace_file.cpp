#include "profiler/cupti/trace_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "profiler/trace/chrome_json_export.h"

namespace fusionscope::profiler::cupti {

Status writeBytesAtomic(const std::string& path, std::string_view bytes) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error(path + ": error: cannot write: " + std::strerror(errno));
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temporary.c_str());
      return Status::error(path + ": error: cannot write: " + reason);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    return Status::error(path + ": error: cannot write: " + reason);
  }
  return okStatus();
}

Status writeTraceFile(const Trace& trace, const std::string& path) {
  return writeBytesAtomic(path, chromeTraceJson(trace));
}

}  // namespace fusionscope::profiler::cupti
