#include "core/text/hlo_printer.h"

#include <fmt/format.h>

#include "core/text/attribute_text.h"

namespace fusionscope::core {
namespace {

void appendCalled(std::string& out, const CalledComputationRef& ref) {
  fmt::format_to(std::back_inserter(out), ", {}=", ref.key);
  if (ref.braced) out += '{';
  for (size_t i = 0; i < ref.computations.size(); ++i) {
    if (i > 0) out += ", ";
    out += '%';
    out += ref.computations[i]->name();
  }
  if (ref.braced) out += '}';
}

void appendAttributes(std::string& out, const HloInstruction& inst) {
  const InstructionAttributes& a = inst.attributes();
  auto add = [&](std::string_view key, std::string_view value) {
    fmt::format_to(std::back_inserter(out), ", {}={}", key, value);
  };
  if (a.tupleIndex) add("index", std::to_string(*a.tupleIndex));
  if (a.iotaDimension) add("iota_dimension", std::to_string(*a.iotaDimension));
  if (a.slice) add("slice", sliceText(*a.slice));
  if (a.padding) add("padding", paddingText(*a.padding));
  if (a.window) add("window", windowText(*a.window));
  if (a.dimensions) add("dimensions", intListText(*a.dimensions));
  if (a.dot) {
    if (!a.dot->lhsBatch.empty()) add("lhs_batch_dims", intListText(a.dot->lhsBatch));
    add("lhs_contracting_dims", intListText(a.dot->lhsContracting));
    if (!a.dot->rhsBatch.empty()) add("rhs_batch_dims", intListText(a.dot->rhsBatch));
    add("rhs_contracting_dims", intListText(a.dot->rhsContracting));
  }
  if (a.direction) add("direction", comparisonDirectionName(*a.direction));
  if (a.fusionKind) add("kind", fusionKindName(*a.fusionKind));
  for (const CalledComputationRef& ref : inst.calledComputationRefs()) appendCalled(out, ref);
  if (a.customCallTarget) add("custom_call_target", quoted(*a.customCallTarget));
  for (const auto& [key, value] : a.raw) add(key, value);
  if (!inst.controlPredecessors().empty()) {
    out += ", control-predecessors={";
    for (size_t i = 0; i < inst.controlPredecessors().size(); ++i) {
      if (i > 0) out += ", ";
      out += '%';
      out += inst.controlPredecessors()[i]->name();
    }
    out += '}';
  }
  if (a.sharding) add("sharding", *a.sharding);
  if (a.frontendAttributes) add("frontend_attributes", *a.frontendAttributes);
  if (a.metadata && !a.metadata->empty()) add("metadata", metadataText(*a.metadata));
  if (a.backendConfig) add("backend_config", *a.backendConfig);
}

void appendInstruction(std::string& out, const HloInstruction& inst) {
  out += '%';
  out += inst.name();
  out += " = ";
  inst.shape().appendTo(out);
  out += ' ';
  out += inst.opcodeString();
  out += '(';
  if (inst.opcode() == HloOpcode::kParameter) {
    fmt::format_to(std::back_inserter(out), "{}", inst.parameterNumber());
  } else if (inst.opcode() == HloOpcode::kConstant && inst.literal()) {
    out += inst.literal()->toString();
  } else {
    for (int i = 0; i < inst.operandCount(); ++i) {
      if (i > 0) out += ", ";
      if (i > 0 && i % 5 == 0) fmt::format_to(std::back_inserter(out), "/*index={}*/", i);
      const HloInstruction* operand = inst.operand(i);
      operand->shape().appendTo(out);
      out += " %";
      out += operand->name();
    }
  }
  out += ')';
  appendAttributes(out, inst);
}

void appendComputation(std::string& out, const HloComputation& computation) {
  if (computation.isEntry()) out += "ENTRY ";
  out += '%';
  out += computation.name();
  out += " (";
  std::vector<HloInstruction*> params = computation.parameters();
  bool first = true;
  for (const HloInstruction* param : params) {
    if (!param) continue;
    if (!first) out += ", ";
    first = false;
    out += param->name();
    out += ": ";
    param->shape().appendTo(out);
  }
  out += ") -> ";
  if (computation.root()) computation.root()->shape().appendTo(out);
  out += " {\n";
  for (const auto& inst : computation.instructions()) {
    out += "  ";
    if (inst.get() == computation.root()) out += "ROOT ";
    appendInstruction(out, *inst);
    out += '\n';
  }
  out += '}';
  for (const auto& [key, value] : computation.attributes())
    fmt::format_to(std::back_inserter(out), ", {}={}", key, value);
  out += '\n';
}

}  // namespace

std::string printInstruction(const HloInstruction& instruction) {
  std::string out;
  appendInstruction(out, instruction);
  return out;
}

std::string printAttributes(const HloInstruction& instruction) {
  std::string out;
  appendAttributes(out, instruction);
  return out.size() >= 2 ? out.substr(2) : out;
}

std::string printComputation(const HloComputation& computation) {
  std::string out;
  appendComputation(out, computation);
  return out;
}

std::string printModule(const HloModule& module) {
  std::string out;
  out.reserve(static_cast<size_t>(module.instructionCount()) * 120);
  out += "HloModule ";
  out += module.name();
  for (const auto& [key, value] : module.headerAttributes())
    fmt::format_to(std::back_inserter(out), ", {}={}", key, value);
  out += "\n";
  for (const HeaderTable& table : module.headerTables()) {
    out += '\n';
    out += table.name;
    out += '\n';
    for (const auto& [id, text] : table.rows) fmt::format_to(std::back_inserter(out), "{} {}\n", id, text);
  }
  for (const auto& computation : module.computations()) {
    out += '\n';
    appendComputation(out, *computation);
  }
  return out;
}

}  // namespace fusionscope::core
