// Where this build put the CUPTI injection library (profiler/cupti), or nullptr when the CUDA toolkit was absent.
// Its own translation unit: the absolute path on this file's command line would otherwise make every CLI source's
// compiler-cache key depend on the build folder (a clean clone elsewhere recompiled all of them).
namespace fusionscope::cli {

const char* builtInjectionLibrary() {
#ifdef FS_INJECTION_LIBRARY
  return FS_INJECTION_LIBRARY;
#else
  return nullptr;
#endif
}

}  // namespace fusionscope::cli
