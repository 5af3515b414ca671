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
#include "core/ir/hlo_clone.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/literal.h"
#include "core/passes/call_inliner.h"
#include "core/passes/softmax_fusion.h"

namespace fusionscope::core {
namespace {

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
  if (!isSupportedElementType(shape.elementType())) {
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

StatusOr<ExecutionPlan> planExecution(const HloModule& module) {
  const HloComputation* entry = module.entry();
  if (entry == nullptr) return Status::error("module has no entry computation");
  StatusOr<std::vector<HloInstruction*>> order = entry->postOrder();
  if (!order.ok()) return order.status();

  ExecutionPlan plan;
  plan.module = module.name();
  std::vector<PlanValue> values;
  std::unordered_map<const HloInstruction*, std::vector<int>> slots;  // value per (tuple) element
  std::vector<std::vector<int>> kernelInputs;
  std::vector<std::vector<int>> kernelOutputs;
  std::set<std::string> usedNames;

  auto newValue = [&](const Shape& shape) {
    PlanValue value;
    value.shape = shape;
    value.bytes = elementByteSize(shape.elementType()) * shape.elementCount();
    values.push_back(value);
    return static_cast<int>(values.size()) - 1;
  };

  for (const HloInstruction* instruction : *order) {
    const HloOpcode opcode = instruction->opcode();
    const Shape& shape = instruction->shape();
    // Work that is not ours to run: refused while planning, before any kernel is compiled, naming what it is.
    if (opcode == HloOpcode::kCustomCall) {
      return Status::error(fmt::format("{}: cannot run custom-call target \"{}\" (no CPU or GPU implementation here)",
                                       instruction->name(), instruction->attributes().customCallTarget.value_or("")));
    }
    if (opcodeCategory(opcode) == OpCategory::kCollective) {
      return Status::error(fmt::format("{}: cannot run collective {} (a single-device runtime)", instruction->name(),
                                       instruction->opcodeString()));
    }
    if (opcode == HloOpcode::kParameter) {
      FS_RETURN_IF_ERROR(checkArrayShape(*instruction, shape));
      int v = newValue(shape);
      values[static_cast<size_t>(v)].parameter = instruction->parameterNumber();
      slots[instruction] = {v};
      continue;
    }
    if (opcode == HloOpcode::kConstant) {
      FS_RETURN_IF_ERROR(checkArrayShape(*instruction, shape));
      const Literal* literal = instruction->literal();
      if (literal == nullptr ||
          (literal->kind() != Literal::Kind::kFloat && literal->kind() != Literal::Kind::kInteger)) {
        return Status::error(
            fmt::format("{}: constant value is not available (elided or undecoded literal)", instruction->name()));
      }
      int v = newValue(shape);
      values[static_cast<size_t>(v)].constant = instruction;
      slots[instruction] = {v};
      continue;
    }
    if (opcode == HloOpcode::kTuple) {
      std::vector<int> elements;
      for (const HloInstruction* operand : instruction->operands()) {
        const std::vector<int>& operandSlots = slots.at(operand);
        if (operand->shape().isTuple() || operandSlots.size() != 1) {
          return Status::error(fmt::format("{}: nested tuples are not supported by codegen", instruction->name()));
        }
        elements.push_back(operandSlots[0]);
      }
      slots[instruction] = elements;
      continue;
    }
    if (opcode == HloOpcode::kGetTupleElement) {
      const std::vector<int>& operandSlots = slots.at(instruction->operand(0));
      int64_t index = instruction->attributes().tupleIndex.value_or(-1);
      if (!instruction->operand(0)->shape().isTuple() || index < 0 ||
          index >= static_cast<int64_t>(operandSlots.size())) {
        return Status::error(fmt::format("{}: get-tuple-element index {} out of range", instruction->name(), index));
      }
      FS_RETURN_IF_ERROR(checkArrayShape(*instruction, shape));
      slots[instruction] = {operandSlots[static_cast<size_t>(index)]};
      continue;
    }
    const bool layoutChangingBitcast = opcode == HloOpcode::kBitcast && instruction->operandCount() == 1 &&
                                       instruction->operand(0)->shape().isArray() &&
                                       (physicalStrides(shape) != rowMajorStrides(shape.dimensions()) ||
                                        physicalStrides(instruction->operand(0)->shape()) !=
                                            rowMajorStrides(instruction->operand(0)->shape().dimensions()));
    if (needsNoKernel(opcode) && !layoutChangingBitcast) {  // bitcast, reshape: same bytes under another shape
      FS_RETURN_IF_ERROR(checkArrayShape(*instruction, shape));
      if (instruction->operandCount() != 1 || instruction->operand(0)->shape().isTuple() ||
          instruction->operand(0)->shape().byteSize() != shape.byteSize()) {
        return Status::error(
            fmt::format("{}: {} changes the size of its operand", instruction->name(), instruction->opcodeString()));
      }
      slots[instruction] = slots.at(instruction->operand(0));
      continue;
    }

    // A kernel.
    std::vector<Shape> outputShapes;
    if (shape.isTuple()) {
      // A sort of several operands writes one output per operand (emitKernels' sort kernel).
      if (opcode != HloOpcode::kFusion && opcode != HloOpcode::kSort) {
        return Status::error(
            fmt::format("{}: cannot lower '{}' producing a tuple", instruction->name(), instruction->opcodeString()));
      }
      for (const Shape& element : shape.tupleElements()) {
        if (element.isTuple()) {
          return Status::error(fmt::format("{}: nested tuple outputs are not supported", instruction->name()));
        }
        outputShapes.push_back(element);
      }
    } else {
      outputShapes.push_back(shape);
    }
    for (const Shape& output : outputShapes) {
      FS_RETURN_IF_ERROR(checkArrayShape(*instruction, output));
    }
    PlanKernel kernel;
    kernel.instruction = instruction;
    kernel.instructionName = instruction->name();
    kernel.name = symbolName(instruction->name());
    while (!usedNames.insert(kernel.name).second) kernel.name += "_";
    kernel.kind = opcode == HloOpcode::kFusion ? std::string(fusionKindName(instruction->fusionKind()))
                                               : std::string(instruction->opcodeString());
    const int kernelIndex = static_cast<int>(plan.kernels.size());
    std::vector<int> inputs;
    for (const HloInstruction* operand : instruction->operands()) {
      const std::vector<int>& operandSlots = slots.at(operand);
      if (operand->shape().isTuple() || operandSlots.size() != 1) {
        return Status::error(fmt::format("{}: tuple-shaped operand {} is not supported by codegen", instruction->name(),
                                         operand->name()));
      }
      inputs.push_back(operandSlots[0]);
      values[static_cast<size_t>(operandSlots[0])].lastReader = kernelIndex;
      kernel.inputShapes.push_back(operand->shape());
      kernel.bytesRead += operand->shape().byteSize();
    }
    std::vector<int> outputs;
    for (const Shape& output : outputShapes) {
      int v = newValue(output);
      values[static_cast<size_t>(v)].producer = kernelIndex;
      outputs.push_back(v);
      kernel.bytesWritten += values[static_cast<size_t>(v)].bytes;
      kernel.elements += output.elementCount();
    }
    kernel.outputShapes = outputShapes;
    slots[instruction] = outputs;
    kernelInputs.push_back(inputs);
    kernelOutputs.push_back(outputs);
    plan.kernels.push_back(std::move(kernel));
  }

  // Entry parameters and outputs.
  for (const HloInstruction* parameter : entry->parameters()) {
    if (parameter == nullptr) return Status::error("entry parameters are not numbered 0..n-1");
  }
  const HloInstruction* root = entry->root();
  if (root == nullptr) return Status::error("entry computation has no root");
  plan.tupleOutput = root->shape().isTuple();
  const std::vector<int>& rootSlots = slots.at(root);
  for (size_t i = 0; i < rootSlots.size(); ++i) {
    PlanOutput output;
    output.index = static_cast<int64_t>(i);
    // A tuple instruction names its elements after its operands; a tuple-shaped root that is not one (a
    // multi-output fusion) names them ROOT.INDEX.
    // A single-output fusion is named after the instruction it computes, so that output files keep their
    // names whether or not the module was fused.
    auto valueName = [](const HloInstruction* value) {
      const HloComputation* fused = value->fusedComputation();
      return fused && fused->root() && !fused->root()->shape().isTuple() ? fused->root()->name() : value->name();
    };
    output.name = !plan.tupleOutput                     ? valueName(root)
                  : root->opcode() == HloOpcode::kTuple ? valueName(root->operand(static_cast<int>(i)))
                                                        : fmt::format("{}.{}", root->name(), i);
    // The root's own shape: a bitcast of a kernel's output shares its buffer under another shape.
    output.shape = plan.tupleOutput ? root->shape().tupleElement(static_cast<int>(i)) : root->shape();
    plan.outputs.push_back(output);
    values[static_cast<size_t>(rootSlots[i])].output = true;
  }

  // Aliasing: output i lives in parameter p's buffer.
  StatusOr<std::vector<std::pair<int64_t, int64_t>>> aliases = parseInputOutputAlias(module);
  if (!aliases.ok()) return aliases.status();
  std::unordered_map<int64_t, int> parameterValue;
  for (const HloInstruction* parameter : entry->parameters()) {
    parameterValue[parameter->parameterNumber()] = slots.at(parameter)[0];
  }
  std::map<int, int64_t> directAlias;              // temporary value -> parameter whose buffer it is written into
  std::vector<std::pair<int, int64_t>> copyAlias;  // (output index, parameter) needing a final copy
  std::set<int64_t> aliasedParameters;
  for (auto [outputIndex, parameter] : *aliases) {
    if (outputIndex < 0 || outputIndex >= static_cast<int64_t>(rootSlots.size()) || !parameterValue.count(parameter)) {
      return Status::error(
          fmt::format("input_output_alias: output {} / parameter {} does not exist", outputIndex, parameter));
    }
    const int v = rootSlots[static_cast<size_t>(outputIndex)];
    const int pv = parameterValue[parameter];
    if (v == pv) {
      plan.outputs[static_cast<size_t>(outputIndex)].aliasesParameter = parameter;
      continue;
    }
    if (values[static_cast<size_t>(pv)].output || !aliasedParameters.insert(parameter).second ||
        values[static_cast<size_t>(v)].shape.byteSize() != values[static_cast<size_t>(pv)].shape.byteSize()) {
      continue;  // the parameter's value is needed as an output itself, or sizes differ: keep them apart
    }
    plan.outputs[static_cast<size_t>(outputIndex)].aliasesParameter = parameter;
    const PlanValue& value = values[static_cast<size_t>(v)];
    const bool usedTwice = std::count(rootSlots.begin(), rootSlots.end(), v) > 1 || directAlias.count(v) > 0;
    bool inPlace = false;
    if (value.producer >= 0 && values[static_cast<size_t>(pv)].lastReader == value.producer &&
        kernelOutputs[static_cast<size_t>(value.producer)].size() == 1) {
      std::vector<int> operands;
      const std::vector<int>& inputs = kernelInputs[static_cast<size_t>(value.producer)];
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i] == pv) operands.push_back(static_cast<int>(i));
      }
      inPlace = readsOnlyInPlace(plan.kernels[static_cast<size_t>(value.producer)].instruction, operands);
    }
    if (value.producer >= 0 && (values[static_cast<size_t>(pv)].lastReader < value.producer || inPlace) && !usedTwice) {
      directAlias[v] = parameter;
    } else {
      copyAlias.emplace_back(static_cast<int>(outputIndex), parameter);
    }
  }

