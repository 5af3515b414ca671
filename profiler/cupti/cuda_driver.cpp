#include "profiler/cupti/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "profiler/cupti/cuda_check.h"

namespace fusionscope::profiler::cupti {
namespace {

struct Loaded {
  void* handle = nullptr;
  DriverApi api;
  std::string error;
};

template <typename F>
bool resolve(void* handle, F& target, const char* name, std::string& error) {
  target = reinterpret_cast<F>(::dlsym(handle, name));
  if (target == nullptr && error.empty()) error = std::string("the CUDA driver has no ") + name;
  return target != nullptr;
}

const Loaded& loaded() {
  static Loaded result;
  static std::once_flag once;
  std::call_once(once, [] {
    result.handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (result.handle == nullptr) {
      result.error = kNoDriverMessage;
      return;
    }
    DriverApi& a = result.api;
    std::string& e = result.error;
    void* h = result.handle;
    resolve(h, a.cuInit, "cuInit", e);
    resolve(h, a.cuDeviceGetCount, "cuDeviceGetCount", e);
    resolve(h, a.cuDeviceGet, "cuDeviceGet", e);
    resolve(h, a.cuDeviceGetName, "cuDeviceGetName", e);
    resolve(h, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", e);
    resolve(h, a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", e);
    resolve(h, a.cuCtxSetCurrent, "cuCtxSetCurrent", e);
    resolve(h, a.cuCtxSynchronize, "cuCtxSynchronize", e);
    resolve(h, a.cuMemAlloc, "cuMemAlloc_v2", e);
    resolve(h, a.cuMemFree, "cuMemFree_v2", e);
    resolve(h, a.cuMemcpyHtoD, "cuMemcpyHtoD_v2", e);
    resolve(h, a.cuMemcpyDtoH, "cuMemcpyDtoH_v2", e);
    resolve(h, a.cuMemcpyDtoD, "cuMemcpyDtoD_v2", e);
    resolve(h, a.cuMemsetD8, "cuMemsetD8_v2", e);
    resolve(h, a.cuModuleLoadDataEx, "cuModuleLoadDataEx", e);
    resolve(h, a.cuModuleUnload, "cuModuleUnload", e);
    resolve(h, a.cuModuleGetFunction, "cuModuleGetFunction", e);
    resolve(h, a.cuLaunchKernel, "cuLaunchKernel", e);
    resolve(h, a.cuGetErrorString, "cuGetErrorString", e);
  });
  return result;
}

}  // namespace

std::string driverErrorText(CUresult result) {
  const Loaded& l = loaded();
  const char* text = nullptr;
  if (l.api.cuGetErrorString && l.api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text) return text;
  return "unknown CUDA driver error";
}

bool driverLibraryPresent() {
  void* handle = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

StatusOr<const DriverApi*> loadDriver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) return Status::error(l.error);
  return &l.api;
}

}  // namespace fusionscope::profiler::cupti
