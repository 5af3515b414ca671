#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
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
  // Removes an instruction that has no users and is not the root; drops its operand uses.
  Status removeInstruction(HloInstruction* instruction);

  const std::vector<std::unique_ptr<HloInstruction>>& instructions() const { return m_instructions; }
  int64_t instructionCount() const { return static_cast<int64_t>(m_instructions.size()); }
  HloInstruction* findInstruction(std::string_view name) const;
  // Fails when `name` is taken by another instruction of this computation.
  Status renameInstruction(HloInstruction* instruction, std::string name);

  HloInstruction* root() const { return m_root; }
  void setRoot(HloInstruction* root) { m_root = root; }

  // Parameter instructions ordered by parameter number (gaps are null until the verifier rejects them).
  std::vector<HloInstruction*> parameters() const;
  int64_t parameterCount() const;

  // Instructions in an order where every operand and control predecessor comes before its users;
  // instructions not reachable from the root come in text order too. Fails on a cycle, naming an
  // instruction on it.
  StatusOr<std::vector<HloInstruction*>> postOrder() const;

  bool isEntry() const;
  // True when some fusion instruction of the module calls this computation.
  bool isFusionComputation() const { return m_isFusion; }
  void setIsFusionComputation(bool value) { m_isFusion = value; }

 private:
  friend class HloModule;
  std::string m_name;
  HloModule* m_parent = nullptr;
  std::vector<std::unique_ptr<HloInstruction>> m_instructions;
  std::unordered_map<std::string_view, HloInstruction*> m_byName;
  HloInstruction* m_root = nullptr;
  bool m_isFusion = false;
};

}  // namespace fusionscope::core
