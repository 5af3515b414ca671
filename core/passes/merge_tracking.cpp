#include "core/passes/merge_tracking.h"

#include <algorithm>
#include <utility>

namespace fusionscope::core {

TopologicalOrder::TopologicalOrder(std::vector<HloInstruction*> postOrder, int64_t idBound)
    : m_slots(std::move(postOrder)), m_position(static_cast<size_t>(idBound), -1) {
  for (size_t i = 0; i < m_slots.size(); ++i) {
    setPosition(m_slots[i], static_cast<int64_t>(i));
  }
}

TopologicalOrder TopologicalOrder::of(const HloComputation& computation) {
  StatusOr<std::vector<HloInstruction*>> postOrder = computation.postOrder();
  return TopologicalOrder(postOrder.ok() ? std::move(*postOrder) : std::vector<HloInstruction*>{},
                          computation.idBound());
}

bool TopologicalOrder::reaches(const HloInstruction* from, const HloInstruction* to, bool skipDirect) const {
  return walk(from, position(to), to, skipDirect);
}

TopologicalOrder::MergePlan TopologicalOrder::planMerge(const HloInstruction* first,
                                                        const HloInstruction* second) const {
  MergePlan plan{position(first), position(second), {}, {}};
  walk(first, plan.second, nullptr, false);  // marks what `first` reaches below `second`
  for (int64_t i = plan.first + 1; i < plan.second; ++i) {
    HloInstruction* inst = m_slots[static_cast<size_t>(i)];
    if (!inst) continue;
    (visited(inst) ? plan.after : plan.before).push_back(inst);
  }
  return plan;
}

void TopologicalOrder::applyMerge(const MergePlan& plan, HloInstruction* merged) {
  int64_t next = plan.first;
  auto place = [&](HloInstruction* inst) {
    m_slots[static_cast<size_t>(next)] = inst;
    setPosition(inst, next++);
  };
  for (HloInstruction* inst : plan.before) place(inst);
  place(merged);
  for (HloInstruction* inst : plan.after) place(inst);
  for (; next <= plan.second; ++next) m_slots[static_cast<size_t>(next)] = nullptr;
}

void TopologicalOrder::replace(int64_t instId, HloInstruction* replacement) {
  int64_t pos = positionOfId(instId);
  forget(instId);
  if (pos < 0) return;
  m_slots[static_cast<size_t>(pos)] = replacement;
  setPosition(replacement, pos);
}

void TopologicalOrder::forget(int64_t instId) {
  int64_t pos = positionOfId(instId);
  if (pos < 0) return;
  m_slots[static_cast<size_t>(pos)] = nullptr;
  m_position[static_cast<size_t>(instId)] = -1;
}

void TopologicalOrder::setPosition(const HloInstruction* inst, int64_t pos) {
  const size_t id = static_cast<size_t>(inst->id());
  if (id >= m_position.size()) m_position.resize(std::max(id + 1, m_position.size() * 5 / 4), -1);
  m_position[id] = pos;
}

bool TopologicalOrder::visited(const HloInstruction* inst) const {
  const size_t id = static_cast<size_t>(inst->id());
  return id < m_marks.size() && m_marks[id] == m_epoch;
}

bool TopologicalOrder::mark(const HloInstruction* inst) const {
  const size_t id = static_cast<size_t>(inst->id());
  if (id >= m_marks.size()) m_marks.resize(std::max(id + 1, m_position.size()), 0);
  if (m_marks[id] == m_epoch) return false;
  m_marks[id] = m_epoch;
  return true;
}

// Depth-first over users and control successors from `from`, pruning numbered instructions at or after
// `limit`: none of them can lead back below it. Returns whether `target` was reached (stopping there);
// without a target it marks everything reachable below `limit`.
bool TopologicalOrder::walk(const HloInstruction* from, int64_t limit, const HloInstruction* target,
                            bool skipDirect) const {
  if (++m_epoch == 0) {  // wrapped: clear the marks once every 2^32 walks
    std::fill(m_marks.begin(), m_marks.end(), 0);
    m_epoch = 1;
  }
  m_work.clear();
  auto push = [&](const HloInstruction* inst) {
    if (inst == target) return true;
    int64_t pos = position(inst);
    if (pos >= limit && pos != -1) return false;
    if (mark(inst)) m_work.push_back(inst);
    return false;
  };
  for (const HloInstruction* user : from->users()) {
    if (user == target && skipDirect) continue;
    if (push(user)) return true;
  }
  for (const HloInstruction* succ : from->controlSuccessors()) {
    if (push(succ)) return true;
  }
  while (!m_work.empty()) {
    const HloInstruction* inst = m_work.back();
    m_work.pop_back();
    for (const HloInstruction* user : inst->users()) {
      if (push(user)) return true;
    }
    for (const HloInstruction* succ : inst->controlSuccessors()) {
      if (push(succ)) return true;
    }
  }
  return false;
}

int CandidateIds::id(HloInstruction* inst) {
  const size_t key = static_cast<size_t>(inst->id());
  if (key < m_ids.size() && m_ids[key] >= 0) return m_ids[key];
  int id = static_cast<int>(m_instructions.size());
  setId(inst->id(), id);
  m_instructions.push_back(inst);
  m_keys.push_back(inst->id());
  m_forward.push_back(-1);
  return id;
}

int CandidateIds::find(int id) {
  int root = id;
  while (m_forward[static_cast<size_t>(root)] >= 0) root = m_forward[static_cast<size_t>(root)];
  while (m_forward[static_cast<size_t>(id)] >= 0) {  // path compression
    int next = m_forward[static_cast<size_t>(id)];
    m_forward[static_cast<size_t>(id)] = root;
    id = next;
  }
  return root;
}

void CandidateIds::replace(int id, HloInstruction* replacement) {
  setId(m_keys[static_cast<size_t>(id)], -1);
  m_instructions[static_cast<size_t>(id)] = replacement;
  m_keys[static_cast<size_t>(id)] = replacement->id();
  setId(replacement->id(), id);
}

void CandidateIds::mergeInto(int id, int survivor) {
  setId(m_keys[static_cast<size_t>(id)], -1);
  m_instructions[static_cast<size_t>(id)] = nullptr;
  m_forward[static_cast<size_t>(id)] = survivor;
}

void CandidateIds::setId(int64_t instId, int id) {
  const size_t key = static_cast<size_t>(instId);
  if (key >= m_ids.size()) m_ids.resize(std::max(key + 1, m_ids.size() * 5 / 4), -1);
  m_ids[key] = id;
}

}  // namespace fusionscope::core
