// Prints what scripts/gpu-check reports about the machine, as JSON: the driver's CUDA version
// (cuDriverGetVersion, driver dlopen'ed as profiler/cupti does) and the CUPTI API version (cuptiGetVersion).
// Built by the script with g++ against the toolkit's headers and libcupti; no GPU is needed to run it.
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>

int main() {
  int driver = -1;
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    using GetVersion = int (*)(int*);
    if (auto get = reinterpret_cast<GetVersion>(dlsym(cuda, "cuDriverGetVersion"))) get(&driver);
  }
  uint32_t cupti = 0;
  const bool cuptiOk = cuptiGetVersion(&cupti) == CUPTI_SUCCESS;
  char driverText[32] = "null";
  if (driver > 0) std::snprintf(driverText, sizeof driverText, "\"%d.%d\"", driver / 1000, (driver % 1000) / 10);
  std::printf("{\"driver_cuda_version\": %s, \"cupti_api_version\": %d, \"cupti_header_version\": %d}\n", driverText,
              cuptiOk ? static_cast<int>(cupti) : -1, CUPTI_API_VERSION);
  return 0;
}
