#pragma once

// The GPU bundle written by `fusionscope-cli compile --target=nvptx` (docs/PROFILER.md, "GPU bundle"): a directory
// with bundle.json, kernels.ptx and (when there are constants) constants.bin. Parsed with nlohmann/json only, so
// the standalone runner build needs nothing but the CUDA toolkit, CMake, g++ and nlohmann/json.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace fusionscope::profiler::gpu {

inline constexpr const char* kBundleSchema = "fusionscope.bundle/1";

struct BundleBuffer {
  int64_t id = 0;
  int64_t bytes = 0;
  std::optional<int64_t> constantOffset;  // where its bytes start in constants.bin
};

struct BundleValue {  // a parameter or an output
  int64_t index = 0;
  std::string name;
  std::string dtype;
  std::vector<int64_t> dims;
  int64_t buffer = 0;
  std::optional<int64_t> aliasesParameter;  // outputs only
  int64_t elements() const;
};

struct BundleKernel {
  std::string name;         // the PTX .entry
  std::string instruction;  // the HLO fusion or instruction it runs
  std::string kind;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<int64_t> args;  // buffer ids, one 64-bit pointer parameter each
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  int64_t elements = 0;
};

struct Bundle {
  std::string directory;
  std::string module;
  bool fusion = false;
  std::string triple;
  int64_t sm = 0;
  std::string ptxFile;
  std::string constantsFile;
  std::vector<BundleBuffer> buffers;
  std::vector<BundleValue> parameters;
  std::vector<BundleValue> outputs;
  std::vector<BundleKernel> kernels;
  int64_t peakBytes = 0;

  const BundleBuffer* buffer(int64_t id) const;
};

// Bytes per element of a bundle dtype (f32 f64 f16 bf16 s8 s16 s32 s64 u8 u16 u32 u64 pred); 0 when unknown.
int64_t dtypeBytes(const std::string& dtype);

// Parses and validates bundle.json text: schema, unique buffer ids with positive sizes, parameters/outputs/kernel
// args that name existing buffers, dtypes, values that fit their buffers, launch shapes. Errors read
// "NAME: error: kernels[2].args[1]: unknown buffer 17".
StatusOr<Bundle> parseBundle(const std::string& json, const std::string& name);

// Reads DIR/bundle.json and checks that the files it names exist (and constants fit constants.bin).
StatusOr<Bundle> loadBundle(const std::string& directory);

}  // namespace fusionscope::profiler::gpu
