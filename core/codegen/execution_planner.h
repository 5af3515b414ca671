#pragma once

// The planner behind planExecution (internal to core/codegen): one computation's values and steps, buffer
// assignment, and the control-flow steps (execution_plan_control_flow.cpp) that plan their called computations.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/codegen/element_types.h"
#include "core/codegen/execution_plan.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core::planning {

// A value of the entry computation before buffer assignment: a parameter, a constant, or a temporary some
// kernel writes.
struct PlanValue {
  int64_t bytes = 0;
  Shape shape;
  int64_t parameter = -1;
  const HloInstruction* constant = nullptr;
  int producer = -1;  // kernel index for temporaries
  int lastReader = -1;
  bool output = false;
  int buffer = -1;
};

// A step of one computation's program before buffer assignment: a kernel (index into ExecutionPlan::kernels) or
// a while / conditional (`instruction`), with the values it reads and writes. `groups` are a control-flow step's
// operands, flattened: for a while its one operand, for a conditional the selector then each branch's operand.
struct LocalStep {
  int kernel = -1;
  const HloInstruction* instruction = nullptr;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<std::vector<int>> groups;
};

// What planning a called computation gives its caller: its program, where its root's (flattened) elements are,
// and for each whether its buffer belongs to the computation's own temporaries (so it may be swapped away).
struct SubPlan {
  std::vector<PlanStep> steps;
  std::vector<int> root;
  std::vector<bool> owned;
};

// The values and steps of one computation while it is planned: a value per array (a tuple's elements each), the
// steps that read and write them.
struct ComputationValues {
  std::vector<PlanValue> values;
  std::vector<bool> external;  // a parameter of a called computation: its buffer is the caller's
  std::vector<bool> pinned;    // a while's state or a conditional's result: a buffer of its own, never reused
  std::unordered_map<const HloInstruction*, std::vector<int>> slots;  // value per (tuple) element
  std::vector<LocalStep> steps;

  int add(const Shape& shape) {
    PlanValue value;
    value.shape = shape;
    value.bytes = elementByteSize(shape.elementType()) * shape.elementCount();
    values.push_back(value);
    external.push_back(false);
    pinned.push_back(false);
    return static_cast<int>(values.size()) - 1;
  }
  PlanValue& operator[](int v) { return values[static_cast<size_t>(v)]; }
};

// Where the entry's outputs live relative to its parameters (input_output_alias).
struct EntryAliases {
  std::unordered_map<int64_t, int> parameterValue;  // parameter number -> its value
  std::map<int, int64_t> direct;                    // temporary value -> parameter whose buffer it is written into
  std::vector<std::pair<int, int64_t>> copies;      // (output index, parameter) needing a final copy
};

class Planner {
 public:
  Planner(const HloModule& module, ExecutionPlan& plan) : m_module(module), m_plan(plan) {}

  // Plans `computation`. For the entry (`parameterBuffers` null) parameters, outputs and input_output_alias are
  // the plan's; a called computation reads parameter p's flattened elements in (*parameterBuffers)[p].
  // `loopBody`: the computation is a while body, whose parameter buffers (the loop state) it may update in place.
  StatusOr<SubPlan> planComputation(const HloComputation& computation,
                                    const std::vector<std::vector<int>>* parameterBuffers, bool loopBody = false);

 private:
  int addBuffer(int64_t bytes) {
    PlanBuffer buffer;
    buffer.id = static_cast<int>(m_plan.buffers.size());
    buffer.bytes = bytes;
    m_plan.buffers.push_back(buffer);
    return buffer.id;
  }
  std::string uniqueName(std::string name) {
    while (!m_usedNames.insert(name).second) name += "_";
    return name;
  }
  // The values of one instruction, by kind: work that is not ours refused by name, then parameters, constants,
  // tuples, aliases of an operand's bytes (no kernel), while / conditional steps, and kernels.
  Status refuseForeignWork(const HloInstruction& instruction);
  Status planValues(const HloInstruction& instruction, const std::vector<std::vector<int>>* parameterBuffers,
                    ComputationValues& c);
  Status planParameter(const HloInstruction& instruction, const std::vector<std::vector<int>>* parameterBuffers,
                       ComputationValues& c);
  Status planConstant(const HloInstruction& instruction, ComputationValues& c);
  Status planTupleOp(const HloInstruction& instruction, ComputationValues& c);
  Status planControlFlowStep(const HloInstruction& instruction, ComputationValues& c);
  Status planKernelStep(const HloInstruction& instruction, ComputationValues& c);
  // The entry's parameters and outputs, and which outputs are written into a parameter's buffer (directly, or by a
  // final copy).
  StatusOr<EntryAliases> planEntryInterface(const HloComputation& computation, ComputationValues& c);
  // Buffers for every value, reusing a temporary's once its last reader ran, and the steps' programs.
  StatusOr<SubPlan> assignBuffers(ComputationValues& c, const EntryAliases& aliases, bool isEntry, bool loopBody,
                                  const std::vector<int>& rootSlots);
  // The copies of outputs into the parameters they alias that could not be written there directly.
  void addAliasCopies(const HloComputation& computation, ComputationValues& c, const EntryAliases& aliases,
                      SubPlan& result);
  // A while's or conditional's program, once the buffers of its operands are known.
  Status planWhile(const LocalStep& local, const std::vector<int>& operandBuffers, PlanStep& step);
  Status planConditional(const LocalStep& local, const std::vector<std::vector<int>>& groupBuffers, PlanStep& step);

  const HloModule& m_module;
  ExecutionPlan& m_plan;
  std::set<std::string> m_usedNames;
  int m_depth = 0;
};

// The flattened elements of a tuple (or the one array) of `shape`; fails on nested tuples.
StatusOr<std::vector<Shape>> flatElements(const HloInstruction& instruction, const Shape& shape);

// Moves that put `sources` (a sub-program's root elements, `owned` where they are its own temporaries) into
// `targets`. A source that is itself one of the targets (a loop body returning its parameter's elements
// permuted) goes through a scratch buffer first, so no move overwrites what a later one reads; an owned source is
// swapped into place (no copy), and a source appearing twice is copied from where its first move put it.
std::vector<PlanMove> movesInto(const std::vector<int>& sources, const std::vector<bool>& owned,
                                const std::vector<int>& targets, const std::function<int(int)>& scratchFor);

}  // namespace fusionscope::core::planning
