#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/runtime/cpu_executable.h"

namespace fusionscope::core {

// Runs a compiled step function repeatedly, the way a training loop does: after each step every output the
// module aliases to a parameter (input_output_alias, e.g. W' -> W) is that parameter's value for the next step.
// The other parameters are the step's inputs; setBatch feeds one from a dataset, batch after batch. Holds the
// executable by reference; it must outlive the loop.
class FeedbackLoop {
 public:
  // Sets every parameter to zero, the loop's starting point (set starting values and the first batch after this).
  // Fails when no output aliases a parameter (nothing would carry over from one step to the next).
  static StatusOr<FeedbackLoop> create(CpuExecutable& executable);

  // Parameter `parameter` takes rows [step*b, step*b + b) of `dataset` (its leading dimension b is the batch), the
  // rows wrapping around the end of the dataset. `dataset` holds `rows` rows of the parameter's element type and
  // trailing dimensions, as little-endian bytes.
  Status setBatch(int64_t parameter, const void* dataset, int64_t rows, int64_t step);
  // Runs the step once, then carries each aliased output into its parameter. Fails when a loop was interrupted.
  Status step(std::vector<ExecutionSpan>* spans = nullptr);

  // (output, parameter) pairs that carry over, in output order.
  const std::vector<std::pair<int64_t, int64_t>>& carried() const { return m_carried; }

 private:
  FeedbackLoop(CpuExecutable& executable, std::vector<std::pair<int64_t, int64_t>> carried)
      : m_executable(&executable), m_carried(std::move(carried)) {}

  CpuExecutable* m_executable;
  std::vector<std::pair<int64_t, int64_t>> m_carried;
};

}  // namespace fusionscope::core
