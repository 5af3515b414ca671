#include "core/codegen/execution_plan.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/codegen/element_types.h"
#include "core/codegen/execution_planner.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/literal.h"
#include "core/linalg/linalg_call.h"

namespace fusionscope::core {
namespace {

std::string symbolName(std::string_view name) {
  std::string out;
  for (char c : name) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(0, "k_");
  return out;
}

bool needsNoKernel(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kBitcast:
    case HloOpcode::kReshape:  // row-major logical order: a reshape never moves data
      return true;
    default: return false;
  }
}

Status checkArrayShape(const HloInstruction& instruction, const Shape& shape) {
  if (!shape.isArray()) {
    return Status::error(fmt::format("{}: cannot plan a value of shape {} (only arrays and tuples of arrays)",
                                     instruction.name(), shape.toString(false)));
  }
  if (elementByteSize(shape.elementType()) == 0) {
    return Status::error(fmt::format("{}: element type {} is not supported by codegen", instruction.name(),
                                     primitiveTypeName(shape.elementType())));
  }
  return okStatus();
}

// Whether `kernel` (one output) reads its operands `operands` only at the element it writes: every path from them
// to the output is elementwise over the output's dimensions. Then the output may overwrite them in place (each
// element is read before it is written, by the same thread).
bool readsOnlyInPlace(const HloInstruction* kernel, const std::vector<int>& operands) {
  const Shape& shape = kernel->shape();
  if (!shape.isArray()) return false;
  if (kernel->opcode() != HloOpcode::kFusion) {
    if (!isElementwise(kernel->opcode())) return false;
    for (int i : operands) {
      if (kernel->operand(i)->shape().dimensions() != shape.dimensions()) return false;
    }
    return true;
  }
  const HloComputation* fused = kernel->fusedComputation();
  if (fused == nullptr) return false;
  const std::vector<HloInstruction*> parameters = fused->parameters();
  std::function<bool(const HloInstruction*)> elementwiseToRoot = [&](const HloInstruction* node) {
    if (node->shape().dimensions() != shape.dimensions() || !node->shape().isArray()) return false;
    for (const HloInstruction* user : node->users()) {
      if (!isElementwise(user->opcode()) || !elementwiseToRoot(user)) return false;
    }
    return true;
  };
  for (int i : operands) {
    if (i >= static_cast<int>(parameters.size()) || !elementwiseToRoot(parameters[static_cast<size_t>(i)]))
      return false;
  }
  return true;
}

// When `kernel` (one output) is a dynamic-update-slice, or a fusion whose root is one updating a fusion parameter
// that nothing else in the fusion reads: the kernel input it updates. Else -1.
int updatedInputOf(const HloInstruction* kernel) {
  if (!kernel->shape().isArray()) return -1;
  if (kernel->opcode() == HloOpcode::kDynamicUpdateSlice) return 0;
  if (kernel->opcode() != HloOpcode::kFusion || kernel->fusedComputation() == nullptr) return -1;
  const HloInstruction* root = kernel->fusedComputation()->root();
  if (root == nullptr || root->opcode() != HloOpcode::kDynamicUpdateSlice || root->operandCount() < 1) return -1;
  const HloInstruction* operand = root->operand(0);
  if (operand->opcode() != HloOpcode::kParameter || operand->users().size() != 1) return -1;
  for (int i = 1; i < root->operandCount(); ++i) {
    if (root->operand(i) == operand) return -1;
  }
  return static_cast<int>(operand->parameterNumber());
}

}  // namespace

StatusOr<std::vector<std::pair<int64_t, int64_t>>> parseInputOutputAlias(const HloModule& module) {
  std::vector<std::pair<int64_t, int64_t>> aliases;
  const std::string* text = module.findHeaderAttribute("input_output_alias");
  if (text == nullptr) return aliases;
  static const std::regex kEntry(R"(\{\s*([0-9]*)\s*\}\s*:\s*\(\s*([0-9]+)\s*,\s*\{\s*([^}]*)\})");
  for (auto it = std::sregex_iterator(text->begin(), text->end(), kEntry); it != std::sregex_iterator(); ++it) {
    const std::smatch& match = *it;
    if (!match[3].str().empty()) {
      return Status::error(
          fmt::format("input_output_alias: parameter index {{{}}} into a tuple parameter is not "
                      "supported",
                      match[3].str()));
    }
    int64_t output = match[1].str().empty() ? 0 : std::stoll(match[1].str());
    aliases.emplace_back(output, std::stoll(match[2].str()));
  }
  return aliases;
}

