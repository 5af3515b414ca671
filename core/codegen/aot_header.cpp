#include "core/codegen/aot_header.h"

#include <cctype>
#include <set>

#include <fmt/format.h>

#include "core/codegen/aot_compiler.h"
#include "core/codegen/element_types.h"
#include "core/ir/shape.h"

namespace fusionscope::core {
namespace {

// The C++ type of one element as the object stores it (f16 and bf16 as their 16 bits).
const char* cppElementType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred: return "bool";
    case PrimitiveType::kS8: return "int8_t";
    case PrimitiveType::kS16: return "int16_t";
    case PrimitiveType::kS32: return "int32_t";
    case PrimitiveType::kS64: return "int64_t";
    case PrimitiveType::kU8: return "uint8_t";
    case PrimitiveType::kU16: return "uint16_t";
    case PrimitiveType::kU32: return "uint32_t";
    case PrimitiveType::kU64: return "uint64_t";
    case PrimitiveType::kF16: return "uint16_t";
    case PrimitiveType::kBF16: return "uint16_t";
    case PrimitiveType::kF32: return "float";
    case PrimitiveType::kF64: return "double";
    default: return "uint8_t";
  }
}

// An HLO name as part of a C++ identifier: "Arg_0.1" -> "Arg_0_1"; never two underscores in a row (reserved).
std::string identifierPart(const std::string& name) {
  std::string out;
  for (char c : name) {
    const char mapped = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (mapped == '_' && !out.empty() && out.back() == '_') continue;
    out += mapped;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "value" : out;
}

// Accessor names, one per value, made unique by appending the index where two names collide.
std::vector<std::string> accessorNames(const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  std::multiset<std::string> seen;
  for (const std::string& name : names) {
    parts.push_back(identifierPart(name));
    seen.insert(parts.back());
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (seen.count(parts[i]) > 1) parts[i] += fmt::format("_{}", i);
  }
  return parts;
}

std::string cString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string shapeArray(const std::string& name, const Shape& shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape.dimensions()) dims.push_back(fmt::format("{}", d));
  return fmt::format("  static constexpr std::array<int64_t, {}> {} = {{{}}};\n", dims.size(), name,
                     fmt::join(dims, ", "));
}

template <typename T>
std::string list(const std::vector<T>& values) {
  return fmt::format("{}", fmt::join(values, ", "));
}

}  // namespace

