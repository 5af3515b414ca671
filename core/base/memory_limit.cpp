#include "core/base/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace fusionscope {

double memoryLimitBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long pageSize = sysconf(_SC_PAGE_SIZE);
  double limit = pages > 0 && pageSize > 0 ? static_cast<double>(pages) * static_cast<double>(pageSize) : 0;
  rlimit addressSpace{};
  if (getrlimit(RLIMIT_AS, &addressSpace) == 0 && addressSpace.rlim_cur != RLIM_INFINITY) {
    const auto cap = static_cast<double>(addressSpace.rlim_cur);
    limit = limit > 0 ? std::min(limit, cap) : cap;
  }
  return limit;
}

std::string humanBytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 6) {
    bytes /= 1000;
    ++unit;
  }
  return fmt::format("{:.1f} {}", bytes, units[unit]);
}

}  // namespace fusionscope
