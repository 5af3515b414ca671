// Where the tests and benchmarks find the source tree and the programs they run.
//
// The absolute paths live in one small translation unit (source_paths.cpp, fs_source_paths), not in every test's
// compile command: a path on the command line (-DFS_SOURCE_DIR="/work/main") makes every test TU's ccache key
// depend on the checkout's folder, so a clean clone elsewhere recompiled all of them. With the paths here, a clone
// in another folder misses one tiny TU.
//
// The macros keep the names the tests always used; each is a `const char*` (not a string literal: write
// std::string(FS_SOURCE_DIR) + "/x", not FS_SOURCE_DIR "/x").
#pragma once

namespace fusionscope::testing::paths {

const char* sourceDir();       // the checkout (PROJECT_SOURCE_DIR)
const char* cliPath();         // fusionscope-cli
const char* gpurunPath();      // fusionscope-gpurun, "" when it is not built (no CUDA toolkit)
const char* stubDriverDir();   // the folder holding the symbol-less libcuda.so.1 (tests/app/stub_libcuda.cpp)
const char* trainMnistPath();  // fusionscope-mnist-train
const char* trainMnistAotPath();  // fusionscope-mnist-train-aot

}  // namespace fusionscope::testing::paths

#define FS_SOURCE_DIR (::fusionscope::testing::paths::sourceDir())
#define FS_CLI_PATH (::fusionscope::testing::paths::cliPath())
#define FS_GPURUN_PATH (::fusionscope::testing::paths::gpurunPath())
#define FS_STUB_DRIVER_DIR (::fusionscope::testing::paths::stubDriverDir())
#define FS_TRAIN_MNIST_PATH (::fusionscope::testing::paths::trainMnistPath())
#define FS_TRAIN_MNIST_AOT_PATH (::fusionscope::testing::paths::trainMnistAotPath())
