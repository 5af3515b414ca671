#include "core/ir/hlo_equal.h"

#include <fmt/format.h>

namespace fusionscope::core {
namespace {

bool sameNames(const std::vector<HloInstruction*>& a, const std::vector<HloInstruction*>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]->name() != b[i]->name()) return false;
  }
  return true;
}

bool sameCalls(const HloInstruction& a, const HloInstruction& b) {
  const auto& ra = a.calledComputationRefs();
  const auto& rb = b.calledComputationRefs();
  if (ra.size() != rb.size()) return false;
  for (size_t i = 0; i < ra.size(); ++i) {
    if (ra[i].key != rb[i].key || ra[i].braced != rb[i].braced) return false;
    if (ra[i].computations.size() != rb[i].computations.size()) return false;
    for (size_t j = 0; j < ra[i].computations.size(); ++j) {
      if (ra[i].computations[j]->name() != rb[i].computations[j]->name()) return false;
    }
  }
  return true;
}

// Which aspect of two same-named instructions differs, or empty.
std::string instructionDifference(const HloInstruction& a, const HloInstruction& b) {
  if (a.opcodeString() != b.opcodeString()) return "opcode";
  if (!(a.shape() == b.shape())) return "shape";
  if (!sameNames(a.operands(), b.operands())) return "operands";
  if (!sameNames(a.controlPredecessors(), b.controlPredecessors())) return "control predecessors";
  if (a.parameterNumber() != b.parameterNumber()) return "parameter number";
  if ((a.literal() == nullptr) != (b.literal() == nullptr)) return "literal";
  if (a.literal() && !(*a.literal() == *b.literal())) return "literal";
  if (!sameCalls(a, b)) return "called computations";
  if (!(a.attributes() == b.attributes())) return "attributes";
  return "";
}

}  // namespace

bool modulesEqual(const HloModule& a, const HloModule& b, std::string* difference) {
  auto differ = [&](std::string what) {
    if (difference) *difference = std::move(what);
    return false;
  };
  if (a.name() != b.name()) return differ(fmt::format("module name: {} vs {}", a.name(), b.name()));
  if (a.headerAttributes() != b.headerAttributes()) return differ("module header attributes");
  if (a.headerTables() != b.headerTables()) return differ("module header tables");
  if (a.computations().size() != b.computations().size()) {
    return differ(fmt::format("computation count: {} vs {}", a.computations().size(), b.computations().size()));
  }
  for (size_t c = 0; c < a.computations().size(); ++c) {
    const HloComputation& ca = *a.computations()[c];
    const HloComputation& cb = *b.computations()[c];
    if (ca.name() != cb.name()) return differ(fmt::format("computation {}: {} vs {}", c, ca.name(), cb.name()));
    if (ca.isEntry() != cb.isEntry()) return differ(fmt::format("computation {}: entry flag", ca.name()));
    if (ca.instructionCount() != cb.instructionCount()) {
      return differ(fmt::format("computation {}: {} vs {} instructions", ca.name(), ca.instructionCount(),
                                cb.instructionCount()));
    }
    if ((ca.root() == nullptr) != (cb.root() == nullptr) || (ca.root() && ca.root()->name() != cb.root()->name())) {
      return differ(fmt::format("computation {}: root", ca.name()));
    }
    for (size_t i = 0; i < ca.instructions().size(); ++i) {
      const HloInstruction& ia = *ca.instructions()[i];
      const HloInstruction& ib = *cb.instructions()[i];
      if (ia.name() != ib.name()) {
        return differ(fmt::format("computation {}: instruction {} is {} vs {}", ca.name(), i, ia.name(), ib.name()));
      }
      std::string what = instructionDifference(ia, ib);
      if (!what.empty()) {
        // Opcode and shape of each side; the IR does not depend on the text printer (core/text).
        return differ(fmt::format("computation {}, instruction {}: {} differs ({} {} vs {} {})", ca.name(), ia.name(),
                                  what, ia.opcodeString(), ia.shape().toString(), ib.opcodeString(),
                                  ib.shape().toString()));
      }
    }
  }
  return true;
}

}  // namespace fusionscope::core
