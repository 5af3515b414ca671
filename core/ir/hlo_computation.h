#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

class HloModule;

// A named list of instructions with one ROOT. Owns its instructions; keeps them in insertion (text) order
// and indexes them by name. parameters() is indexed by parameter number once all are added.
class HloComputation {
 public:
  explicit HloComputation(std::string name);
  HloComputation(const HloComputation&) = delete;
  HloComputation& operator=(const HloComputation&) = delete;

  const std::string& name() const { return m_name; }
  void setName(std::string name) { m_name = std::move(name); }
  HloModule* parent() const { return m_parent; }

  // Takes ownership; the name must be unique in this computation (checked by the caller, e.g. the parser).
  HloInstruction* addInstruction(std::unique_ptr<HloInstruction> instruction);
  // Creates an instruction named after `baseName` (made unique: `exp`, `exp.1`, ...) with the given operands.
  HloInstruction* addInstruction(std::string_view baseName, HloOpcode opcode, Shape shape,
                                 const std::vector<HloInstruction*>& operands = {});
  // Removes an instruction that has no users and is not the root; drops its operand uses. O(1): the slot
  // is reclaimed the next time instructions() is read, so removing many instructions stays linear.
  Status removeInstruction(HloInstruction* instruction);
  // Removes `instruction` and then every operand that became unused (not the root, not a parameter, no
  // side effects); returns how many instructions were removed.
  int64_t removeInstructionAndUnusedOperands(HloInstruction* instruction);

  // Instructions in text order. Do not hold the reference across removeInstruction().
  const std::vector<std::unique_ptr<HloInstruction>>& instructions() const;
  int64_t instructionCount() const { return static_cast<int64_t>(m_instructions.size()) - m_removed; }
  // One past the largest HloInstruction::id() given out so far.
  int64_t idBound() const { return m_nextId; }
  HloInstruction* findInstruction(std::string_view name) const;
  // Fails when `name` is taken by another instruction of this computation.
  Status renameInstruction(HloInstruction* instruction, std::string name);
  // `base` if no instruction uses it, else `base.N` for the smallest free N (a trailing `.N` of `base` is
  // stripped first, as XLA does).
  std::string uniqueInstructionName(std::string_view base) const;

  HloInstruction* root() const { return m_root; }
  void setRoot(HloInstruction* root) { m_root = root; }

  // Parameter instructions ordered by parameter number (gaps are null until the verifier rejects them).
  std::vector<HloInstruction*> parameters() const;
  int64_t parameterCount() const;

  // Instructions in an order where every operand and control predecessor comes before its users (a depth-first
  // walk over operands, started from each instruction in text order, so a text order that already is one comes
  // back unchanged). Fails on a cycle, naming an instruction on it.
  StatusOr<std::vector<HloInstruction*>> postOrder() const;
  // Reorders instructions() into postOrder(), so printing never refers forward (passes append new
  // instructions at the end). Fails on a cycle.
  Status sortInPostOrder();

  bool isEntry() const;

  // Attributes after the closing '}' in source order, values verbatim: XLA prints
  // `execution_thread="host"` there for computations that run off the main thread.
  const std::vector<std::pair<std::string, std::string>>& attributes() const { return m_attributes; }
  std::vector<std::pair<std::string, std::string>>& mutableAttributes() { return m_attributes; }

  // True when some fusion instruction of the module calls this computation.
  bool isFusionComputation() const { return m_isFusion; }
  void setIsFusionComputation(bool value) { m_isFusion = value; }

 private:
  friend class HloModule;
  friend class HloInstruction;
  void compact() const;

  std::string m_name;
  std::vector<std::pair<std::string, std::string>> m_attributes;
  HloModule* m_parent = nullptr;
  size_t m_slot = 0;  // index in the parent module's computation vector

  // Removed instructions leave a null slot until compact(); `mutable` because compaction is invisible.
  mutable std::vector<std::unique_ptr<HloInstruction>> m_instructions;
  // Per name stem, the suffix to try first in uniqueInstructionName, so naming k instructions `fusion.N`
  // costs O(k), not O(k^2). Only a hint: a taken name is still skipped.
  mutable std::unordered_map<std::string, int64_t> m_nextSuffix;
  mutable int64_t m_removed = 0;
  int64_t m_nextId = 0;
  // Instructions by name; the key views the instruction's own name (erased before a rename, re-added after).
  std::unordered_map<std::string_view, HloInstruction*> m_byName;
  HloInstruction* m_root = nullptr;
  bool m_isFusion = false;
};

}  // namespace fusionscope::core