std::string aotHeaderText(const AotArtifact& artifact, const std::vector<std::string>& classPath) {
  const ExecutionPlan& plan = artifact.plan;
  const std::string& name = classPath.back();
  const std::vector<std::string> namespaces(classPath.begin(), classPath.end() - 1);
  std::vector<std::string> argNames;
  std::vector<int64_t> argSizes;
  for (const PlanParameter& parameter : plan.parameters) {
    argNames.push_back(parameter.name);
    argSizes.push_back(plan.buffers[static_cast<size_t>(parameter.buffer)].bytes);
  }
  std::vector<std::string> resultNames;
  std::vector<int64_t> resultSizes;
  for (const PlanOutput& output : plan.outputs) {
    resultNames.push_back(output.name);
    resultSizes.push_back(output.shape.elementCount() * elementByteSize(output.shape.elementType()));
  }
  const std::vector<std::string> argAccessors = accessorNames(argNames);
  const std::vector<std::string> resultAccessors = accessorNames(resultNames);
  std::vector<std::string> quotedArgs;
  for (const std::string& n : argNames) quotedArgs.push_back(cString(n));
  std::vector<std::string> quotedResults;
  for (const std::string& n : resultNames) quotedResults.push_back(cString(n));

  std::string h;
  h += fmt::format(
      "// {0}.h: module {1}, compiled ahead of time by fusionscope-cli for {2} (CPU {3}{4}).\n"
      "// Generated: do not edit. Link: c++ your_program.cpp {0}.o {7} (docs/AOT.md). {5} kernels.\n"
      "#pragma once\n\n"
      "#include <array>\n#include <cstddef>\n#include <cstdint>\n#include <cstdlib>\n#include <cstring>\n\n"
      "extern \"C\" int {6}(void* io, void* temp, const void** results);\n\n",
      name, plan.module, artifact.triple, artifact.cpu,
      artifact.features.empty() || artifact.features.size() > 200 ? "" : ", features " + artifact.features,
      plan.kernels.size(), artifact.entrySymbol, aotLinkFlags(artifact));
  for (const std::string& ns : namespaces) h += fmt::format("namespace {} {{\n", ns);
  if (!namespaces.empty()) h += "\n";
  h += fmt::format(
      "// Runs {1} on the calling thread. The instance owns its arguments and results (one block), and its "
      "temporaries\n"
      "// unless set_temp_buffer() supplies them. Thread-compatible: one instance per thread, any number of "
      "instances.\n"
      "// Nothing throws; a failed allocation makes Run() return false. Arrays lie row-major unless a layout is "
      "shown,\n// f16/bf16 as their bits.\n"
      "class {0} {{\n"
      " public:\n"
      "  static constexpr int kNumArgs = {2};\n"
      "  static constexpr int kNumResults = {3};\n"
      "  static constexpr std::array<size_t, kNumArgs> kArgSizes = {{{4}}};        // bytes\n"
      "  static constexpr std::array<size_t, kNumResults> kResultSizes = {{{5}}};  // bytes\n"
      "  static constexpr size_t kTempSize = {6};  // bytes of temporaries\n"
      "  static constexpr size_t kTempAlignment = 64;\n",
      name, plan.module, plan.parameters.size(), plan.outputs.size(), list(argSizes), list(resultSizes),
      artifact.tempBytes);
  for (size_t i = 0; i < plan.parameters.size(); ++i) {
    const Shape& shape = plan.parameters[i].shape;
    h +=
        fmt::format("  // argument {} {}: {}\n", i, plan.parameters[i].name, shape.toString(!hasRowMajorLayout(shape)));
    h += shapeArray(fmt::format("kArg{}Shape", i), plan.parameters[i].shape);
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const PlanOutput& output = plan.outputs[i];
    h += fmt::format(
        "  // result {} {}: {}{}\n", i, output.name, output.shape.toString(!hasRowMajorLayout(output.shape)),
        output.aliasesParameter ? fmt::format(" (the new value of argument {})", *output.aliasesParameter) : "");
    h += shapeArray(fmt::format("kResult{}Shape", i), output.shape);
  }
  h += fmt::format(
      "\n"
      "  {0}() noexcept : m_io(static_cast<unsigned char*>(std::aligned_alloc(64, kIoAllocation))) {{\n"
      "    if (m_io != nullptr) std::memset(m_io, 0, kIoAllocation);\n"
      "  }}\n"
      "  ~{0}() {{\n"
      "    std::free(m_io);\n"
      "    std::free(m_ownedTemp);\n"
      "  }}\n"
      "  {0}(const {0}&) = delete;\n"
      "  {0}& operator=(const {0}&) = delete;\n\n"
      "  // False when the argument and result block could not be allocated (every accessor then returns null).\n"
      "  bool ok() const noexcept {{ return m_io != nullptr; }}\n"
      "  // Temporaries in caller memory: kTempSize bytes aligned to kTempAlignment, alive while Run() runs; null to "
      "let\n"
      "  // the instance allocate them (at the first Run()).\n"
      "  void set_temp_buffer(void* buffer) noexcept {{ m_temp = buffer; }}\n\n"
      "  void* arg_data(int i) noexcept {{\n"
      "    return m_io != nullptr && i >= 0 && i < kNumArgs ? m_io + kArgOffsets[static_cast<size_t>(i)] : nullptr;\n"
      "  }}\n"
      "  size_t arg_size(int i) const noexcept {{ return i >= 0 && i < kNumArgs ? kArgSizes[static_cast<size_t>(i)] : "
      "0; }}\n"
      "  static const char* arg_name(int i) noexcept {{\n"
      "    constexpr const char* kNames[] = {{{1}nullptr}};\n"
      "    return i >= 0 && i < kNumArgs ? kNames[i] : nullptr;\n"
      "  }}\n"
      "  // Valid after a successful Run() until the next Run() or the instance's end; null before.\n"
      "  const void* result_data(int i) const noexcept {{\n"
      "    return i >= 0 && i < kNumResults ? m_results[i] : nullptr;\n"
      "  }}\n"
      "  size_t result_size(int i) const noexcept {{\n"
      "    return i >= 0 && i < kNumResults ? kResultSizes[static_cast<size_t>(i)] : 0;\n"
      "  }}\n"
      "  static const char* result_name(int i) noexcept {{\n"
      "    constexpr const char* kNames[] = {{{2}nullptr}};\n"
      "    return i >= 0 && i < kNumResults ? kNames[i] : nullptr;\n"
      "  }}\n",
      name, quotedArgs.empty() ? "" : list(quotedArgs) + ", ", quotedResults.empty() ? "" : list(quotedResults) + ", ");
  for (size_t i = 0; i < plan.parameters.size(); ++i) {
    const char* type = cppElementType(plan.parameters[i].shape.elementType());
    h += fmt::format("  {0}* arg_{1}_data() noexcept {{ return static_cast<{0}*>(arg_data({2})); }}\n", type,
                     argAccessors[i], i);
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const char* type = cppElementType(plan.outputs[i].shape.elementType());
    h += fmt::format(
        "  const {0}* result_{1}_data() const noexcept {{ return static_cast<const {0}*>(result_data({2})); }}\n", type,
        resultAccessors[i], i);
  }
  h += fmt::format(
      "\n"
      "  bool Run() noexcept {{\n"
      "    if (m_io == nullptr) return false;\n"
      "    void* temp = m_temp;\n"
      "    if (temp == nullptr && kTempSize > 0) {{\n"
      "      if (m_ownedTemp == nullptr) m_ownedTemp = std::aligned_alloc(64, (kTempSize + 63) / 64 * 64);\n"
      "      if (m_ownedTemp == nullptr) return false;\n"
      "      temp = m_ownedTemp;\n"
      "    }}\n"
      "    if (reinterpret_cast<uintptr_t>(temp) % kTempAlignment != 0) return false;\n"
      "    return {0}(m_io, temp, m_results) == 0;\n"
      "  }}\n\n"
      " private:\n"
      "  static constexpr size_t kIoAllocation = {1};\n"
      "  static constexpr std::array<size_t, kNumArgs> kArgOffsets = {{{2}}};\n"
      "  unsigned char* m_io = nullptr;\n"
      "  void* m_temp = nullptr;\n"
      "  void* m_ownedTemp = nullptr;\n"
      "  const void* m_results[kNumResults > 0 ? kNumResults : 1] = {{}};\n"
      "}};\n",
      artifact.entrySymbol, std::max<int64_t>(64, (artifact.ioBytes + 63) / 64 * 64), list(artifact.argOffsets));
  for (auto it = namespaces.rbegin(); it != namespaces.rend(); ++it) h += fmt::format("\n}}  // namespace {}", *it);
  if (!namespaces.empty()) h += "\n";
  return h;
}

}  // namespace fusionscope::core
