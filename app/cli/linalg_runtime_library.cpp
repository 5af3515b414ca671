// Where this build put libfusionscope_linalg.a (core/linalg/linalg_runtime.cpp), the library an ahead-of-time object
// that calls LAPACK links beside it. Its own translation unit, as injection_library.cpp: an absolute path on every
// source's command line would defeat the compiler cache across clones.
namespace fusionscope::cli {

const char* builtLinalgRuntimeLibrary() {
#ifdef FS_LINALG_RUNTIME_LIBRARY
  return FS_LINALG_RUNTIME_LIBRARY;
#else
  return nullptr;
#endif
}

}  // namespace fusionscope::cli