namespace planning {

StatusOr<SubPlan> Planner::planComputation(const HloComputation& computation,
                                           const std::vector<std::vector<int>>* parameterBuffers, bool loopBody) {
  const bool isEntry = parameterBuffers == nullptr;
  // Control flow nests as deep as the module's computations call each other; a cycle would recurse forever.
  if (m_depth > 64) return Status::error(fmt::format("{}: control flow nested too deeply", computation.name()));
  StatusOr<std::vector<HloInstruction*>> order = computation.postOrder();
  if (!order.ok()) return order.status();
  ComputationValues c;
  for (const HloInstruction* instruction : *order) {
    FS_RETURN_IF_ERROR(planValues(*instruction, parameterBuffers, c));
  }
  const HloInstruction* root = computation.root();
  if (root == nullptr) return Status::error(fmt::format("computation {} has no root", computation.name()));
  const std::vector<int> rootSlots = c.slots.at(root);
  for (int v : rootSlots) c[v].output = true;
  EntryAliases aliases;
  if (isEntry) {
    StatusOr<EntryAliases> entry = planEntryInterface(computation, c);
    if (!entry.ok()) return entry.status();
    aliases = std::move(*entry);
  }
  StatusOr<SubPlan> result = assignBuffers(c, aliases, isEntry, loopBody, rootSlots);
  if (!result.ok() || !isEntry) return result;
  addAliasCopies(computation, c, aliases, *result);
  return result;
}

Status Planner::refuseForeignWork(const HloInstruction& instruction) {
  const HloOpcode opcode = instruction.opcode();
  if (linalg::isLapackCustomCall(instruction)) {
    // JAX's LAPACK calls run as a kernel that calls LAPACK (core/linalg); refused here, by name, when the routine or
    // its type is not one of those.
    StatusOr<linalg::Call> call = linalg::callOf(instruction);
    if (!call.ok()) return call.status();
  } else if (opcode == HloOpcode::kCustomCall) {
    return Status::error(fmt::format("{}: cannot run custom-call target \"{}\" (no CPU or GPU implementation here)",
                                     instruction.name(), instruction.attributes().customCallTarget.value_or("")));
  }
  if (opcodeCategory(opcode) == OpCategory::kCollective) {
    return Status::error(fmt::format("{}: cannot run collective {} (a single-device runtime)", instruction.name(),
                                     instruction.opcodeString()));
  }
  if (opcode == HloOpcode::kCall) {
    return Status::error(
        fmt::format("{}: call is not lowered: inline calls first (the inline pass)", instruction.name()));
  }
  return okStatus();
}

Status Planner::planValues(const HloInstruction& instruction, const std::vector<std::vector<int>>* parameterBuffers,
                           ComputationValues& c) {
  // Work that is not ours to run: refused while planning, before any kernel is compiled, naming what it is.
  FS_RETURN_IF_ERROR(refuseForeignWork(instruction));
  const HloOpcode opcode = instruction.opcode();
  const Shape& shape = instruction.shape();
  switch (opcode) {
    case HloOpcode::kParameter: return planParameter(instruction, parameterBuffers, c);
    case HloOpcode::kConstant: return planConstant(instruction, c);
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement: return planTupleOp(instruction, c);
    case HloOpcode::kWhile:
    case HloOpcode::kConditional: return planControlFlowStep(instruction, c);
    default: break;
  }
  const bool layoutChangingBitcast = opcode == HloOpcode::kBitcast && instruction.operandCount() == 1 &&
                                     instruction.operand(0)->shape().isArray() &&
                                     (physicalStrides(shape) != rowMajorStrides(shape.dimensions()) ||
                                      physicalStrides(instruction.operand(0)->shape()) !=
                                          rowMajorStrides(instruction.operand(0)->shape().dimensions()));
  if (needsNoKernel(opcode) && !layoutChangingBitcast) {  // bitcast, reshape: same bytes under another shape
    FS_RETURN_IF_ERROR(checkArrayShape(instruction, shape));
    if (instruction.operandCount() != 1 || instruction.operand(0)->shape().isTuple() ||
        instruction.operand(0)->shape().byteSize() != shape.byteSize()) {
      return Status::error(
          fmt::format("{}: {} changes the size of its operand", instruction.name(), instruction.opcodeString()));
    }
    c.slots[&instruction] = c.slots.at(instruction.operand(0));
    return okStatus();
  }
  return planKernelStep(instruction, c);
}

Status Planner::planParameter(const HloInstruction& instruction, const std::vector<std::vector<int>>* parameterBuffers,
                              ComputationValues& c) {
  const Shape& shape = instruction.shape();
  if (parameterBuffers == nullptr) {  // the entry's: a buffer the caller passes
    FS_RETURN_IF_ERROR(checkArrayShape(instruction, shape));
    const int v = c.add(shape);
    c[v].parameter = instruction.parameterNumber();
    c.slots[&instruction] = {v};
    return okStatus();
  }
  const int64_t number = instruction.parameterNumber();
  if (number < 0 || number >= static_cast<int64_t>(parameterBuffers->size())) {
    return Status::error(fmt::format("{}: parameter {} has no operand", instruction.name(), number));
  }
  StatusOr<std::vector<Shape>> elements = flatElements(instruction, shape);
  if (!elements.ok()) return elements.status();
  const std::vector<int>& buffers = (*parameterBuffers)[static_cast<size_t>(number)];
  if (buffers.size() != elements->size()) {
    return Status::error(
        fmt::format("{}: {} elements but {} operand buffers", instruction.name(), elements->size(), buffers.size()));
  }
  std::vector<int> elementValues;
  for (size_t i = 0; i < elements->size(); ++i) {
    FS_RETURN_IF_ERROR(checkArrayShape(instruction, (*elements)[i]));
    const int v = c.add((*elements)[i]);
    c[v].buffer = buffers[i];
    c.external[static_cast<size_t>(v)] = true;
    elementValues.push_back(v);
  }
  c.slots[&instruction] = elementValues;
  return okStatus();
}

Status Planner::planConstant(const HloInstruction& instruction, ComputationValues& c) {
  FS_RETURN_IF_ERROR(checkArrayShape(instruction, instruction.shape()));
  const Literal* literal = instruction.literal();
  if (literal == nullptr || (literal->kind() != Literal::Kind::kFloat && literal->kind() != Literal::Kind::kInteger)) {
    return Status::error(
        fmt::format("{}: constant value is not available (elided or undecoded literal)", instruction.name()));
  }
  const int v = c.add(instruction.shape());
  c[v].constant = &instruction;
  c.slots[&instruction] = {v};
  return okStatus();
}

Status Planner::planTupleOp(const HloInstruction& instruction, ComputationValues& c) {
  if (instruction.opcode() == HloOpcode::kTuple) {
    std::vector<int> elements;
    for (const HloInstruction* operand : instruction.operands()) {
      const std::vector<int>& operandSlots = c.slots.at(operand);
      if (operand->shape().isTuple() || operandSlots.size() != 1) {
        return Status::error(fmt::format("{}: nested tuples are not supported by codegen", instruction.name()));
      }
      elements.push_back(operandSlots[0]);
    }
    c.slots[&instruction] = elements;
    return okStatus();
  }
  const std::vector<int>& operandSlots = c.slots.at(instruction.operand(0));
  const int64_t index = instruction.attributes().tupleIndex.value_or(-1);
  if (!instruction.operand(0)->shape().isTuple() || index < 0 || index >= static_cast<int64_t>(operandSlots.size())) {
    return Status::error(fmt::format("{}: get-tuple-element index {} out of range", instruction.name(), index));
  }
  FS_RETURN_IF_ERROR(checkArrayShape(instruction, instruction.shape()));
  c.slots[&instruction] = {operandSlots[static_cast<size_t>(index)]};
  return okStatus();
}

Status Planner::planControlFlowStep(const HloInstruction& instruction, ComputationValues& c) {
  const int stepIndex = static_cast<int>(c.steps.size());
  const HloOpcode opcode = instruction.opcode();
  LocalStep local;
  local.instruction = &instruction;
  for (const HloInstruction* operand : instruction.operands()) {
    StatusOr<std::vector<Shape>> elements = flatElements(*operand, operand->shape());
    if (!elements.ok()) return elements.status();
    local.groups.push_back(c.slots.at(operand));
    for (int v : local.groups.back()) {
      local.inputs.push_back(v);
      c[v].lastReader = stepIndex;
    }
  }
  if (opcode == HloOpcode::kWhile && local.groups.size() != 1) {
    return Status::error(fmt::format("{}: while takes one operand", instruction.name()));
  }
  if (opcode == HloOpcode::kConditional && local.groups.size() < 2) {
    return Status::error(fmt::format("{}: conditional needs a branch index and branch operands", instruction.name()));
  }
  StatusOr<std::vector<Shape>> elements = flatElements(instruction, instruction.shape());
  if (!elements.ok()) return elements.status();
  for (const Shape& element : *elements) {
    FS_RETURN_IF_ERROR(checkArrayShape(instruction, element));
    const int v = c.add(element);
    c[v].producer = stepIndex;
    c.pinned[static_cast<size_t>(v)] = true;
    local.outputs.push_back(v);
  }
  c.slots[&instruction] = local.outputs;
  c.steps.push_back(std::move(local));
  return okStatus();
}

Status Planner::planKernelStep(const HloInstruction& instruction, ComputationValues& c) {
  const int stepIndex = static_cast<int>(c.steps.size());
  const HloOpcode opcode = instruction.opcode();
  const Shape& shape = instruction.shape();
  std::vector<Shape> outputShapes;
  if (shape.isTuple()) {
    if (opcode != HloOpcode::kFusion && opcode != HloOpcode::kSort && opcode != HloOpcode::kScatter &&
        opcode != HloOpcode::kReduceWindow && opcode != HloOpcode::kCustomCall &&
        opcode != HloOpcode::kReduce) {  // these of several operands: one output per operand (emitKernels)
      return Status::error(
          fmt::format("{}: cannot lower '{}' producing a tuple", instruction.name(), instruction.opcodeString()));
    }
    for (const Shape& element : shape.tupleElements()) {
      if (element.isTuple()) {
        return Status::error(fmt::format("{}: nested tuple outputs are not supported", instruction.name()));
      }
      outputShapes.push_back(element);
    }
  } else {
    outputShapes.push_back(shape);
  }
  for (const Shape& output : outputShapes) {
    FS_RETURN_IF_ERROR(checkArrayShape(instruction, output));
  }
  PlanKernel kernel;
  kernel.instruction = &instruction;
  kernel.instructionName = instruction.name();
  kernel.name = uniqueName(symbolName(instruction.name()));
  kernel.kind = opcode == HloOpcode::kFusion ? std::string(fusionKindName(instruction.fusionKind()))
                                             : std::string(instruction.opcodeString());
  LocalStep local;
  local.kernel = static_cast<int>(m_plan.kernels.size());
  local.instruction = &instruction;
  for (const HloInstruction* operand : instruction.operands()) {
    const std::vector<int>& operandSlots = c.slots.at(operand);
    if (operand->shape().isTuple() || operandSlots.size() != 1) {
      return Status::error(
          fmt::format("{}: tuple-shaped operand {} is not supported by codegen", instruction.name(), operand->name()));
    }
    local.inputs.push_back(operandSlots[0]);
    c[operandSlots[0]].lastReader = stepIndex;
    kernel.inputShapes.push_back(operand->shape());
    kernel.bytesRead += operand->shape().byteSize();
  }
  for (const Shape& output : outputShapes) {
    const int v = c.add(output);
    c[v].producer = stepIndex;
    local.outputs.push_back(v);
    kernel.bytesWritten += c[v].bytes;
    kernel.elements += output.elementCount();
  }
  kernel.outputShapes = outputShapes;
  c.slots[&instruction] = local.outputs;
  m_plan.kernels.push_back(std::move(kernel));
  c.steps.push_back(std::move(local));
  return okStatus();
}

StatusOr<EntryAliases> Planner::planEntryInterface(const HloComputation& computation, ComputationValues& c) {
  const HloInstruction* root = computation.root();
  const std::vector<int>& rootSlots = c.slots.at(root);
  EntryAliases aliases;
  for (const HloInstruction* parameter : computation.parameters()) {
    if (parameter == nullptr) return Status::error("entry parameters are not numbered 0..n-1");
  }
  m_plan.tupleOutput = root->shape().isTuple();
  for (size_t i = 0; i < rootSlots.size(); ++i) {
    PlanOutput output;
    output.index = static_cast<int64_t>(i);
    // A tuple instruction names its elements after its operands; a tuple-shaped root that is not one (a
    // multi-output fusion, a while) names them ROOT.INDEX.
    // A single-output fusion is named after the instruction it computes, so that output files keep their
    // names whether or not the module was fused.
    auto valueName = [](const HloInstruction* value) {
      const HloComputation* fused = value->fusedComputation();
      return fused && fused->root() && !fused->root()->shape().isTuple() ? fused->root()->name() : value->name();
    };
    output.name = !m_plan.tupleOutput                   ? valueName(root)
                  : root->opcode() == HloOpcode::kTuple ? valueName(root->operand(static_cast<int>(i)))
                                                        : fmt::format("{}.{}", root->name(), i);
    // The root's own shape: a bitcast of a kernel's output shares its buffer under another shape.
    output.shape = m_plan.tupleOutput ? root->shape().tupleElement(static_cast<int>(i)) : root->shape();
    m_plan.outputs.push_back(output);
  }

  // Aliasing: output i lives in parameter p's buffer.
  StatusOr<std::vector<std::pair<int64_t, int64_t>>> declared = parseInputOutputAlias(m_module);
  if (!declared.ok()) return declared.status();
  for (const HloInstruction* parameter : computation.parameters()) {
    aliases.parameterValue[parameter->parameterNumber()] = c.slots.at(parameter)[0];
  }
  std::set<int64_t> aliasedParameters;
  for (auto [outputIndex, parameter] : *declared) {
    if (outputIndex < 0 || outputIndex >= static_cast<int64_t>(rootSlots.size()) ||
        !aliases.parameterValue.count(parameter)) {
      return Status::error(
          fmt::format("input_output_alias: output {} / parameter {} does not exist", outputIndex, parameter));
    }
    const int v = rootSlots[static_cast<size_t>(outputIndex)];
    const int pv = aliases.parameterValue[parameter];
    if (v == pv) {
      m_plan.outputs[static_cast<size_t>(outputIndex)].aliasesParameter = parameter;
      continue;
    }
    if (c[pv].output || !aliasedParameters.insert(parameter).second ||
        c[v].shape.byteSize() != c[pv].shape.byteSize()) {
      continue;  // the parameter's value is needed as an output itself, or sizes differ: keep them apart
    }
    m_plan.outputs[static_cast<size_t>(outputIndex)].aliasesParameter = parameter;
    const PlanValue& value = c[v];
    const bool usedTwice = std::count(rootSlots.begin(), rootSlots.end(), v) > 1 || aliases.direct.count(v) > 0;
    // Only a kernel can write its output into another buffer; a while or conditional has buffers of its own.
    const bool byKernel = value.producer >= 0 && c.steps[static_cast<size_t>(value.producer)].kernel >= 0;
    bool inPlace = false;
    if (byKernel && c[pv].lastReader == value.producer &&
        c.steps[static_cast<size_t>(value.producer)].outputs.size() == 1) {
      std::vector<int> operands;
      const std::vector<int>& inputs = c.steps[static_cast<size_t>(value.producer)].inputs;
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i] == pv) operands.push_back(static_cast<int>(i));
      }
      inPlace = readsOnlyInPlace(c.steps[static_cast<size_t>(value.producer)].instruction, operands);
    }
    if (byKernel && (c[pv].lastReader < value.producer || inPlace) && !usedTwice) {
      aliases.direct[v] = parameter;
    } else {
      aliases.copies.emplace_back(static_cast<int>(outputIndex), parameter);
    }
  }
  for (const HloInstruction* parameter : computation.parameters()) {
    PlanValue& value = c[c.slots.at(parameter)[0]];
    value.buffer = addBuffer(value.bytes);
    m_plan.buffers[static_cast<size_t>(value.buffer)].parameter = parameter->parameterNumber();
    m_plan.parameters.push_back({parameter->parameterNumber(), parameter->name(), value.shape, value.buffer});
  }
  return aliases;
}

