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

// A value moved at a loop or branch boundary: `swap` exchanges the two buffers' pointers in the runner's table
// (later launches see the exchanged memory), else min(both sizes) bytes are copied from `from` to `to`.
struct BundleMove {
  int64_t from = 0;
  int64_t to = 0;
  bool swap = false;
};

// One step of bundle.json's "program" (docs/BUNDLE.md, "Control flow"): launch kernels[kernel]; or a while loop
// (moves `init`, then: run `condition`, read the pred byte in buffer `predicate`, stop when 0, else run `body` and
// the `update` moves); or a conditional (read the branch index in `selector`, run that branch, then its
// `branchResults` moves).
struct BundleStep {
  enum class Kind { kKernel, kWhile, kConditional };
  Kind kind = Kind::kKernel;
  int64_t kernel = -1;
  std::string instruction;
  std::vector<BundleMove> init;
  std::vector<BundleStep> condition;
  int64_t predicate = -1;
  std::vector<BundleStep> body;
  std::vector<BundleMove> update;
  int64_t selector = -1;
  std::string selectorDtype;
  std::vector<std::vector<BundleStep>> branches;
  std::vector<std::vector<BundleMove>> branchResults;
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
  std::vector<BundleStep> program;  // empty: the kernels run once each, in order
  int64_t peakBytes = 0;

  const BundleBuffer* buffer(int64_t id) const;
};

// What running a program needs from a device; fusionscope-gpurun implements it with the CUDA driver, tests with
// host memory. Buffers are addressed by id through a table the device keeps: `swap` exchanges two entries.
class ProgramDevice {
 public:
  virtual ~ProgramDevice() = default;
  virtual Status launch(int64_t kernel) = 0;  // kernels[kernel] with the table's current pointers, in stream order
  virtual Status read(int64_t buffer, void* out, int64_t bytes) = 0;  // after every launch before it has finished
  virtual Status copy(int64_t from, int64_t to, int64_t bytes) = 0;   // in stream order
  virtual void swap(int64_t a, int64_t b) = 0;
};

// Runs the bundle's program once (its kernels in order when it has none). `interrupt` (may be null) is checked
// before every loop trip: non-zero stops the run with an error naming the loop and the trips done. `launches`
// (may be null) counts kernel launches.
Status runProgram(const Bundle& bundle, ProgramDevice& device, const volatile int* interrupt = nullptr,
                  int64_t* launches = nullptr);

// The branch a conditional with `branches` branches runs for the selector bytes `data` of `dtype` (XLA: a pred
// selects branch 0 when true; an integer outside [0, branches) selects the last).
int64_t branchIndex(const uint8_t* data, const std::string& dtype, int64_t branches);

// Bytes per element of a bundle dtype (f32 f64 f16 bf16 s8 s16 s32 s64 u8 u16 u32 u64 pred); 0 when unknown.
int64_t dtypeBytes(const std::string& dtype);

// Parses and validates bundle.json text: schema, unique buffer ids with positive sizes, parameters/outputs/kernel
// args that name existing buffers, dtypes, values that fit their buffers, launch shapes. Errors read
// "NAME: error: kernels[2].args[1]: unknown buffer 17".
StatusOr<Bundle> parseBundle(const std::string& json, const std::string& name);

// Reads a whole regular file of at most `maxBytes` (a FIFO, device or directory is refused without blocking, a
// larger file before reading it).
StatusOr<std::string> readRegularFile(const std::string& path, int64_t maxBytes);

// Reads DIR/bundle.json and checks that the files it names exist (and constants fit constants.bin).
StatusOr<Bundle> loadBundle(const std::string& directory);

}  // namespace fusionscope::profiler::gpu
