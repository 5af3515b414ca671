#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

class HloInstruction;
class HloModule;

// One block of memory the executable owns. Several values may live in it over time (liveness-based reuse);
// `constant` names the constant instruction whose bytes it holds for the whole run, `parameter` the entry
// parameter it receives.
struct PlanBuffer {
  int id = 0;
  int64_t bytes = 0;
  const HloInstruction* constant = nullptr;
  int64_t parameter = -1;
  bool output = false;  // holds an entry output at the end of the run (never reused before that)
};

// One kernel launch: an entry instruction (a fusion, or with fusion off any instruction that computes
// something) lowered to one function. `inputs[i]` is the buffer of the instruction's operand i, `outputs[j]`
// the buffer of its output j (a multi-output fusion has one per tuple element). A kind of "copy" is a
// synthetic kernel the planner adds to move an output into the parameter buffer it aliases when the value
// could not be computed in place.
struct PlanKernel {
  std::string name;  // unique, usable as a symbol: "fusion_3"
  // The instruction lowered; only valid while the module lives (while compiling). Executables that outlive the
  // module use instructionName.
  const HloInstruction* instruction = nullptr;
  std::string instructionName;  // its HLO name ("fusion.3"); the kernel name for a synthetic copy
  std::string kind;             // "kLoop", "kInput", "kOutput", "kCustom" for fusions, else the opcode ("dot", "copy")
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<Shape> outputShapes;
  std::vector<Shape> inputShapes;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  int64_t elements = 0;  // output elements (all outputs together)
  // A dynamic-update-slice (or a fusion rooted at one) in a loop body whose output takes the buffer of the operand
  // it updates (inputs[updatedInput] == outputs[0]): the kernel (CPU or GPU) writes only the update window (XLA's
  // in-place update), so a scan writing one row per trip costs O(row), not O(whole output).
  int updatedInput = -1;
};

// A value moved between buffers at a control-flow boundary: a loop's initial state into its state buffers, a loop
// body's result back into them, a branch's result into the conditional's result buffers. `swap` exchanges the
// two buffers' memory instead of copying (the runtime addresses buffers through a table of pointers): used where
// `from` is a temporary of the body or branch that nothing reads before it is written again.
struct PlanMove {
  int from = -1;
  int to = -1;
  bool swap = false;
};

// One step of a plan's program. A kernel step launches ExecutionPlan::kernels[kernel]. A while step runs its
// condition's steps, reads the pred in `predicate`, and while it is true runs the body's steps and the `update`
// moves; the loop state lives in `state` (one buffer per element of the flattened tuple), where the condition and
// the body read their parameter and where the while's result is. A conditional step reads the branch index in
// `selector` (a pred: true runs branch 0, false branch 1; an integer out of range runs the last branch, as XLA),
// runs that branch's steps (its parameter is read where the conditional's operand lives) and moves its result
// into `results`.
struct PlanStep {
  enum class Kind { kKernel, kWhile, kConditional };
  Kind kind = Kind::kKernel;
  int kernel = -1;
  std::string instruction;  // the HLO instruction of a while or conditional step
  // while
  std::vector<PlanMove> init;
  std::vector<int> state;
  std::vector<PlanStep> condition;
  int predicate = -1;
  std::vector<PlanStep> body;
  std::vector<PlanMove> update;
  // conditional
  int selector = -1;
  PrimitiveType selectorType = PrimitiveType::kPred;
  std::vector<std::vector<PlanStep>> branches;
  std::vector<std::vector<PlanMove>> branchResults;
  std::vector<int> results;
};

struct PlanParameter {
  int64_t index = 0;
  std::string name;
  Shape shape;
  int buffer = -1;
};

struct PlanOutput {
  int64_t index = 0;  // position in the root tuple (0 for a non-tuple root)
  std::string name;   // the instruction producing it
  Shape shape;
  int buffer = -1;
  std::optional<int64_t> aliasesParameter;  // from input_output_alias: lives in that parameter's buffer
};

// What to run, in which order, in which memory: the result of buffer assignment over the entry computation of
// a (possibly fused) module. Buffers of temporaries are reused once their last reader has run; entry outputs
// and parameters are never reused; an output the module aliases to a parameter is written into the
// parameter's buffer (directly when no later kernel reads the parameter, else through a final copy kernel).
struct ExecutionPlan {
  std::string module;
  bool tupleOutput = false;  // the root is a tuple: outputs are its elements
  std::vector<PlanBuffer> buffers;
  std::vector<PlanKernel> kernels;  // every kernel, those of loop bodies and branches included
  std::vector<PlanStep> steps;      // the entry computation's program
  std::vector<PlanParameter> parameters;
  std::vector<PlanOutput> outputs;
  int64_t peakBytes = 0;                   // sum of all buffer sizes (every buffer is live for the whole run)
  int64_t temporaryBytesWithoutReuse = 0;  // what temporaries would take with one buffer per value
};

// Plans the entry computation of `module`, and recursively the computations its while and conditional
// instructions call (each as its own program, with its own buffers; tuple-shaped parameters of those are
// flattened into one buffer per element). Fails, naming the instruction, on what the plan cannot hold: tuple-shaped
// entry parameters, nested tuples, tokens, `call` (inline calls first: CpuExecutable::compile does) and ops
// producing tuples other than tuple, get-tuple-element, while, conditional and (multi-output) fusions.
StatusOr<ExecutionPlan> planExecution(const HloModule& module);

// The first while or conditional step of `plan` (for backends that run flat kernel lists only), or null.
const PlanStep* firstControlFlowStep(const ExecutionPlan& plan);

// `input_output_alias={ {1}: (0, {}, may-alias) }` as (output index, parameter) pairs; output index 0 for
// `{}` (a non-tuple root).
StatusOr<std::vector<std::pair<int64_t, int64_t>>> parseInputOutputAlias(const HloModule& module);

// A readable listing of the plan (one line per buffer and kernel), for the CLI and test failures.
std::string planToString(const ExecutionPlan& plan);

}  // namespace fusionscope::core