StatusOr<SubPlan> Planner::assignBuffers(ComputationValues& c, const EntryAliases& aliases, bool isEntry, bool loopBody,
                                         const std::vector<int>& rootSlots) {
  for (PlanValue& value : c.values) {
    if (value.constant != nullptr) {
      value.buffer = addBuffer(value.bytes);
      m_plan.buffers[static_cast<size_t>(value.buffer)].constant = value.constant;
    }
  }
  SubPlan result;
  std::multimap<int64_t, int> freeBuffers;               // bytes -> buffer id
  std::vector<bool> handedOver(c.values.size(), false);  // its buffer went on to an in-place update's output
  for (size_t k = 0; k < c.steps.size(); ++k) {
    const LocalStep& local = c.steps[k];
    // In a loop body, a dynamic-update-slice whose operand is read by nothing after it (a loop state element or a
    // temporary) writes its window into the operand's buffer. Only in loop bodies, where it saves a full copy per
    // trip (CPU and GPU kernels then write the window only; the buffer passed twice loses noalias).
    int inPlace = -1;
    if (loopBody && local.kernel >= 0 && local.outputs.size() == 1) {
      const int input = updatedInputOf(local.instruction);
      if (input >= 0 && input < static_cast<int>(local.inputs.size())) {
        const int v = local.inputs[static_cast<size_t>(input)];
        const PlanValue& operand = c[v];
        const bool readOnce = std::count(local.inputs.begin(), local.inputs.end(), v) == 1;
        const bool owned = operand.producer >= 0 || c.external[static_cast<size_t>(v)];
        if (readOnce && owned && operand.lastReader == static_cast<int>(k) && !operand.output &&
            !c.pinned[static_cast<size_t>(v)] && operand.constant == nullptr &&
            operand.bytes == c[local.outputs[0]].bytes) {
          inPlace = v;
        }
      }
    }
    for (int v : local.outputs) {
      PlanValue& value = c[v];
      if (!value.output) m_plan.temporaryBytesWithoutReuse += value.bytes;
      if (inPlace >= 0) {
        value.buffer = c[inPlace].buffer;
        handedOver[static_cast<size_t>(inPlace)] = true;
        // A loop state buffer stays the state's: never back to this body's free list.
        if (c.external[static_cast<size_t>(inPlace)]) c.pinned[static_cast<size_t>(v)] = true;
        PlanKernel& kernel = m_plan.kernels[static_cast<size_t>(local.kernel)];
        kernel.updatedInput = updatedInputOf(local.instruction);
        // Traffic of the window only: the rest of the operand stays where it is.
        const HloInstruction* root = local.instruction->opcode() == HloOpcode::kFusion
                                         ? local.instruction->fusedComputation()->root()
                                         : local.instruction;
        kernel.bytesRead -= value.bytes;
        kernel.bytesWritten = root->operand(1)->shape().byteSize();
        kernel.elements = root->operand(1)->shape().elementCount();
      } else if (auto it = aliases.direct.find(v); it != aliases.direct.end()) {
        value.buffer = c[aliases.parameterValue.at(it->second)].buffer;
      } else if (value.output || c.pinned[static_cast<size_t>(v)]) {
        value.buffer = addBuffer(value.bytes);
        m_plan.buffers[static_cast<size_t>(value.buffer)].output = isEntry && value.output;
      } else {
        auto it2 = freeBuffers.lower_bound(value.bytes);
        if (it2 != freeBuffers.end() && it2->first <= 2 * value.bytes + 64) {
          value.buffer = it2->second;
          freeBuffers.erase(it2);
        } else {
          value.buffer = addBuffer(value.bytes);
        }
      }
    }
    PlanStep step;
    if (local.kernel >= 0) {
      step.kind = PlanStep::Kind::kKernel;
      step.kernel = local.kernel;
      PlanKernel& kernel = m_plan.kernels[static_cast<size_t>(local.kernel)];
      for (int v : local.inputs) kernel.inputs.push_back(c[v].buffer);
      for (int v : local.outputs) kernel.outputs.push_back(c[v].buffer);
    } else {
      std::vector<std::vector<int>> groupBuffers;
      for (const std::vector<int>& group : local.groups) {
        groupBuffers.emplace_back();
        for (int v : group) groupBuffers.back().push_back(c[v].buffer);
      }
      for (int v : local.outputs) step.state.push_back(c[v].buffer);
      ++m_depth;
      Status planned = local.instruction->opcode() == HloOpcode::kWhile ? planWhile(local, groupBuffers[0], step)
                                                                        : planConditional(local, groupBuffers, step);
      --m_depth;
      FS_RETURN_IF_ERROR(planned);
    }
    result.steps.push_back(std::move(step));
    // Release temporaries whose last reader (or, unread, their producer) is this step.
    auto release = [&](int v) {
      PlanValue& value = c[v];
      if (value.producer < 0 || value.output || c.pinned[static_cast<size_t>(v)] || aliases.direct.count(v) ||
          handedOver[static_cast<size_t>(v)]) {
        return;
      }
      if (std::max(value.lastReader, value.producer) != static_cast<int>(k)) return;
      freeBuffers.emplace(m_plan.buffers[static_cast<size_t>(value.buffer)].bytes, value.buffer);
      value.producer = -2;  // released once
    };
    std::vector<int> touched = local.inputs;
    touched.insert(touched.end(), local.outputs.begin(), local.outputs.end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int v : touched) release(v);
  }
  for (int v : rootSlots) {
    const PlanValue& value = c[v];
    result.root.push_back(value.buffer);
    // A value updated in place in a state buffer is not the body's to swap away (it is already where it goes,
    // or, at another position, must be copied).
    const bool inStateBuffer = c.pinned[static_cast<size_t>(v)] && value.producer >= 0 &&
                               c.steps[static_cast<size_t>(value.producer)].kernel >= 0;
    result.owned.push_back(value.producer != -1 && !c.external[static_cast<size_t>(v)] && value.constant == nullptr &&
                           !inStateBuffer);
  }
  return result;
}