  // Buffer assignment.
  auto addBuffer = [&](int64_t bytes) {
    PlanBuffer buffer;
    buffer.id = static_cast<int>(plan.buffers.size());
    buffer.bytes = bytes;
    plan.buffers.push_back(buffer);
    return buffer.id;
  };
  for (const HloInstruction* parameter : entry->parameters()) {
    int v = slots.at(parameter)[0];
    PlanValue& value = values[static_cast<size_t>(v)];
    value.buffer = addBuffer(value.bytes);
    plan.buffers[static_cast<size_t>(value.buffer)].parameter = parameter->parameterNumber();
    plan.parameters.push_back({parameter->parameterNumber(), parameter->name(), value.shape, value.buffer});
  }
  for (PlanValue& value : values) {
    if (value.constant != nullptr) {
      value.buffer = addBuffer(value.bytes);
      plan.buffers[static_cast<size_t>(value.buffer)].constant = value.constant;
    }
  }
  std::multimap<int64_t, int> freeBuffers;  // bytes -> buffer id
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    for (int v : kernelOutputs[k]) {
      PlanValue& value = values[static_cast<size_t>(v)];
      plan.temporaryBytesWithoutReuse += value.output ? 0 : value.bytes;
      if (auto it = directAlias.find(v); it != directAlias.end()) {
        value.buffer = values[static_cast<size_t>(parameterValue[it->second])].buffer;
      } else if (value.output) {
        value.buffer = addBuffer(value.bytes);
        plan.buffers[static_cast<size_t>(value.buffer)].output = true;
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
    // Release temporaries whose last reader (or, unread, their producer) is this kernel.
    auto release = [&](int v) {
      PlanValue& value = values[static_cast<size_t>(v)];
      if (value.producer < 0 || value.output || directAlias.count(v)) return;
      if (std::max(value.lastReader, value.producer) != static_cast<int>(k)) return;
      freeBuffers.emplace(plan.buffers[static_cast<size_t>(value.buffer)].bytes, value.buffer);
      value.producer = -2;  // released once
    };
    std::vector<int> touched = kernelInputs[k];
    touched.insert(touched.end(), kernelOutputs[k].begin(), kernelOutputs[k].end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int v : touched) release(v);
    PlanKernel& kernel = plan.kernels[k];
    for (int v : kernelInputs[k]) kernel.inputs.push_back(values[static_cast<size_t>(v)].buffer);
    for (int v : kernelOutputs[k]) kernel.outputs.push_back(values[static_cast<size_t>(v)].buffer);
  }
  for (size_t i = 0; i < rootSlots.size(); ++i) {
    plan.outputs[i].buffer = values[static_cast<size_t>(rootSlots[i])].buffer;
  }
  for (auto [outputIndex, parameter] : copyAlias) {
    PlanOutput& output = plan.outputs[static_cast<size_t>(outputIndex)];
    PlanKernel copy;
    copy.name = symbolName("copy_to_" + entry->parameters()[static_cast<size_t>(parameter)]->name());
    while (!usedNames.insert(copy.name).second) copy.name += "_";
    copy.kind = "copy";
    copy.inputs = {output.buffer};
    copy.inputShapes = {output.shape};
    const int target = values[static_cast<size_t>(parameterValue[parameter])].buffer;
    copy.outputs = {target};
    copy.outputShapes = {plan.parameters[static_cast<size_t>(parameter)].shape};
    copy.bytesRead = copy.bytesWritten = output.shape.byteSize();
    copy.elements = output.shape.elementCount();
    plan.kernels.push_back(std::move(copy));
    output.buffer = target;
  }
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
  for (const PlanOutput& output : plan.outputs) {
    out += fmt::format("  output {} ({}): buffer {}{}\n", output.index, output.name, output.buffer,
                       output.aliasesParameter ? fmt::format(" aliases parameter {}", *output.aliasesParameter) : "");
  }
  return out;
}

StatusOr<std::unique_ptr<HloModule>> inlineLibraryFusions(const HloModule& module) {
  auto isLibraryFusion = [](const HloInstruction* inst) {
    return inst->isFusion() && inst->fusionKind() == FusionKind::kCustom && inst->fusedComputation() &&
           !isNormalizationFusion(*inst);
  };
  const HloComputation* entry = module.entry();
  if (!entry || std::none_of(entry->instructions().begin(), entry->instructions().end(),
                             [&](const auto& inst) { return isLibraryFusion(inst.get()); })) {
    return std::unique_ptr<HloModule>();
  }
  std::unique_ptr<HloModule> copy = cloneModule(module);
  HloComputation* copyEntry = copy->entry();
  std::vector<HloInstruction*> fusions;
  for (const auto& inst : copyEntry->instructions()) {
    if (isLibraryFusion(inst.get())) fusions.push_back(inst.get());
  }
  for (HloInstruction* fusion : fusions) {
    FS_RETURN_IF_ERROR(inlineBody(fusion, *fusion->fusedComputation(), *copy));
  }
  return copy;
}

}  // namespace fusionscope::core
