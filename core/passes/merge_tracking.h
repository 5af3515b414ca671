#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

// Bookkeeping for a pass that merges instructions of one computation pairwise (multi-output fusion): which
// instruction comes before which, and what a candidate pair refers to once its instructions have merged.
// Both are indexed by HloInstruction::id(), which is unique within a module and never reused: on a
// 100k-instruction computation a hash lookup per step was a cache miss.

// A topological numbering of one computation that stays valid across merges and fusions (a fresh post order
// after every merge would make the passes quadratic); the one reachability question every fusion pass asks. When two
// instructions X before Y become one, only the positions between them change: what X reaches there must now come after
// the merged instruction, everything else before it. Instructions created by the IR surgery (get-tuple-element) stay
// unnumbered; the reachability walk explores them instead of pruning.
//
//   order = TopologicalOrder(computation.postOrder(), computation.idBound());
//   if (!order.reaches(a, b, false)) {
//     MergePlan plan = order.planMerge(a, b);  // before the surgery: it walks a's users
//     ... merge b into a, deleting b ...
//     order.forget(bId);
//     order.applyMerge(plan, a);
//   }
class TopologicalOrder {
 public:
  // `postOrder`: every instruction of the computation, operands before users.
  TopologicalOrder(std::vector<HloInstruction*> postOrder, int64_t idBound);
  // The order of `computation` as it is now; with a cycle (which the verifier reports) nothing is numbered,
  // and reaches() then explores everything instead of pruning: slower, still right.
  static TopologicalOrder of(const HloComputation& computation);

  // The instruction's position, or -1 for an unnumbered one (created after construction, or forgotten).
  int64_t position(const HloInstruction* inst) const { return positionOfId(inst->id()); }
  int64_t positionOfId(int64_t instId) const {
    const size_t id = static_cast<size_t>(instId);
    return instId >= 0 && id < m_position.size() ? m_position[id] : -1;
  }

  // True when a path of uses (or control edges) leads from `from` to `to`; with skipDirect a direct use
  // does not count (is there another path?).
  bool reaches(const HloInstruction* from, const HloInstruction* to, bool skipDirect = false) const;

  // The new order of positions [first, second] once the instructions there merge: everything `first`
  // does not reach, the merged instruction, then what `first` reaches. Computed before the surgery, with
  // `first` before `second` and neither reaching the other except directly.
  struct MergePlan {
    int64_t first = 0;
    int64_t second = 0;
    std::vector<HloInstruction*> before;
    std::vector<HloInstruction*> after;
  };
  MergePlan planMerge(const HloInstruction* first, const HloInstruction* second) const;
  // Renumbers [plan.first, plan.second] after the surgery; `merged` is what the two became.
  void applyMerge(const MergePlan& plan, HloInstruction* merged);

  // `replacement` takes the place of the instruction with id `instId` (same operands and users:
  // wrapInFusion). Ids, not pointers: the replaced instruction may already be deleted.
  void replace(int64_t instId, HloInstruction* replacement);
  // The instruction with id `instId` left the computation (merged into another).
  void forget(int64_t instId);

 private:
  void setPosition(const HloInstruction* inst, int64_t pos);
  bool visited(const HloInstruction* inst) const;
  bool mark(const HloInstruction* inst) const;
  bool walk(const HloInstruction* from, int64_t limit, const HloInstruction* target, bool skipDirect) const;

  std::vector<HloInstruction*> m_slots;  // by position; nullptr where an instruction left
  std::vector<int64_t> m_position;       // by id; -1 for none
  // Marks of the last walk: an instruction is visited when its mark equals the walk's epoch, so starting a
  // walk costs nothing however big the computation is.
  mutable std::vector<uint32_t> m_marks;
  mutable uint32_t m_epoch = 0;
  mutable std::vector<const HloInstruction*> m_work;
};

// Stable names for merge candidates, because merges delete instructions (and their addresses may be reused):
// a candidate id whose instruction merged into another forwards to the survivor's, union-find style.
//
//   int a = ids.id(x), b = ids.id(y);  // queued as a pair
//   ... y merges into x: ids.mergeInto(b, a) ...
//   ids.instruction(b) == x; ids.forwarded(b) == true
class CandidateIds {
 public:
  // The instruction's candidate id, assigned on first sight.
  int id(HloInstruction* inst);
  // The id that `id` forwards to (itself when its instruction is still there).
  int find(int id);
  // The instruction behind `id`, following merges.
  HloInstruction* instruction(int id) { return m_instructions[static_cast<size_t>(find(id))]; }
  bool forwarded(int id) const { return m_forward[static_cast<size_t>(id)] >= 0; }
  // wrapInFusion replaced the instruction behind `id` (which may already be deleted: only its recorded
  // HloInstruction::id() is read).
  void replace(int id, HloInstruction* replacement);
  // The instruction behind `id` was deleted; it lives on in `survivor`.
  void mergeInto(int id, int survivor);

 private:
  void setId(int64_t instId, int id);

  std::vector<int> m_ids;  // by HloInstruction::id(); -1 for no candidate id yet
  std::vector<HloInstruction*> m_instructions;
  std::vector<int64_t> m_keys;  // HloInstruction::id() behind each candidate id
  std::vector<int> m_forward;   // -1, or the id this one merged into
};

}  // namespace fusionscope::core
