#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "core/graphviz/graphviz_renderer.h"

namespace fusionscope::graphviz {
namespace {

// Worker → parent message: one status byte ('K' ok, 'E' error), then for 'K' each image as an 8-byte
// length followed by its bytes, for 'E' the error text.
void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

[[noreturn]] void runWorker(int fd, const RenderJob& job) {
  StatusOr<std::vector<std::string>> images = renderDot(job.dot, job.formats, job.sourceName);
  if (!images.ok()) {
    writeAll(fd, "E", 1);
    writeAll(fd, images.message().data(), images.message().size());
  } else {
    writeAll(fd, "K", 1);
    for (const std::string& image : *images) {
      uint64_t size = image.size();
      writeAll(fd, reinterpret_cast<const char*>(&size), sizeof size);
      writeAll(fd, image.data(), image.size());
    }
  }
  ::close(fd);
  ::_exit(0);  // no atexit handlers or stdio flushes of the parent's state
}

StatusOr<std::vector<std::string>> decode(const std::string& data, const RenderJob& job, int waitStatus) {
  if (WIFSIGNALED(waitStatus)) {
    return Status::error(
        fmt::format("{}: Graphviz crashed while rendering (signal {})", job.sourceName, WTERMSIG(waitStatus)));
  }
  if (data.empty()) return Status::error(fmt::format("{}: the render worker exited without a result", job.sourceName));
  if (data[0] == 'E') return Status::error(data.substr(1));
  std::vector<std::string> images;
  size_t pos = 1;
  for (size_t i = 0; i < job.formats.size(); ++i) {
    uint64_t size = 0;
    if (pos + sizeof size > data.size()) break;
    std::memcpy(&size, data.data() + pos, sizeof size);
    pos += sizeof size;
    if (pos + size > data.size()) break;
    images.emplace_back(data, pos, size);
    pos += size;
  }
  if (images.size() != job.formats.size()) {
    return Status::error(fmt::format("{}: truncated result from the render worker", job.sourceName));
  }
  return images;
}

}  // namespace

StatusOr<std::vector<std::vector<std::string>>> renderDotBatch(const std::vector<RenderJob>& jobs, int processes) {
  std::vector<std::vector<std::string>> results(jobs.size());
  if (processes <= 1 || jobs.size() <= 1) {
    for (size_t i = 0; i < jobs.size(); ++i) {
      StatusOr<std::vector<std::string>> images = renderDot(jobs[i].dot, jobs[i].formats, jobs[i].sourceName);
      if (!images.ok()) return images.status();
      results[i] = std::move(*images);
    }
    return results;
  }
  struct Worker {
    pid_t pid;
    int fd;
    size_t job;
    std::string data;
  };
  std::vector<Worker> active;
  std::vector<Status> errors(jobs.size());
  size_t next = 0;
  auto finish = [&](Worker& worker) {
    ::close(worker.fd);
    int status = 0;
    while (::waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
    }
    StatusOr<std::vector<std::string>> images = decode(worker.data, jobs[worker.job], status);
    if (images.ok()) {
      results[worker.job] = std::move(*images);
    } else {
      errors[worker.job] = images.status();
    }
  };
  while (next < jobs.size() || !active.empty()) {
    while (active.size() < static_cast<size_t>(processes) && next < jobs.size()) {
      int fds[2];
      if (::pipe(fds) != 0) return Status::error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
      const pid_t parent = ::getpid();
      pid_t pid = ::fork();
      if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return Status::error(fmt::format("cannot start a render worker: {}", std::strerror(errno)));
      }
      if (pid == 0) {
        // A worker dies with the process that started it (even by kill -9): nobody would read what it renders.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);  // the parent died before the line above took effect
        ::close(fds[0]);
        for (const Worker& other : active) ::close(other.fd);
        runWorker(fds[1], jobs[next]);
      }
      ::close(fds[1]);
      active.push_back({pid, fds[0], next, {}});
      ++next;
    }
    std::vector<pollfd> polls;
    for (const Worker& worker : active) polls.push_back({worker.fd, POLLIN, 0});
    if (::poll(polls.data(), polls.size(), -1) < 0 && errno != EINTR) {
      return Status::error(fmt::format("waiting for render workers failed: {}", std::strerror(errno)));
    }
    char buffer[1 << 16];
    for (size_t i = polls.size(); i-- > 0;) {
      if (!(polls[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(active[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        active[i].data.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      finish(active[i]);
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (Status& error : errors) {
    if (!error.ok()) return error;
  }
  return results;
}

}  // namespace fusionscope::graphviz
