// The out-of-memory reserve (core/base/oom_reserve.h): an allocation failing while a large nlohmann::json is
// unwound used to end in std::terminate (its destructor allocates a stack to free the tree), so `dump` of a
// 100,000-instruction module under `ulimit -v` aborted instead of saying "out of memory".

#include "core/base/oom_reserve.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <new>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fusionscope {
namespace {

// In a child under a 512 MB address-space limit: grows a JSON array of objects until an allocation fails. Exits 42
// when std::bad_alloc reached the catch (the tree destroyed on the way), 43 when memory never ran out.
[[noreturn]] void growJsonUntilOutOfMemory(bool withReserve) {
  const rlim_t limit = rlim_t{1} << 29;
  const rlimit addressSpace{limit, limit};
  if (::setrlimit(RLIMIT_AS, &addressSpace) != 0) ::_exit(44);
  if (withReserve) installOutOfMemoryReserve();
  try {
    nlohmann::json list = nlohmann::json::array();
    for (int64_t i = 0; i < (int64_t{1} << 40); ++i) {
      list.push_back({{"name", std::string(2000, 'x')}, {"users", nlohmann::json::array({i, i + 1})}});
    }
  } catch (const std::bad_alloc&) {
    ::_exit(42);
  }
  ::_exit(43);
}

TEST(OutOfMemoryReserveTest, ABadAllocUnwindsThroughJsonDestructors) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer needs terabytes of address space: no ulimit -v under it";
#endif
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) growJsonUntilOutOfMemory(true);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFSIGNALED(status)) << "signal " << WTERMSIG(status) << ": the unwinding ran out of memory";
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

}  // namespace
}  // namespace fusionscope
