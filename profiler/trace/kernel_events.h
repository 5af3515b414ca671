#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profiler/trace/event_args.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::profiler {

// The HLO instruction an event ran: its args' "hlo_op" (XLA's thunk and kernel events, fusionscope-gpurun's
// kernels), else "instruction"; empty when neither is a non-empty string.
std::string hloOp(const TraceEvent& event);
// The HLO module it ran in: its args' "hlo_module" (XLA); empty when absent.
std::string hloModule(const TraceEvent& event);

// Kernel names are compared after normalising '.', '-' and '_' to '_' ("fusion.3" in HLO is "fusion_3" in PTX).
std::string normalizeKernelName(std::string_view name);

// Which HLO instruction each complete event of one trace ran, decided once so that the viewer's kernel <-> graph
// links and the CLI agree: its hloOp() when its args name one (what fusionscope-gpurun and XLA's profiler write),
// else its name. Events are positions in trace.events; the index keeps no pointer to the trace, so every query
// takes the trace it was built from.
class InstructionIndex {
 public:
  explicit InstructionIndex(const Trace& trace);

  std::string_view instructionOf(const Trace& trace, size_t event) const;
  // Complete events that ran `instruction` (instructionOf, compared after normalizeKernelName): an event with an
  // "hlo_op" arg matches by that arg only, so a PTX kernel named differently still links to its fusion.
  std::vector<uint32_t> eventsOfInstruction(const Trace& trace, std::string_view instruction) const;

 private:
  std::unordered_map<uint32_t, std::string> m_instructionArg;  // complete event -> its hlo_op/instruction arg
};

// Complete events whose name equals `name` after normalizeKernelName on both sides, in event order.
std::vector<uint32_t> eventsNamed(const Trace& trace, std::string_view name);

// Which complete events of one trace are kernels, decided once so that `stats`, `compare` and the viewer agree.
// A kernel is:
//  - an event with category "kernel": Kineto/CUPTI, our CUPTI collector and GPU runner, `fusionscope-cli run`;
//  - an XLA op event (args "hlo_op", as XLA's profiler writes thunks and kernels; no category): on a device
//    process (process name with "/device:", not CPU) outside xprof's derived lines ("XLA Ops", "Steps", ...);
//    on the host (XLA:CPU's thunks on `tf_XLAEigen`/`tf_XLAPjRtCpuClient` or the caller's thread) only when the
//    trace has no device kernels, because then host events with hlo_op are launches, not the work.
// An XLA op event that encloses another one on its thread (a while, conditional or call thunk around its body)
// is control flow, not a kernel: counting it would count its body's time twice.
// Device work is kernels plus copies and memsets (categories naming memcpy or memset, as Kineto's gpu_memcpy).
class KernelClassifier {
 public:
  explicit KernelClassifier(const Trace& trace);

  // Indices are positions in trace.events.
  bool isKernel(size_t event) const { return m_kinds[event] == Kind::kKernel; }
  bool isDeviceWork(size_t event) const { return m_kinds[event] != Kind::kOther; }
  int64_t kernelCount() const { return m_kernelCount; }

 private:
  enum class Kind : uint8_t { kOther, kKernel, kCopy };
  std::vector<Kind> m_kinds;
  int64_t m_kernelCount = 0;
};

}  // namespace fusionscope::profiler
