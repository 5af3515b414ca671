#include "core/runtime/feedback_loop.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace fusionscope::core {

StatusOr<FeedbackLoop> FeedbackLoop::create(CpuExecutable& executable) {
  std::vector<std::pair<int64_t, int64_t>> carried;
  for (const PlanOutput& output : executable.plan().outputs) {
    if (output.aliasesParameter) carried.emplace_back(output.index, *output.aliasesParameter);
  }
  if (carried.empty()) {
    return Status::error(
        fmt::format("{}: no output aliases a parameter (input_output_alias), so nothing carries over "
                    "from one step to the next",
                    executable.plan().module));
  }
  for (const PlanParameter& p : executable.plan().parameters) {
    std::memset(executable.mutableBufferData(p.buffer), 0, static_cast<size_t>(p.shape.byteSize()));
  }
  return FeedbackLoop(executable, std::move(carried));
}

Status FeedbackLoop::setBatch(int64_t parameter, const void* dataset, int64_t rows, int64_t step) {
  const ExecutionPlan& plan = m_executable->plan();
  if (parameter < 0 || parameter >= static_cast<int64_t>(plan.parameters.size())) {
    return Status::error(fmt::format("no parameter {}", parameter));
  }
  const PlanParameter& p = plan.parameters[static_cast<size_t>(parameter)];
  if (p.shape.rank() == 0 || p.shape.dimension(0) == 0) {
    return Status::error(fmt::format("parameter '{}' has no leading batch dimension", p.name));
  }
  if (rows <= 0) return Status::error(fmt::format("the dataset for parameter '{}' is empty", p.name));
  const int64_t batch = p.shape.dimension(0);
  const int64_t rowBytes = p.shape.byteSize() / batch;
  uint8_t* to = m_executable->mutableBufferData(p.buffer);
  const auto* from = static_cast<const uint8_t*>(dataset);
  int64_t row = (step % rows) * batch % rows;
  for (int64_t filled = 0; filled < batch;) {
    const int64_t run = std::min(batch - filled, rows - row);
    std::memcpy(to + filled * rowBytes, from + row * rowBytes, static_cast<size_t>(run * rowBytes));
    filled += run;
    row = (row + run) % rows;
  }
  return okStatus();
}

Status FeedbackLoop::step(std::vector<ExecutionSpan>* spans) {
  FS_RETURN_IF_ERROR(m_executable->execute(spans));
  const ExecutionPlan& plan = m_executable->plan();
  for (auto [output, parameter] : m_carried) {
    const PlanOutput& o = plan.outputs[static_cast<size_t>(output)];
    const PlanParameter& p = plan.parameters[static_cast<size_t>(parameter)];
    // An output written in place already is the parameter; otherwise copy it over.
    if (o.buffer != p.buffer) {
      std::memcpy(m_executable->mutableBufferData(p.buffer), m_executable->bufferData(o.buffer),
                  static_cast<size_t>(o.shape.byteSize()));
    }
  }
  return okStatus();
}

}  // namespace fusionscope::core
