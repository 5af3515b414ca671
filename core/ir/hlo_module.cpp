#include "core/ir/hlo_module.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace fusionscope::core {

HloModule::HloModule(std::string name) : m_name(std::move(name)) {}

const std::string* HloModule::findHeaderAttribute(std::string_view key) const {
  for (const auto& [k, v] : m_header) {
    if (k == key) return &v;
  }
  return nullptr;
}

void HloModule::setHeaderTables(std::vector<HeaderTable> tables) {
  m_tables = std::move(tables);
  m_stackFrames = StackFrameIndex(m_tables);
}

std::optional<SourceLocation> HloModule::sourceLocation(const OpMetadata& metadata) const {
  if (std::optional<int64_t> frame = stackFrameId(metadata)) {
    if (std::optional<SourceLocation> location = m_stackFrames.location(*frame)) return location;
  }
  if (metadata.sourceFile.empty()) return std::nullopt;
  SourceLocation location;
  location.file = metadata.sourceFile;
  location.line = metadata.sourceLine.value_or(0);
  return location;
}

HloComputation* HloModule::addComputation(std::unique_ptr<HloComputation> computation) {
  HloComputation* raw = computation.get();
  raw->m_parent = this;
  raw->m_slot = m_computations.size();
  m_computations.push_back(std::move(computation));
  m_byName.emplace(raw->name(), raw);
  return raw;
}

HloComputation* HloModule::findComputation(std::string_view name) const {
  auto it = m_byName.find(name);
  return it == m_byName.end() ? nullptr : it->second;
}

std::string HloModule::uniqueComputationName(std::string_view base) const {
  if (!m_byName.count(base)) return std::string(base);
  int64_t& next = m_nextSuffix[std::string(base)];
  for (int64_t n = std::max<int64_t>(next, 1);; ++n) {
    std::string candidate = fmt::format("{}.{}", base, n);
    if (!m_byName.count(candidate)) {
      next = n + 1;
      return candidate;
    }
  }
}

Status HloModule::removeComputation(HloComputation* computation) {
  if (computation == m_entry) return Status::error(fmt::format("cannot remove the entry {}", computation->name()));
  if (computation->parent() != this || computation->m_slot >= m_computations.size() ||
      m_computations[computation->m_slot].get() != computation) {
    return Status::error(fmt::format("cannot remove {}: not a computation of {}", computation->name(), m_name));
  }
  m_byName.erase(computation->name());
  m_computations[computation->m_slot].reset();
  ++m_removed;
  return okStatus();
}

const std::vector<std::unique_ptr<HloComputation>>& HloModule::computations() const {
  if (m_removed > 0) {
    m_computations.erase(std::remove(m_computations.begin(), m_computations.end(), nullptr), m_computations.end());
    m_removed = 0;
    for (size_t i = 0; i < m_computations.size(); ++i) m_computations[i]->m_slot = i;
  }
  return m_computations;
}

int64_t HloModule::removeUnreachableComputations() {
  if (!m_entry) return 0;
  std::unordered_set<const HloComputation*> reachable{m_entry};
  std::vector<const HloComputation*> work{m_entry};
  while (!work.empty()) {
    const HloComputation* computation = work.back();
    work.pop_back();
    for (const auto& inst : computation->instructions()) {
      for (HloComputation* callee : inst->calledComputations()) {
        if (callee && reachable.insert(callee).second) work.push_back(callee);
      }
    }
  }
  size_t before = computations().size();
  for (const auto& computation : m_computations) {
    if (!reachable.count(computation.get())) m_byName.erase(computation->name());
  }
  m_computations.erase(std::remove_if(m_computations.begin(), m_computations.end(),
                                      [&](const auto& owned) { return !reachable.count(owned.get()); }),
                       m_computations.end());
  for (size_t i = 0; i < m_computations.size(); ++i) m_computations[i]->m_slot = i;
  return static_cast<int64_t>(before - m_computations.size());
}

int64_t HloModule::fusionCount() const {
  int64_t count = 0;
  for (const auto& computation : computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) count += inst->isFusion() ? 1 : 0;
  }
  return count;
}

int64_t HloModule::instructionCount() const {
  int64_t count = 0;
  for (const auto& computation : computations()) count += computation->instructionCount();
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
  for (const auto& computation : computations()) visit(visit, computation.get());
  return order;
}

void HloModule::sortComputationsInPostOrder() {
  std::vector<HloComputation*> order = computationsPostOrder();
  std::unordered_map<const HloComputation*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::stable_sort(m_computations.begin(), m_computations.end(),
                   [&](const auto& a, const auto& b) { return position[a.get()] < position[b.get()]; });
  for (size_t i = 0; i < m_computations.size(); ++i) m_computations[i]->m_slot = i;
}

void HloModule::updateFusionComputationFlags() {
  for (const auto& computation : computations()) computation->setIsFusionComputation(false);
  for (const auto& computation : computations()) {
    for (const auto& inst : computation->instructions()) {
      if (HloComputation* fused = inst->fusedComputation()) fused->setIsFusionComputation(true);
    }
  }
}

HloComputation* addScalarAddComputation(HloModule& module, PrimitiveType type) {
  auto computation = std::make_unique<HloComputation>(module.uniqueComputationName("scalar_add_computation"));
  HloComputation* reducer = module.addComputation(std::move(computation));
  const Shape shape = Shape::scalar(type);
  std::vector<HloInstruction*> params;
  for (int64_t number : {0, 1}) {
    params.push_back(reducer->addInstruction(number == 0 ? "lhs" : "rhs", HloOpcode::kParameter, shape));
    params.back()->setParameterNumber(number);
  }
  reducer->setRoot(reducer->addInstruction("add", HloOpcode::kAdd, shape, params));
  return reducer;
}

}  // namespace fusionscope::core