void Planner::addAliasCopies(const HloComputation& computation, ComputationValues& c, const EntryAliases& aliases,
                             SubPlan& result) {
  for (size_t i = 0; i < result.root.size(); ++i) m_plan.outputs[i].buffer = result.root[i];
  for (auto [outputIndex, parameter] : aliases.copies) {
    PlanOutput& output = m_plan.outputs[static_cast<size_t>(outputIndex)];
    PlanKernel copy;
    copy.name = uniqueName(symbolName("copy_to_" + computation.parameters()[static_cast<size_t>(parameter)]->name()));
    copy.kind = "copy";
    copy.inputs = {output.buffer};
    copy.inputShapes = {output.shape};
    const int target = c[aliases.parameterValue.at(parameter)].buffer;
    copy.outputs = {target};
    copy.outputShapes = {m_plan.parameters[static_cast<size_t>(parameter)].shape};
    copy.bytesRead = copy.bytesWritten = output.shape.byteSize();
    copy.elements = output.shape.elementCount();
    PlanStep step;
    step.kernel = static_cast<int>(m_plan.kernels.size());
    m_plan.kernels.push_back(std::move(copy));
    result.steps.push_back(std::move(step));
    output.buffer = target;
  }
}

const PlanStep* firstIn(const std::vector<PlanStep>& steps) {
  for (const PlanStep& step : steps) {
    if (step.kind != PlanStep::Kind::kKernel) return &step;
  }
  return nullptr;
}

}  // namespace planning

