#include "core/ir/hlo_module.h"

#include <unordered_set>

namespace fusionscope::core {

HloModule::HloModule(std::string name) : m_name(std::move(name)) {}

const std::string* HloModule::findHeaderAttribute(std::string_view key) const {
  for (const auto& [k, v] : m_header) {
    if (k == key) return &v;
  }
  return nullptr;
}

HloComputation* HloModule::addComputation(std::unique_ptr<HloComputation> computation) {
  HloComputation* raw = computation.get();
  raw->m_parent = this;
  m_computations.push_back(std::move(computation));
  m_byName.emplace(raw->name(), raw);
  return raw;
}

HloComputation* HloModule::findComputation(std::string_view name) const {
  auto it = m_byName.find(name);
  return it == m_byName.end() ? nullptr : it->second;
}

int64_t HloModule::instructionCount() const {
  int64_t count = 0;
  for (const auto& computation : m_computations) count += computation->instructionCount();
  return count;
}

std::vector<HloComputation*> HloModule::computationsPostOrder() const {
  std::vector<HloComputation*> order;
  std::unordered_set<const HloComputation*> visited;
  // Call graphs are shallow (nesting depth, not size), so recursion is fine here.
  auto visit = [&](auto&& self, HloComputation* computation) -> void {
    if (!visited.insert(computation).second) return;
    for (const auto& inst : computation->instructions()) {
      for (HloComputation* callee : inst->calledComputations()) {
        if (callee) self(self, callee);
      }
    }
    order.push_back(computation);
  };
  for (const auto& computation : m_computations) visit(visit, computation.get());
  return order;
}

void HloModule::updateFusionComputationFlags() {
  for (const auto& computation : m_computations) computation->setIsFusionComputation(false);
  for (const auto& computation : m_computations) {
    for (const auto& inst : computation->instructions()) {
      if (HloComputation* fused = inst->fusedComputation()) fused->setIsFusionComputation(true);
    }
  }
}

}  // namespace fusionscope::core
