# ctest: the GPU runner's standalone project (profiler/gpu) configures with only the CUDA toolkit, CMake, a C++
# compiler and nlohmann/json's headers, as on a minimal GPU node: Qt, LLVM, Graphviz, simdjson, fmt, zlib,
# GoogleTest and nlohmann/json's CMake package (the GPU machine has none; scripts/gpu-check carries the headers) are
# made unfindable, and the resulting cache must not mention them. (Building it takes ~1 minute on 2 cores, so the
# test stops at configure; docs/PROFILER.md records a full standalone build.)
#   cmake -DSOURCE_DIR=<repo> -DBINARY_DIR=<scratch> -P gpurun_standalone_check.cmake
file(REMOVE_RECURSE "${BINARY_DIR}")
set(disabled Qt6 Qt5 LLVM Clang simdjson fmt ZLIB GTest benchmark PkgConfig CLI11 mimalloc nlohmann_json)
set(args)
foreach(package IN LISTS disabled)
  list(APPEND args "-DCMAKE_DISABLE_FIND_PACKAGE_${package}=ON")
endforeach()
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/profiler/gpu" -B "${BINARY_DIR}" ${args} --no-warn-unused-cli
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "standalone configure of profiler/gpu failed:\n${output}")
endif()
file(READ "${BINARY_DIR}/CMakeCache.txt" cache)
foreach(pattern Qt6_DIR LLVM_DIR simdjson_DIR fmt_DIR gvc cgraph graphviz nlohmann_json_DIR)
  string(FIND "${cache}" "${pattern}" found)
  if(NOT found EQUAL -1)
    message(FATAL_ERROR "the standalone GPU runner build refers to ${pattern} (CMakeCache.txt)")
  endif()
endforeach()
foreach(target fusionscope-gpurun fusionscope_inject fs_cupti)
  file(GLOB_RECURSE made "${BINARY_DIR}/CMakeFiles/${target}.dir/*")
  if(NOT made)
    message(FATAL_ERROR "the standalone configure has no target ${target}")
  endif()
endforeach()
file(REMOVE_RECURSE "${BINARY_DIR}")
message(STATUS "profiler/gpu configures standalone without ${disabled}")
