#pragma once

// One checked wrapper for every CUPTI and CUDA driver call: FS_CUDA_CHECK(expr) evaluates a call returning
// CUptiResult or CUresult and, on failure, returns from the enclosing function a Status whose message keeps the
// call's text, file, line, the numeric code and CUPTI's (or the driver's) own message:
//   "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) failed at collector.cpp:88: CUPTI error 17: ..."
// core/base/status.h is header-only, so this builds in the standalone GPU runner too (no fs_base link).
#include <cuda.h>
#include <cupti.h>

#include <string>

#include "core/base/status.h"

namespace fusionscope::profiler::cupti {

// The driver's message for a CUresult, through the dlopen'ed cuGetErrorString when the driver is loaded.
std::string driverErrorText(CUresult result);

inline Status callStatus(CUptiResult result, const char* call, const char* file, int line) {
  if (result == CUPTI_SUCCESS) return okStatus();
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  return Status::error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": CUPTI error " +
                       std::to_string(static_cast<int>(result)) + ": " + text);
}

inline Status callStatus(CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS) return okStatus();
  return Status::error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": CUDA driver error " +
                       std::to_string(static_cast<int>(result)) + ": " + driverErrorText(result));
}

}  // namespace fusionscope::profiler::cupti

#define FS_CUDA_CHECK(expr)                                                            \
  do {                                                                                 \
    ::fusionscope::Status fsCudaStatus_ =                                              \
        ::fusionscope::profiler::cupti::callStatus((expr), #expr, __FILE__, __LINE__); \
    if (!fsCudaStatus_.ok()) return fsCudaStatus_;                                     \
  } while (false)
