#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/ir/attributes.h"
#include "core/ir/literal.h"
#include "core/ir/opcode.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

class HloComputation;

// A computation referenced by an attribute: `to_apply=%add`, `calls=%fused`, `condition=`, `body=`,
// `branch_computations={%a, %b}`, ... The attribute key is kept so printing restores the same form.
struct CalledComputationRef {
  std::string key;
  std::vector<HloComputation*> computations;
  bool braced = false;  // printed as `key={%a, %b}` rather than `key=%a`
};

// One HLO instruction: a name unique within its computation, an opcode, a result shape, operands (other
// instructions of the same computation), typed and raw attributes, and the computations it calls.
// Owned by its HloComputation, which maintains the use lists: operands() and users() are kept in sync by
// the mutation methods below, never edited directly.
class HloInstruction {
 public:
  HloInstruction(std::string name, HloOpcode opcode, Shape shape);

  // Rename through HloComputation::renameInstruction, which keeps the name index right.
  const std::string& name() const { return m_name; }
  HloOpcode opcode() const { return m_opcode; }
  // XLA's spelling; for kUnknown the spelling found in the text.
  std::string_view opcodeString() const;
  void setUnknownOpcodeSpelling(std::string spelling) { m_unknownOpcode = std::move(spelling); }
  OpCategory category() const { return opcodeCategory(m_opcode); }

  const Shape& shape() const { return m_shape; }
  Shape& mutableShape() { return m_shape; }

  HloComputation* parent() const { return m_parent; }
  // Dense number within the parent computation, given when the instruction is added and never reused or
  // changed (sorting and removal keep it): per-pass tables index vectors by it instead of hashing pointers.
  // Below parent()->idBound(); -1 until the instruction is added to a computation.
  int64_t id() const { return m_id; }

  // Operands and users. users() lists each user once, in a deterministic order (the order the uses were
  // added until an instruction has many users; removing one of many then moves the last into its place).
  const std::vector<HloInstruction*>& operands() const { return m_operands; }
  HloInstruction* operand(int i) const { return m_operands[static_cast<size_t>(i)]; }
  int operandCount() const { return static_cast<int>(m_operands.size()); }
  const std::vector<HloInstruction*>& users() const { return m_users; }
  void appendOperand(HloInstruction* operand);
  void replaceOperand(int i, HloInstruction* operand);
  // Rewrites every use of this instruction (operands of users, control edges stay) to `replacement`.
  void replaceAllUsesWith(HloInstruction* replacement);
  void dropAllOperands();

  const std::vector<HloInstruction*>& controlPredecessors() const {
    return m_control ? m_control->predecessors : kNoInstructions;
  }
  const std::vector<HloInstruction*>& controlSuccessors() const {
    return m_control ? m_control->successors : kNoInstructions;
  }
  void addControlDependencyTo(HloInstruction* successor);
  void dropAllControlDependencies();

  // Attributes live out of line and only when set: most of their 600 bytes are empty optionals, and keeping
  // them inside made every instruction ~1 KB, which graph walks on large modules pay for in cache misses.
  const InstructionAttributes& attributes() const { return m_attributes ? *m_attributes : kNoAttributes; }
  InstructionAttributes& mutableAttributes() {
    if (!m_attributes) m_attributes = std::make_unique<InstructionAttributes>();
    return *m_attributes;
  }
  const OpMetadata* metadata() const {
    return m_attributes && m_attributes->metadata ? &*m_attributes->metadata : nullptr;
  }

  // Where the instruction was written in the text it was parsed from (1-based line and column of its name);
  // 0 when it was built by a pass. Clones keep the position of what they copy.
  int32_t textLine() const { return m_textLine; }
  int32_t textColumn() const { return m_textColumn; }
  void setTextPosition(int32_t line, int32_t column) {
    m_textLine = line;
    m_textColumn = column;
  }

  // `parameter(N)`: N.
  int64_t parameterNumber() const { return m_parameterNumber; }
  void setParameterNumber(int64_t n) { m_parameterNumber = n; }

  // `constant(...)`: the literal; null for other opcodes.
  const Literal* literal() const { return m_literal.get(); }
  void setLiteral(Literal literal) { m_literal = std::make_unique<Literal>(std::move(literal)); }

  const std::vector<CalledComputationRef>& calledComputationRefs() const { return m_called; }
  std::vector<CalledComputationRef>& mutableCalledComputationRefs() { return m_called; }
  // Every called computation, flattened in attribute order.
  std::vector<HloComputation*> calledComputations() const;
  // The computation behind a single-valued key (`to_apply`, `calls`, `condition`, `body`), or null.
  HloComputation* calledComputation(std::string_view key) const;
  HloComputation* toApply() const { return calledComputation("to_apply"); }
  // A conditional's branches in branch-index order: {true_computation, false_computation} (a null where one is
  // missing) or `branch_computations`; empty for other opcodes or when neither form is present.
  std::vector<HloComputation*> branchComputations() const;
  HloComputation* fusedComputation() const {
    return m_opcode == HloOpcode::kFusion ? calledComputation("calls") : nullptr;
  }

  bool isRoot() const;
  bool isFusion() const { return m_opcode == HloOpcode::kFusion; }
  // Instructions a pass must keep even without users: sends, outfeeds, custom calls with side effects, ...
  bool hasSideEffect() const;
  // For a fusion: its kind (kLoop when the attribute is missing).
  FusionKind fusionKind() const { return attributes().fusionKind.value_or(FusionKind::kLoop); }

  // A copy of this instruction with new operands and shape, not yet added to any computation: same
  // opcode, attributes, literal, parameter number and called computations. Users and control edges are
  // not copied.
  std::unique_ptr<HloInstruction> cloneWithOperands(std::string name, Shape shape,
                                                    const std::vector<HloInstruction*>& operands) const;

 private:
  friend class HloComputation;
  void removeUser(HloInstruction* user);
  void addUser(HloInstruction* user);

  // Control edges are rare: both lists live out of line, allocated by the first edge.
  struct ControlEdges {
    std::vector<HloInstruction*> predecessors;
    std::vector<HloInstruction*> successors;
  };
  static const std::vector<HloInstruction*> kNoInstructions;
  ControlEdges& mutableControl();

  // What a pass reads on every visit comes first, so that a walk over a big computation touches two or three
  // cache lines of an instruction rather than all of it: opcode, parent, use lists, then ids, attributes,
  // control edges, called computations and the shape's element type and dimensions.
  HloOpcode m_opcode;
  HloComputation* m_parent = nullptr;
  std::vector<HloInstruction*> m_operands;
  std::vector<HloInstruction*> m_users;
  int64_t m_id = -1;
  size_t m_slot = 0;  // index in the parent's instruction vector
  static const InstructionAttributes kNoAttributes;
  std::unique_ptr<InstructionAttributes> m_attributes;  // null: all attributes absent
  std::unique_ptr<ControlEdges> m_control;              // null: no control edges
  std::vector<CalledComputationRef> m_called;
  Shape m_shape;
  std::string m_name;
  std::string m_unknownOpcode;
  // Position of each user in m_users, kept once there are many (a parameter of a big training step has
  // thousands), so adding and removing a use stays O(1) instead of a scan of the list.
  std::unique_ptr<std::unordered_map<const HloInstruction*, size_t>> m_userIndex;
  int64_t m_parameterNumber = -1;
  std::unique_ptr<Literal> m_literal;
  int32_t m_textLine = 0;
  int32_t m_textColumn = 0;
};

}  // namespace fusionscope::core