const PlanStep* firstControlFlowStep(const ExecutionPlan& plan) {
  return planning::firstIn(plan.steps);
}

namespace {

// Every instruction of the module (fused computations and called ones included) that reads or produces an element
// type codegen cannot hold, named by opcode before any planning (`c64 (3 instructions: convert c, fft f, abs a)`):
// the user learns at once what does not run, not only the first instruction planning reaches.
Status checkElementTypes(const HloModule& module) {
  std::map<std::string, std::vector<std::string>> byType;  // type -> "opcode name"
  size_t count = 0;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      std::vector<PrimitiveType> types;
      // Complex types are held and moved, and the ops complexSupportedInCodegen names are lowered: the others
      // are listed under their complex type.
      const bool complexLowered = complexSupportedInCodegen(*instruction);
      std::function<void(const Shape&)> collect = [&](const Shape& shape) {
        if (shape.isTuple()) {
          for (const Shape& element : shape.tupleElements()) collect(element);
        } else if (shape.isArray() && !isSupportedElementType(shape.elementType()) &&
                   !(isComplex(shape.elementType()) && complexLowered)) {
          types.push_back(shape.elementType());
        }
      };
      collect(instruction->shape());
      for (const HloInstruction* operand : instruction->operands()) collect(operand->shape());
      // A fusion's own ops are listed, not the fusion; a parameter only as the entry's.
      if (types.empty() || instruction->opcode() == HloOpcode::kFusion ||
          (instruction->opcode() == HloOpcode::kParameter && computation.get() != module.entry())) {
        continue;
      }
      ++count;
      byType[std::string(primitiveTypeName(types.front()))].push_back(
          fmt::format("{} {}", instruction->opcodeString(), instruction->name()));
    }
  }
  if (byType.empty()) return okStatus();
  std::vector<std::string> parts;
  for (auto& [type, ops] : byType) {
    const size_t shown = std::min<size_t>(ops.size(), 8);
    parts.push_back(fmt::format("{} ({} instruction{}: {}{})", type, ops.size(), ops.size() == 1 ? "" : "s",
                                fmt::join(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                                ops.size() > shown ? ", ..." : ""));
  }
  return Status::error(
      fmt::format("cannot compile: {} instruction{} read or produce element types codegen does not "
                  "support for their op: {}",
                  count, count == 1 ? "" : "s", fmt::join(parts, "; ")));
}

}  // namespace

