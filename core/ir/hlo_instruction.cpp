#include "core/ir/hlo_instruction.h"

#include <algorithm>

#include "core/ir/hlo_computation.h"

namespace fusionscope::core {

const InstructionAttributes HloInstruction::kNoAttributes{};

const std::vector<HloInstruction*> HloInstruction::kNoInstructions;

HloInstruction::HloInstruction(std::string name, HloOpcode opcode, Shape shape)
    : m_opcode(opcode), m_shape(std::move(shape)), m_name(std::move(name)) {}

HloInstruction::ControlEdges& HloInstruction::mutableControl() {
  if (!m_control) m_control = std::make_unique<ControlEdges>();
  return *m_control;
}

std::string_view HloInstruction::opcodeString() const {
  if (m_opcode == HloOpcode::kUnknown && !m_unknownOpcode.empty()) return m_unknownOpcode;
  return opcodeName(m_opcode);
}

namespace {
constexpr size_t kUserIndexThreshold = 32;
}  // namespace

void HloInstruction::addUser(HloInstruction* user) {
  if (m_userIndex) {
    if (m_userIndex->contains(user)) return;
    (*m_userIndex)[user] = m_users.size();
    m_users.push_back(user);
    return;
  }
  if (std::find(m_users.begin(), m_users.end(), user) != m_users.end()) return;
  m_users.push_back(user);
  if (m_users.size() > kUserIndexThreshold) {
    m_userIndex = std::make_unique<std::unordered_map<const HloInstruction*, size_t>>(m_users.size() * 2);
    for (size_t i = 0; i < m_users.size(); ++i) (*m_userIndex)[m_users[i]] = i;
  }
}

void HloInstruction::removeUser(HloInstruction* user) {
  // A user may use this instruction several times; it stays a user while any use remains.
  if (std::find(user->m_operands.begin(), user->m_operands.end(), this) != user->m_operands.end()) return;
  if (!m_userIndex) {
    m_users.erase(std::remove(m_users.begin(), m_users.end(), user), m_users.end());
    return;
  }
  auto found = m_userIndex->find(user);
  if (found == m_userIndex->end()) return;
  size_t pos = found->second;
  m_userIndex->erase(found);
  if (pos + 1 != m_users.size()) {
    m_users[pos] = m_users.back();
    (*m_userIndex)[m_users[pos]] = pos;
  }
  m_users.pop_back();
}

void HloInstruction::appendOperand(HloInstruction* operand) {
  m_operands.push_back(operand);
  operand->addUser(this);
}

void HloInstruction::replaceOperand(int i, HloInstruction* operand) {
  HloInstruction* old = m_operands[static_cast<size_t>(i)];
  if (old == operand) return;
  m_operands[static_cast<size_t>(i)] = operand;
  old->removeUser(this);
  operand->addUser(this);
}

void HloInstruction::replaceAllUsesWith(HloInstruction* replacement) {
  if (replacement == this) return;
  std::vector<HloInstruction*> users = m_users;
  for (HloInstruction* user : users) {
    for (int i = 0; i < user->operandCount(); ++i) {
      if (user->operand(i) == this) user->replaceOperand(i, replacement);
    }
  }
  if (m_parent && m_parent->root() == this) m_parent->setRoot(replacement);
}

void HloInstruction::dropAllOperands() {
  std::vector<HloInstruction*> operands = std::move(m_operands);
  m_operands.clear();
  for (HloInstruction* operand : operands) operand->removeUser(this);
}

void HloInstruction::addControlDependencyTo(HloInstruction* successor) {
  const std::vector<HloInstruction*>& successors = controlSuccessors();
  if (std::find(successors.begin(), successors.end(), successor) != successors.end()) return;
  mutableControl().successors.push_back(successor);
  successor->mutableControl().predecessors.push_back(this);
}

void HloInstruction::dropAllControlDependencies() {
  if (!m_control) return;
  for (HloInstruction* pred : m_control->predecessors) {
    auto& s = pred->m_control->successors;
    s.erase(std::remove(s.begin(), s.end(), this), s.end());
  }
  for (HloInstruction* succ : m_control->successors) {
    auto& p = succ->m_control->predecessors;
    p.erase(std::remove(p.begin(), p.end(), this), p.end());
  }
  m_control.reset();
}

std::vector<HloComputation*> HloInstruction::calledComputations() const {
  std::vector<HloComputation*> result;
  for (const CalledComputationRef& ref : m_called) {
    result.insert(result.end(), ref.computations.begin(), ref.computations.end());
  }
  return result;
}

HloComputation* HloInstruction::calledComputation(std::string_view key) const {
  for (const CalledComputationRef& ref : m_called) {
    if (ref.key == key && ref.computations.size() == 1) return ref.computations.front();
  }
  return nullptr;
}

std::vector<HloComputation*> HloInstruction::branchComputations() const {
  if (m_opcode != HloOpcode::kConditional) return {};
  if (HloComputation* onTrue = calledComputation("true_computation")) {
    return {onTrue, calledComputation("false_computation")};
  }
  for (const CalledComputationRef& ref : m_called) {
    if (ref.key == "branch_computations") return ref.computations;
  }
  return {};
}

bool HloInstruction::hasSideEffect() const {
  switch (m_opcode) {
    case HloOpcode::kSend:
    case HloOpcode::kSendDone:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kInfeed:
    case HloOpcode::kOutfeed:
    case HloOpcode::kRng:
    case HloOpcode::kRngGetAndUpdateState:
    case HloOpcode::kAfterAll:
    case HloOpcode::kAddDependency:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kUnknown: return true;
    case HloOpcode::kCustomCall: {
      const std::string* flag = attributes().findRaw("custom_call_has_side_effect");
      return flag && *flag == "true";
    }
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kReduceScatter:
      // Collectives synchronize devices; removing one on one device would deadlock the others.
      return true;
    default: break;
  }
  // A call or while whose body has side effects keeps them.
  return false;
}

std::unique_ptr<HloInstruction> HloInstruction::cloneWithOperands(std::string name, Shape shape,
                                                                  const std::vector<HloInstruction*>& operands) const {
  auto copy = std::make_unique<HloInstruction>(std::move(name), m_opcode, std::move(shape));
  copy->m_unknownOpcode = m_unknownOpcode;
  if (m_attributes) copy->m_attributes = std::make_unique<InstructionAttributes>(*m_attributes);
  copy->m_parameterNumber = m_parameterNumber;
  if (m_literal) copy->m_literal = std::make_unique<Literal>(*m_literal);
  copy->m_called = m_called;
  copy->m_textLine = m_textLine;
  copy->m_textColumn = m_textColumn;
  for (HloInstruction* operand : operands) copy->appendOperand(operand);
  return copy;
}

bool HloInstruction::isRoot() const {
  return m_parent && m_parent->root() == this;
}

}  // namespace fusionscope::core
