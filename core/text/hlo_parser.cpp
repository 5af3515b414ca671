#include "core/text/hlo_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/base/file_util.h"
#include "core/base/memory_limit.h"
#include "core/base/message_text.h"
#include "core/ir/shape_inference.h"
#include "core/text/attribute_text.h"
#include "core/text/hlo_parser_state.h"
#include "core/text/literal_text.h"
#include "core/text/text_cursor.h"

namespace fusionscope::core {
namespace text_internal {

bool Parser::fail(const char* at, std::string_view message) {
  if (m_error.empty()) {
    if (const char* comment = m_cursor.unterminatedComment()) {
      m_error = m_cursor.formatError(comment, "unterminated comment: '/*' has no closing '*/'");
    } else {
      m_error = m_cursor.formatError(at, message);
    }
  }
  return false;
}

void Parser::setTextPosition(HloInstruction& inst, const char* at) {
  if (!m_lineStart || at < m_lineStart) {
    m_lineStart = m_cursor.begin();
    m_line = 1;
  }
  for (const char* c = m_lineStart; c < at; ++c) {
    if (*c == '\n') {
      ++m_line;
      m_lineStart = c + 1;
    }
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  inst.setTextPosition(static_cast<int32_t>(std::min(m_line, kMax)),
                       static_cast<int32_t>(std::min<int64_t>(at - m_lineStart + 1, kMax)));
}

bool Parser::expect(char c, std::string_view context) {
  if (m_cursor.consume(c)) return true;
  return fail(m_cursor.missingTokenPosition(),
              fmt::format("expected '{}' {}, found {}", c, context, m_cursor.describeNext()));
}

bool Parser::parseModule() {
  std::string moduleName = "module";
  if (m_cursor.consumeKeyword("HloModule")) {
    const char* at = m_cursor.pos();
    std::string_view name = m_cursor.readName();
    // The name shares the header's line; without this `HloModule` alone would take `ENTRY` as its name.
    bool nextLine = std::find(at, name.data(), '\n') != name.data();
    if (name.empty() || name == "ENTRY" || nextLine) {
      m_cursor.setPos(name.data());
      if (nextLine || m_cursor.atEnd()) {
        return fail(
            at, fmt::format("expected a module name after 'HloModule', found end of {}", nextLine ? "line" : "input"));
      }
      return fail(name.data(),
                  fmt::format("expected a module name after 'HloModule', found {}", m_cursor.describeNext()));
    }
    moduleName = std::string(name);
    // Some dumps end the module name with ':' (e.g. `HloModule convolution.167:`).
    if (m_cursor.rawPeek() == ':') m_cursor.setPos(m_cursor.pos() + 1);
  }
  m_module = std::make_unique<HloModule>(moduleName);
  m_module->setSourceName(m_fileName);
  if (m_module && m_cursor.peek() == ',') {
    m_headerAt = m_cursor.pos();
    std::vector<std::pair<std::string, std::string>> header;
    if (!parseAttributeList(header)) return false;
    m_module->mutableHeaderAttributes() = std::move(header);
  }
  if (!parseHeaderTables()) return false;
  while (!m_cursor.atEnd()) {
    if (!parseComputation()) return false;
  }
  if (m_cursor.unterminatedComment()) return failHere("");
  if (m_module->computations().empty()) {
    return fail(m_cursor.endOfPreviousToken(m_cursor.end()), "no computations in module");
  }
  if (!m_module->entry()) {
    // Points at the last computation, the one XLA's own dumps mark as the entry.
    return fail(m_lastComputationAt, "no ENTRY computation: mark the computation the module runs with 'ENTRY'");
  }
  if (!resolveCalls()) return false;
  if (!inferMissingShapes()) return false;
  if (!checkEntryLayout()) return false;
  m_module->updateFusionComputationFlags();
  return true;
}

bool Parser::parseComputation() {
  m_cursor.skipSpace();
  const char* start = m_cursor.pos();
  m_lastComputationAt = start;
  m_suspect.reset();
  bool isEntry = m_cursor.consumeKeyword("ENTRY");
  m_cursor.consume('%');
  const char* nameAt = m_cursor.pos();
  std::string_view name = m_cursor.readName();
  if (name.empty()) {
    if (m_cursor.atEnd()) {
      return fail(m_cursor.endOfPreviousToken(nameAt),
                  isEntry ? "expected a computation after 'ENTRY'" : "expected a computation name, found end of input");
    }
    return fail(m_cursor.pos(),
                fmt::format("expected a computation name or 'ENTRY', found {}", m_cursor.describeNext()));
  }
  if (m_module->findComputation(name)) return fail(nameAt, fmt::format("duplicate computation name '{}'", name));
  if (m_cursor.peek() == '(' && !parseSignature()) return false;
  if (!m_cursor.consume('{') && !expect('{', fmt::format("to open the body of computation '{}'", name))) return false;

  auto computation = std::make_unique<HloComputation>(std::string(name));
  HloComputation* comp = computation.get();
  std::vector<PendingInstruction> pending;
  const char* rootAt = nullptr;
  while (!m_cursor.consume('}')) {
    if (m_cursor.atEnd()) {
      if (m_suspect) return failSuspect(name);
      return fail(m_cursor.endOfPreviousToken(m_cursor.end()),
                  fmt::format("unexpected end of input: computation '{}' is missing '}}'", name));
    }
    if (!parseInstruction(*comp, pending, rootAt)) return false;
  }
  if (pending.empty()) {
    return fail(m_cursor.pos() - 1, fmt::format("computation '{}' has no instructions", name));
  }
  if (!comp->root()) comp->setRoot(pending.back().instruction);
  if (!resolveOperands(*comp, pending)) return false;
  // `}, execution_thread="host"`: attributes of the computation itself, kept verbatim.
  if (m_cursor.peek() == ',' && !parseAttributeList(comp->mutableAttributes())) return false;

  HloComputation* added = m_module->addComputation(std::move(computation));
  if (isEntry) {
    if (m_module->entry()) {
      return fail(start,
                  fmt::format("second ENTRY computation '{}' (the first is '{}')", name, m_module->entry()->name()));
    }
    m_module->setEntry(added);
  }
  return true;
}

bool Parser::parseSignature() {
  if (!expect('(', "to open the computation signature")) return false;
  if (!m_cursor.consume(')')) {
    do {
      m_cursor.consume('%');
      const char* at = m_cursor.pos();
      if (m_cursor.readName().empty()) return fail(at, "expected a parameter name in the signature");
      if (!expect(':', "after a parameter name in the signature")) return false;
      if (!skipShape()) return false;
    } while (m_cursor.consume(','));
    if (!expect(')', "to close the computation signature")) return false;
  }
  m_cursor.skipSpace();
  if (!(m_cursor.consume('-') && m_cursor.rawPeek() == '>')) {
    return failHere("expected '->' and the result shape after the signature");
  }
  m_cursor.setPos(m_cursor.pos() + 1);
  return skipShape();
}

bool Parser::parseInstruction(HloComputation& comp, std::vector<PendingInstruction>& pending, const char*& rootAt) {
  m_cursor.skipSpace();
  const char* lineStart = m_cursor.pos();
  bool isRoot = m_cursor.consumeKeyword("ROOT");
  m_cursor.consume('%');
  const char* nameAt = m_cursor.pos();
  std::string_view name = m_cursor.readName();
  if (name.empty()) return fail(nameAt, fmt::format("expected an instruction name, found {}", m_cursor.describeNext()));
  // A computation header here means this computation's '}' is missing (or an attribute took it).
  if (name == "ENTRY" || m_cursor.peek() == '{' || m_cursor.peek() == '(') {
    if (m_suspect) return failSuspect(comp.name());
    return fail(lineStart, fmt::format("computation '{}' is missing '}}' before the next computation", comp.name()));
  }
  if (comp.findInstruction(name)) {
    return fail(nameAt, fmt::format("duplicate instruction name '{}' in computation '{}'", name, comp.name()));
  }
  if (!m_cursor.consume('=') && !expect('=', fmt::format("after instruction name '{}'", name))) return false;
  Shape shape;
  // XLA's shape-less form, `ROOT add = add(lhs, rhs)`: an opcode straight after '='; the shape is inferred once the
  // module's operands and called computations are known (inferMissingShapes).
  const bool shapeless = startsWithOpcode();
  if (!shapeless && !parseShape(shape)) return false;
  std::string_view opcodeText = m_cursor.readName();
  if (opcodeText.empty()) {
    return fail(m_cursor.missingTokenPosition(),
                fmt::format("expected an opcode after the shape, found {}", m_cursor.describeNext()));
  }
  HloOpcode opcode = parseOpcode(opcodeText);
  // An opcode we do not know is kept by its spelling (a newer XLA's op is drawn, not refused); a spelling longer than
  // any opcode is not one, and would otherwise reach every listing and message whole.
  constexpr size_t kLongestOpcodeSpelling = 64;
  if (opcode == HloOpcode::kUnknown && opcodeText.size() > kLongestOpcodeSpelling) {
    return fail(opcodeText.data(), fmt::format("expected an opcode, found '{}'", shortenedForMessage(opcodeText)));
  }
  auto owned = std::make_unique<HloInstruction>(std::string(name), opcode, std::move(shape));
  HloInstruction* inst = owned.get();
  if (opcode == HloOpcode::kUnknown) inst->setUnknownOpcodeSpelling(std::string(opcodeText));
  if (shapeless) {
    if (opcode == HloOpcode::kParameter || opcode == HloOpcode::kConstant) {
      return fail(opcodeText.data(), fmt::format("{} '{}' needs its shape: {} = f32[...] {}(...)", opcodeText, name,
                                                 name, opcodeText));
    }
    m_shapeless.push_back({inst, nameAt});
  }
  setTextPosition(*inst, nameAt);
  comp.addInstruction(std::move(owned));
  PendingInstruction entry{inst, {}, {}};
  if (m_cursor.rawPeek() != '(' && m_cursor.peek() != '(') {
    return expect('(', fmt::format("after opcode '{}'", opcodeText));
  }
  m_cursor.consume('(');
  bool ok = opcode == HloOpcode::kParameter  ? parseParameterNumber(*inst)
            : opcode == HloOpcode::kConstant ? parseConstant(*inst)
                                             : parseOperands(entry.operands);
  if (!ok) return false;
  if (!parseInstructionAttributes(*inst, entry)) return false;
  if (isRoot) {
    if (rootAt) return fail(lineStart, fmt::format("second ROOT in computation '{}'", comp.name()));
    rootAt = lineStart;
    comp.setRoot(inst);
  }
  pending.push_back(std::move(entry));
  return true;
}

bool Parser::startsWithOpcode() {
  m_cursor.skipSpace();
  const char* save = m_cursor.pos();
  std::string_view word = m_cursor.readName();
  const bool opcode = !word.empty() && m_cursor.rawPeek() == '(' && parseOpcode(word) != HloOpcode::kUnknown;
  m_cursor.setPos(save);
  return opcode;
}

bool Parser::inferMissingShapes() {
  // In dependency order: an instruction is inferred once its operands and the roots of the computations it calls
  // have shapes. What is left when nothing more can be inferred waits on itself (a cycle the verifier reports) or on
  // an op whose shape cannot be derived; the first such instruction is reported.
  auto known = [](const HloInstruction* inst) { return inst->shape().elementType() != PrimitiveType::kInvalid; };
  std::vector<ShapelessInstruction> waiting = std::move(m_shapeless);
  while (!waiting.empty()) {
    std::vector<ShapelessInstruction> next;
    for (const ShapelessInstruction& entry : waiting) {
      const HloInstruction& inst = *entry.instruction;
      bool ready = std::all_of(inst.operands().begin(), inst.operands().end(), known);
      for (const CalledComputationRef& ref : inst.calledComputationRefs()) {
        for (const HloComputation* called : ref.computations) {
          ready = ready && (called == nullptr || called->root() == nullptr || known(called->root()));
        }
      }
      if (!ready) {
        next.push_back(entry);
        continue;
      }
      StatusOr<Shape> shape = inferShape(inst);
      if (!shape.ok()) {
        return fail(entry.at, fmt::format("cannot infer the shape of '{}': {}", inst.name(), shape.message()));
      }
      entry.instruction->mutableShape() = std::move(*shape);
    }
    if (next.size() == waiting.size()) {
      return fail(next.front().at, fmt::format("cannot infer the shape of '{}': it depends on itself or on an "
                                               "instruction whose shape cannot be inferred",
                                               next.front().instruction->name()));
    }
    waiting = std::move(next);
  }
  return true;
}

bool Parser::parseParameterNumber(HloInstruction& inst) {
  m_cursor.skipSpace();
  const char* at = m_cursor.pos();
  int64_t n = 0;
  if (!m_cursor.readInt(n)) {
    return fail(at, fmt::format("expected a parameter number, e.g. parameter(0), found {}", m_cursor.describeNext()));
  }
  if (n < 0) return fail(at, fmt::format("negative parameter number {}", n));
  inst.setParameterNumber(n);
  return expect(')', "after the parameter number");
}

bool Parser::parseOperands(std::vector<OperandRef>& operands) {
  if (m_cursor.consume(')')) return true;
  do {
    m_cursor.skipSpace();
    // An operand may carry its shape: `f32[2]{0} %x` or `(f32[], s32[]) %t`.
    const char* save = m_cursor.pos();
    if (m_cursor.rawPeek() == '(') {
      if (!skipShape()) return false;
    } else {
      std::string_view word = m_cursor.readName();
      if (!(m_cursor.rawPeek() == '[' && parsePrimitiveType(word) != PrimitiveType::kInvalid)) {
        m_cursor.setPos(save);
      } else {
        m_cursor.setPos(save);
        if (!skipShape()) return false;
      }
    }
    m_cursor.consume('%');
    const char* at = m_cursor.pos();
    std::string_view name = m_cursor.readName();
    if (name.empty()) return fail(at, fmt::format("expected an operand name, found {}", m_cursor.describeNext()));
    operands.push_back({name, at});
  } while (m_cursor.consume(','));
  return expect(')', "after the operand list");
}

bool Parser::parseConstant(HloInstruction& inst) {
  Literal literal;
  if (AttributeResult error = readLiteral(m_cursor, inst.shape(), literal)) return fail(error->at, error->message);
  inst.setLiteral(std::move(literal));
  return expect(')', "after the constant literal");
}

bool Parser::resolveOperands(HloComputation& comp, std::vector<PendingInstruction>& pending) {
  for (PendingInstruction& entry : pending) {
    for (const OperandRef& ref : entry.operands) {
      HloInstruction* operand = comp.findInstruction(ref.name);
      if (!operand) {
        return fail(ref.at, fmt::format("unknown operand '{}' in computation '{}'", ref.name, comp.name()));
      }
      entry.instruction->appendOperand(operand);
    }
    for (const OperandRef& ref : entry.controlPredecessors) {
      HloInstruction* pred = comp.findInstruction(ref.name);
      if (!pred) {
        return fail(ref.at, fmt::format("unknown control predecessor '{}' in computation '{}'", ref.name, comp.name()));
      }
      pred->addControlDependencyTo(entry.instruction);
    }
  }
  return true;
}

bool Parser::resolveCalls() {
  for (PendingCall& call : m_pendingCalls) {
    CalledComputationRef& ref = call.instruction->mutableCalledComputationRefs()[call.refIndex];
    for (const OperandRef& name : call.names) {
      HloComputation* callee = m_module->findComputation(name.name);
      if (!callee) {
        return fail(name.at, fmt::format("unknown computation '{}' in '{}' of '{}'", name.name, ref.key,
                                         call.instruction->name()));
      }
      if (callee == call.instruction->parent()) {
        return fail(name.at, fmt::format("computation '{}' calls itself through '{}'", name.name, ref.key));
      }
      ref.computations.push_back(callee);
    }
  }
  return rejectCallCycles();
}

// A computation that reaches itself through calls of any length (a calls b, b calls a) would make inlining,
// evaluation and every walk over the call graph endless; the parser refuses it at the call that closes the cycle.
// Iterative depth-first search: a call graph may be deep.
bool Parser::rejectCallCycles() {
  struct Edge {
    const HloComputation* callee;
    const OperandRef* at;
    std::string_view key;
  };
  std::unordered_map<const HloComputation*, std::vector<Edge>> edges;
  for (const PendingCall& call : m_pendingCalls) {
    const CalledComputationRef& ref = call.instruction->calledComputationRefs()[call.refIndex];
    for (size_t i = 0; i < ref.computations.size() && i < call.names.size(); ++i) {
      edges[call.instruction->parent()].push_back({ref.computations[i], &call.names[i], ref.key});
    }
  }
  enum class Mark { kNew, kOnPath, kDone };
  std::unordered_map<const HloComputation*, Mark> mark;
  for (const auto& start : m_module->computations()) {
    if (mark[start.get()] != Mark::kNew) continue;
    std::vector<std::pair<const HloComputation*, size_t>> stack = {{start.get(), 0}};
    mark[start.get()] = Mark::kOnPath;
    while (!stack.empty()) {
      auto& [computation, next] = stack.back();
      const std::vector<Edge>& out = edges[computation];
      if (next == out.size()) {
        mark[computation] = Mark::kDone;
        stack.pop_back();
        continue;
      }
      const Edge& edge = out[next++];
      Mark& calleeMark = mark[edge.callee];
      if (calleeMark == Mark::kDone) continue;
      if (calleeMark == Mark::kOnPath) {
        std::string path;
        bool onCycle = false;
        for (const auto& [frame, unused] : stack) {
          onCycle = onCycle || frame == edge.callee;
          if (onCycle) path += fmt::format("'{}' calls ", frame->name());
        }
        return fail(edge.at->at, fmt::format("call cycle: {}'{}' again (through '{}'); a computation may not reach "
                                             "itself through calls",
                                             path, edge.callee->name(), edge.key));
      }
      calleeMark = Mark::kOnPath;
      stack.emplace_back(edge.callee, 0);
    }
  }
  return true;
}

}  // namespace text_internal

using text_internal::Parser;

StatusOr<std::unique_ptr<HloModule>> parseHloModule(std::string_view text, std::string_view fileName) {
  Parser parser(text, fileName);
  return parser.run();
}

StatusOr<std::unique_ptr<HloModule>> parseHloModuleFile(const std::string& path) {
  // A parsed module takes 7 (a generated 100k module) to 13 (3M instructions with metadata) times its text, plus the
  // text: refuse what cannot fit
  // before reading it, with what it would need.
  constexpr double kBytesPerTextByte = 16;
  std::error_code sizeError;
  const auto size = static_cast<double>(std::filesystem::file_size(path, sizeError));
  if (const double limit = memoryLimitBytes(); !sizeError && limit > 0 && size * kBytesPerTextByte > limit) {
    return Status::error(
        fmt::format("{}: error: a {} module needs about {} of memory once parsed, more than the {} "
                    "this process may use (physical memory or ulimit -v)",
                    path, humanBytes(size), humanBytes(size * kBytesPerTextByte), humanBytes(limit)));
  }
  StatusOr<std::string> text = readFile(path);
  if (!text.ok()) return text.status();
  return parseHloModule(*text, path);
}

}  // namespace fusionscope::core