StatusOr<ExecutionPlan> planExecution(const HloModule& module) {
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return Status::error("module has no entry computation");
  FS_RETURN_IF_ERROR(checkElementTypes(module));
  ExecutionPlan plan;
  plan.module = module.name();
  planning::Planner planner(module, plan);
  StatusOr<planning::SubPlan> program = planner.planComputation(*entry, nullptr);
  if (!program.ok()) return program.status();
  plan.steps = std::move(program->steps);
  for (const PlanBuffer& buffer : plan.buffers) plan.peakBytes += buffer.bytes;
  return plan;
}

std::string planToString(const ExecutionPlan& plan) {
  std::string out = fmt::format("plan {}: {} kernels, {} buffers, peak {} bytes\n", plan.module, plan.kernels.size(),
                                plan.buffers.size(), plan.peakBytes);
  for (const PlanBuffer& buffer : plan.buffers) {
    out += fmt::format("  buffer {}: {} bytes{}{}{}\n", buffer.id, buffer.bytes,
                       buffer.parameter >= 0 ? fmt::format(" parameter {}", buffer.parameter) : "",
                       buffer.constant ? " constant " + buffer.constant->name() : "", buffer.output ? " output" : "");
  }
  for (const PlanKernel& kernel : plan.kernels) {
    out += fmt::format("  kernel {} ({}): in [{}] out [{}]\n", kernel.name, kernel.kind, fmt::join(kernel.inputs, ", "),
                       fmt::join(kernel.outputs, ", "));
  }
  std::function<void(const std::vector<PlanStep>&, int)> listSteps = [&](const std::vector<PlanStep>& steps,
                                                                         int indent) {
    auto moves = [](const std::vector<PlanMove>& list) {
      std::vector<std::string> parts;
      for (const PlanMove& move : list)
        parts.push_back(fmt::format("{}{}{}", move.from, move.swap ? "<->" : "->", move.to));
      return fmt::format("{}", fmt::join(parts, ", "));
    };
    const std::string pad(static_cast<size_t>(indent), ' ');
    for (const PlanStep& step : steps) {
      if (step.kind == PlanStep::Kind::kKernel) {
        out += fmt::format("{}{}\n", pad, plan.kernels[static_cast<size_t>(step.kernel)].name);
      } else if (step.kind == PlanStep::Kind::kWhile) {
        out += fmt::format("{}while {}: state [{}] init [{}]\n{}  condition (pred in buffer {}):\n", pad,
                           step.instruction, fmt::join(step.state, ", "), moves(step.init), pad, step.predicate);
        listSteps(step.condition, indent + 4);
        out += fmt::format("{}  body, then [{}]:\n", pad, moves(step.update));
        listSteps(step.body, indent + 4);
      } else {
        out += fmt::format("{}conditional {}: index in buffer {}, results [{}]\n", pad, step.instruction, step.selector,
                           fmt::join(step.results, ", "));
        for (size_t k = 0; k < step.branches.size(); ++k) {
          out += fmt::format("{}  branch {}, then [{}]:\n", pad, k, moves(step.branchResults[k]));
          listSteps(step.branches[k], indent + 4);
        }
      }
    }
  };
  if (firstControlFlowStep(plan) != nullptr) {
    out += "  program:\n";
    listSteps(plan.steps, 4);
  }
  for (const PlanOutput& output : plan.outputs) {
    out += fmt::format("  output {} ({}): buffer {}{}\n", output.index, output.name, output.buffer,
                       output.aliasesParameter ? fmt::format(" aliases parameter {}", *output.aliasesParameter) : "");
  }
  return out;
}

}  // namespace fusionscope::core
