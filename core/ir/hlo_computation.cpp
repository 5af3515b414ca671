#include "core/ir/hlo_computation.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "core/ir/hlo_module.h"

namespace fusionscope::core {

HloComputation::HloComputation(std::string name) : m_name(std::move(name)) {}

HloInstruction* HloComputation::addInstruction(std::unique_ptr<HloInstruction> instruction) {
  HloInstruction* raw = instruction.get();
  raw->m_parent = this;
  raw->m_slot = m_instructions.size();
  raw->m_id = m_nextId++;
  m_instructions.push_back(std::move(instruction));
  m_byName.emplace(raw->name(), raw);
  return raw;
}

HloInstruction* HloComputation::addInstruction(std::string_view baseName, HloOpcode opcode, Shape shape,
                                               const std::vector<HloInstruction*>& operands) {
  auto inst = std::make_unique<HloInstruction>(uniqueInstructionName(baseName), opcode, std::move(shape));
  for (HloInstruction* operand : operands) inst->appendOperand(operand);
  return addInstruction(std::move(inst));
}

const std::vector<std::unique_ptr<HloInstruction>>& HloComputation::instructions() const {
  if (m_removed > 0) compact();
  return m_instructions;
}

void HloComputation::compact() const {
  size_t out = 0;
  for (size_t i = 0; i < m_instructions.size(); ++i) {
    if (!m_instructions[i]) continue;
    if (out != i) m_instructions[out] = std::move(m_instructions[i]);
    m_instructions[out]->m_slot = out;
    ++out;
  }
  m_instructions.resize(out);
  m_removed = 0;
}

Status HloComputation::removeInstruction(HloInstruction* instruction) {
  if (!instruction->users().empty()) {
    return Status::error(
        fmt::format("cannot remove {}: it still has {} user(s)", instruction->name(), instruction->users().size()));
  }
  if (instruction == m_root) return Status::error(fmt::format("cannot remove {}: it is the root", instruction->name()));
  if (instruction->parent() != this || instruction->m_slot >= m_instructions.size() ||
      m_instructions[instruction->m_slot].get() != instruction) {
    return Status::error(fmt::format("cannot remove {}: not an instruction of {}", instruction->name(), m_name));
  }
  instruction->dropAllOperands();
  instruction->dropAllControlDependencies();
  m_byName.erase(instruction->name());
  m_instructions[instruction->m_slot].reset();
  ++m_removed;
  return okStatus();
}

int64_t HloComputation::removeInstructionAndUnusedOperands(HloInstruction* instruction) {
  int64_t removed = 0;
  std::vector<HloInstruction*> work{instruction};
  while (!work.empty()) {
    HloInstruction* inst = work.back();
    work.pop_back();
    if (!inst->users().empty() || inst == m_root || inst->hasSideEffect() || !inst->controlSuccessors().empty()) {
      continue;
    }
    if (inst != instruction && inst->opcode() == HloOpcode::kParameter) continue;
    std::vector<HloInstruction*> operands = inst->operands();
    if (!removeInstruction(inst).ok()) continue;
    ++removed;
    std::sort(operands.begin(), operands.end());
    operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
    work.insert(work.end(), operands.begin(), operands.end());
  }
  return removed;
}

std::string HloComputation::uniqueInstructionName(std::string_view base) const {
  if (!m_byName.contains(base)) return std::string(base);
  // Strip a numeric suffix so `exp.3` gives `exp.4`, not `exp.3.1`.
  std::string_view stem = base;
  if (size_t dot = stem.rfind('.'); dot != std::string_view::npos && dot + 1 < stem.size() &&
                                    std::all_of(stem.begin() + static_cast<std::ptrdiff_t>(dot) + 1, stem.end(),
                                                [](char c) { return c >= '0' && c <= '9'; })) {
    stem = stem.substr(0, dot);
  }
  if (!m_byName.contains(stem)) return std::string(stem);
  int64_t& next = m_nextSuffix[std::string(stem)];
  for (int64_t n = std::max<int64_t>(next, 1);; ++n) {
    std::string candidate = fmt::format("{}.{}", stem, n);
    if (!m_byName.contains(candidate)) {
      next = n + 1;
      return candidate;
    }
  }
}

HloInstruction* HloComputation::findInstruction(std::string_view name) const {
  auto it = m_byName.find(name);
  return it == m_byName.end() ? nullptr : it->second;
}

Status HloComputation::renameInstruction(HloInstruction* instruction, std::string name) {
  if (name == instruction->name()) return okStatus();
  if (m_byName.contains(name)) {
    return Status::error(
        fmt::format("cannot rename {} to {}: name already used in {}", instruction->name(), name, m_name));
  }
  m_byName.erase(instruction->name());
  instruction->m_name = std::move(name);
  m_byName.emplace(instruction->name(), instruction);
  return okStatus();
}

std::vector<HloInstruction*> HloComputation::parameters() const {
  if (m_removed > 0) compact();
  // Sized by how many parameters there are, never by the numbers they carry: `parameter(99999999999)` must not
  // allocate (the verifier reports numbers outside 0..n-1; those leave a null slot here).
  std::vector<HloInstruction*> params(static_cast<size_t>(parameterCount()), nullptr);
  for (const auto& inst : m_instructions) {
    if (inst->opcode() != HloOpcode::kParameter || inst->parameterNumber() < 0) continue;
    auto n = static_cast<size_t>(inst->parameterNumber());
    if (n < params.size()) params[n] = inst.get();
  }
  return params;
}

int64_t HloComputation::parameterCount() const {
  if (m_removed > 0) compact();
  return std::count_if(m_instructions.begin(), m_instructions.end(),
                       [](const auto& inst) { return inst->opcode() == HloOpcode::kParameter; });
}

StatusOr<std::vector<HloInstruction*>> HloComputation::postOrder() const {
  if (m_removed > 0) compact();
  // Iterative DFS, so a 100k-deep chain cannot overflow the stack. By slot (dense after compact()):
  // 0 = unvisited, 1 = on the stack, 2 = done.
  std::vector<uint8_t> state(m_instructions.size(), 0);
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
  for (size_t i = 0; i < m_instructions.size(); ++i) {
    if (state[i] != 0) continue;
    state[i] = 1;
    stack.push_back({m_instructions[i].get(), 0});
    while (!stack.empty()) {
      Frame& frame = stack.back();
      size_t total = frame.inst->operands().size() + frame.inst->controlPredecessors().size();
      if (frame.next == total) {
        state[frame.inst->m_slot] = 2;
        order.push_back(frame.inst);
        stack.pop_back();
        continue;
      }
      HloInstruction* pred = predecessorAt(frame.inst, frame.next++);
      if (pred->parent() != this || pred->m_slot >= m_instructions.size() ||
          m_instructions[pred->m_slot].get() != pred) {
        return Status::error(fmt::format("computation {}: {} has operand {} from another computation", m_name,
                                         frame.inst->name(), pred->name()));
      }
      uint8_t& s = state[pred->m_slot];
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

Status HloComputation::sortInPostOrder() {
  StatusOr<std::vector<HloInstruction*>> order = postOrder();
  if (!order.ok()) return order.status();
  std::vector<std::unique_ptr<HloInstruction>> sorted;
  sorted.reserve(order->size());
  for (size_t i = 0; i < order->size(); ++i) {
    HloInstruction* inst = (*order)[i];
    sorted.push_back(std::move(m_instructions[inst->m_slot]));
    inst->m_slot = i;
  }
  m_instructions = std::move(sorted);
  return okStatus();
}

bool HloComputation::isEntry() const {
  return m_parent && m_parent->entry() == this;
}

}  // namespace fusionscope::core
