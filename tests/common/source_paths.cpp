#include "tests/common/source_paths.h"

// The values come from tests/common/CMakeLists.txt, on this file's command line only.
namespace fusionscope::testing::paths {

const char* sourceDir() { return FS_SOURCE_DIR_VALUE; }
const char* cliPath() { return FS_CLI_PATH_VALUE; }
const char* gpurunPath() { return FS_GPURUN_PATH_VALUE; }
const char* stubDriverDir() { return FS_STUB_DRIVER_DIR_VALUE; }
const char* trainMnistPath() { return FS_TRAIN_MNIST_PATH_VALUE; }
const char* trainMnistAotPath() { return FS_TRAIN_MNIST_AOT_PATH_VALUE; }

}  // namespace fusionscope::testing::paths
