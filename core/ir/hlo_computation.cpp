#include "core/ir/hlo_computation.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "core/base/flat_ptr_map.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

HloComputation::HloComputation(std::string name) : m_name(std::move(name)) {}

HloInstruction* HloComputation::addInstruction(std::unique_ptr<HloInstruction> instruction) {
  HloInstruction* raw = instruction.get();
  raw->m_parent = this;
  m_instructions.push_back(std::move(instruction));
  m_byName.emplace(raw->name(), raw);
  return raw;
}

Status HloComputation::removeInstruction(HloInstruction* instruction) {
  if (!instruction->users().empty()) {
    return Status::error(
        fmt::format("cannot remove {}: it still has {} user(s)", instruction->name(), instruction->users().size()));
  }
  if (instruction == m_root) return Status::error(fmt::format("cannot remove {}: it is the root", instruction->name()));
  instruction->dropAllOperands();
  instruction->dropAllControlDependencies();
  m_byName.erase(instruction->name());
  auto it = std::find_if(m_instructions.begin(), m_instructions.end(),
                         [&](const auto& owned) { return owned.get() == instruction; });
  if (it != m_instructions.end()) m_instructions.erase(it);
  return okStatus();
}

HloInstruction* HloComputation::findInstruction(std::string_view name) const {
  auto it = m_byName.find(name);
  return it == m_byName.end() ? nullptr : it->second;
}

Status HloComputation::renameInstruction(HloInstruction* instruction, std::string name) {
  if (name == instruction->name()) return okStatus();
  if (m_byName.count(name)) {
    return Status::error(
        fmt::format("cannot rename {} to {}: name already used in {}", instruction->name(), name, m_name));
  }
  m_byName.erase(instruction->name());
  instruction->m_name = std::move(name);
  m_byName.emplace(instruction->name(), instruction);
  return okStatus();
}

std::vector<HloInstruction*> HloComputation::parameters() const {
  std::vector<HloInstruction*> params;
  for (const auto& inst : m_instructions) {
    if (inst->opcode() != HloOpcode::kParameter || inst->parameterNumber() < 0) continue;
    auto n = static_cast<size_t>(inst->parameterNumber());
    if (n >= params.size()) params.resize(n + 1, nullptr);
    params[n] = inst.get();
  }
  return params;
}

int64_t HloComputation::parameterCount() const {
  return std::count_if(m_instructions.begin(), m_instructions.end(),
                       [](const auto& inst) { return inst->opcode() == HloOpcode::kParameter; });
}

StatusOr<std::vector<HloInstruction*>> HloComputation::postOrder() const {
  // Iterative DFS so a 100k-deep chain cannot overflow the stack. 0 = unvisited, 1 = on stack, 2 = done.
  FlatPtrMap<HloInstruction, uint8_t> state(m_instructions.size());
  std::vector<HloInstruction*> order;
  order.reserve(m_instructions.size());
  struct Frame {
    HloInstruction* inst;
    size_t next;
  };
  std::vector<Frame> stack;
  auto predecessorAt = [](const HloInstruction* inst, size_t i) -> HloInstruction* {
    size_t n = inst->operands().size();
    return i < n ? inst->operands()[i] : inst->controlPredecessors()[i - n];
  };
  for (const auto& start : m_instructions) {
    if (state[start.get()] != 0) continue;
    stack.push_back({start.get(), 0});
    state[start.get()] = 1;
    while (!stack.empty()) {
      Frame& frame = stack.back();
      size_t total = frame.inst->operands().size() + frame.inst->controlPredecessors().size();
      if (frame.next == total) {
        state[frame.inst] = 2;
        order.push_back(frame.inst);
        stack.pop_back();
        continue;
      }
      HloInstruction* pred = predecessorAt(frame.inst, frame.next++);
      uint8_t& s = state[pred];
      if (s == 1) {
        return Status::error(fmt::format("cycle in computation {}: {} depends on itself through {}", m_name,
                                         pred->name(), frame.inst->name()));
      }
      if (s == 0) {
        s = 1;
        stack.push_back({pred, 0});
      }
    }
  }
  return order;
}

bool HloComputation::isEntry() const {
  return m_parent && m_parent->entry() == this;
}

}  // namespace fusionscope::core
