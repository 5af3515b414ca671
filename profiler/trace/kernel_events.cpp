#include "profiler/trace/kernel_events.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

namespace fusionscope::profiler {
namespace {

bool equalsNoCase(std::string_view text, std::string_view lower) {
  return text.size() == lower.size() && std::equal(text.begin(), text.end(), lower.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

bool containsNoCase(std::string_view text, std::string_view lower) {
  return std::search(text.begin(), text.end(), lower.begin(), lower.end(),
                     [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }) != text.end();
}

// A process XLA's profiler names after an accelerator: "/device:GPU:0", "/device:TPU:0", "/device:CUSTOM:0" (xprof's
// plane names). "/host:CPU" and TF's "/job:.../device:CPU:0" are the host.
bool isDeviceProcessName(std::string_view name) {
  return name.find("/device:") != std::string_view::npos && name.find("/device:CPU") == std::string_view::npos;
}

// Lines xprof derives on a device plane from the kernels' annotations: their events repeat the kernels' time.
bool isDerivedLineName(std::string_view name) {
  static constexpr std::string_view kDerived[] = {"Steps",
                                                  "XLA Modules",
                                                  "XLA Ops",
                                                  "Async XLA Ops",
                                                  "Framework Ops",
                                                  "Framework Name Scope",
                                                  "TensorFlow Ops",
                                                  "TensorFlow Name Scope",
                                                  "Source code",
                                                  "Launch Stats",
                                                  "Host Offload Ops",
                                                  "Sparse Core Steps",
                                                  "Sparse Core Modules",
                                                  "Sparse Core Ops"};
  return std::find(std::begin(kDerived), std::end(kDerived), name) != std::end(kDerived);
}

}  // namespace

std::string hloOp(const TraceEvent& event) {
  for (std::string_view key : {"hlo_op", "instruction"}) {
    if (std::optional<std::string> value = argString(event.args, key); value && !value->empty()) return *value;
  }
  return {};
}

std::string hloModule(const TraceEvent& event) {
  return argString(event.args, "hlo_module").value_or(std::string());
}

std::string normalizeKernelName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '.' || c == '-') c = '_';
  }
  return out;
}

InstructionIndex::InstructionIndex(const Trace& trace) {
  // The args a GPU runner adds (and XLA's profiler writes) name the HLO op, whatever the kernel is called.
  for (uint32_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.phase != 'X' || e.args.empty()) continue;
    if (std::string op = hloOp(e); !op.empty()) m_instructionArg.emplace(i, std::move(op));
  }
}

std::string_view InstructionIndex::instructionOf(const Trace& trace, size_t event) const {
  auto found = m_instructionArg.find(static_cast<uint32_t>(event));
  return found != m_instructionArg.end() ? std::string_view(found->second) : trace.events[event].name;
}

std::vector<uint32_t> InstructionIndex::eventsOfInstruction(const Trace& trace, std::string_view instruction) const {
  const std::string wanted = normalizeKernelName(instruction);
  std::vector<uint32_t> found;
  for (uint32_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events[i].phase != 'X') continue;
    const std::string_view name = instructionOf(trace, i);
    if (name.size() == wanted.size() && normalizeKernelName(name) == wanted) found.push_back(i);
  }
  return found;
}

std::vector<uint32_t> eventsNamed(const Trace& trace, std::string_view name) {
  const std::string wanted = normalizeKernelName(name);
  std::vector<uint32_t> found;
  for (uint32_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.phase == 'X' && e.name.size() == wanted.size() && normalizeKernelName(e.name) == wanted) found.push_back(i);
  }
  return found;
}

KernelClassifier::KernelClassifier(const Trace& trace) : m_kinds(trace.events.size(), Kind::kOther) {
  enum class Place : uint8_t { kHost, kDevice, kDerived };
  std::map<std::pair<TrackId, TrackId>, Place> places;  // per (pid, tid), from the process and thread names
  auto placeOf = [&](const TraceEvent& e) {
    auto [it, added] = places.try_emplace({e.pid, e.tid}, Place::kHost);
    if (!added) return it->second;
    auto process = trace.processes.find(e.pid);
    if (process != trace.processes.end() && isDeviceProcessName(process->second.name)) {
      auto thread = trace.threads.find({e.pid, e.tid});
      it->second =
          thread != trace.threads.end() && isDerivedLineName(thread->second.name) ? Place::kDerived : Place::kDevice;
    }
    return it->second;
  };

  struct XlaOp {
    size_t event;
    bool onDevice;
  };
  std::vector<XlaOp> xlaOps;
  bool deviceKernels = false;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.phase != 'X') continue;
    if (equalsNoCase(e.cat, "kernel")) {
      m_kinds[i] = Kind::kKernel;
      deviceKernels = true;
      continue;
    }
    if (containsNoCase(e.cat, "memcpy") || containsNoCase(e.cat, "memset")) {
      m_kinds[i] = Kind::kCopy;
      continue;
    }
    if (e.args.find("\"hlo_op\"") == std::string_view::npos) continue;
    std::optional<std::string> op = argString(e.args, "hlo_op");
    if (!op || op->empty()) continue;
    const Place place = placeOf(e);
    if (place == Place::kDerived) continue;
    xlaOps.push_back({i, place == Place::kDevice});
    deviceKernels = deviceKernels || place == Place::kDevice;
  }

  // Control flow: an XLA op event that encloses another on its thread. Per thread in start order (longer first on
  // ties), an event nests in the innermost open one that has not ended before it starts.
  std::vector<bool> container(xlaOps.size(), false);
  std::map<std::pair<TrackId, TrackId>, std::vector<size_t>> byThread;  // indices into xlaOps
  for (size_t k = 0; k < xlaOps.size(); ++k) {
    const TraceEvent& e = trace.events[xlaOps[k].event];
    byThread[{e.pid, e.tid}].push_back(k);
  }
  for (auto& [thread, ops] : byThread) {
    std::stable_sort(ops.begin(), ops.end(), [&](size_t a, size_t b) {
      const TraceEvent& x = trace.events[xlaOps[a].event];
      const TraceEvent& y = trace.events[xlaOps[b].event];
      return x.tsNs != y.tsNs ? x.tsNs < y.tsNs : x.endNs() > y.endNs();
    });
    std::vector<size_t> open;
    for (size_t k : ops) {
      const TraceEvent& e = trace.events[xlaOps[k].event];
      while (!open.empty() && trace.events[xlaOps[open.back()].event].endNs() < e.endNs()) open.pop_back();
      // A zero-length event says nothing about nesting (it may just start where a kernel starts).
      if (!open.empty() && e.durNs > 0) container[open.back()] = true;
      open.push_back(k);
    }
  }

  for (size_t k = 0; k < xlaOps.size(); ++k) {
    if (container[k]) continue;
    // With device kernels in the trace, XLA op events on the host are the launches of those kernels.
    if (xlaOps[k].onDevice || !deviceKernels) m_kinds[xlaOps[k].event] = Kind::kKernel;
  }
  m_kernelCount = std::count(m_kinds.begin(), m_kinds.end(), Kind::kKernel);
}

}  // namespace fusionscope::profiler
