#pragma once

// The HLO text parser's state machine (internal to core/text; hlo_parser.h is the interface): hlo_parser.cpp
// parses modules, computations and instructions, hlo_parser_shapes.cpp shapes and layouts,
// hlo_parser_attributes.cpp the module header and instruction attributes.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/base/status.h"
#include "core/ir/hlo_module.h"
#include "core/text/attribute_text.h"
#include "core/text/text_cursor.h"

namespace fusionscope::core::text_internal {

// Deeper tuple shapes do not occur in real modules; the limit keeps a hostile file from overflowing the stack.
constexpr int kMaxTupleNesting = 256;

// Attribute keys whose values name computations of the module.
inline bool isComputationKey(std::string_view key) {
  return key == "to_apply" || key == "calls" || key == "condition" || key == "body" || key == "branch_computations" ||
         key == "true_computation" || key == "false_computation" || key == "select" || key == "scatter" ||
         key == "called_computations";
}

struct OperandRef {
  std::string_view name;
  const char* at;
};

struct PendingInstruction {
  HloInstruction* instruction;
  std::vector<OperandRef> operands;
  std::vector<OperandRef> controlPredecessors;
};

// An instruction written without its shape, and where its name is (errors point there).
struct ShapelessInstruction {
  HloInstruction* instruction;
  const char* at;
};

struct PendingCall {
  HloInstruction* instruction;
  size_t refIndex;
  std::vector<OperandRef> names;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view fileName) : m_cursor(text, fileName), m_fileName(fileName) {}

  StatusOr<std::unique_ptr<HloModule>> run() {
    if (!parseModule()) return Status::error(m_error);
    return std::move(m_module);
  }

 private:
  // Records the first error and returns false so callers can `return fail(...)`.
  bool fail(const char* at, std::string_view message);
  bool failHere(std::string_view message) { return fail(m_cursor.pos(), message); }

  // Line and column of `at`, counted on from the previous call (instructions come in text order, so the whole
  // file is scanned once rather than once per instruction).
  void setTextPosition(HloInstruction& inst, const char* at);

  bool expect(char c, std::string_view context);

  bool parseModule();

  // `entry_computation_layout={(P0, P1, ...)->RESULT}` must describe the ENTRY: as many parameters, each with the
  // shape of that parameter, and the root's shape (layouts are not compared).
  bool checkEntryLayout();

  // Blocks between the header and the first computation: a name alone on its line, then rows `ID TEXT`, one per
  // line (XLA's stack-frame index: FileNames, FunctionNames, FileLocations, StackFrames). Any such block is kept
  // verbatim, known or not; a computation never looks like one (its name is followed by `{` or `(`).
  bool parseHeaderTables();

  // `, key=value, key=value` after the module header or a computation's '}' (instruction attributes are
  // dispatched by key instead).
  bool parseAttributeList(std::vector<std::pair<std::string, std::string>>& out);

  bool parseKeyValue(std::string_view& key, std::string_view& value);

  // The value text of an attribute: a quoted string, or everything up to ',' / whitespace / a closing
  // bracket at nesting depth 0, with brackets balanced and strings skipped.
  bool readRawValue(std::string_view key, std::string_view& value);

  bool parseShape(Shape& shape, int depth = 0);

  // Operand and signature shapes are informational (the defining instruction owns the shape): check the
  // common forms `f32[2,3]{1,0}`, `f32[]`, `(s32[], f32[2])` without building a Shape, and let parseShape
  // handle anything else (dynamic dimensions, layout annotations) and report errors.
  bool skipShape();

  bool skipSimpleShape(int depth = 0);

  bool parseLayout(Shape& shape);

  bool parseComputation();

  // `(p0: f32[2], p1: s32[]) -> f32[2]`: checked for syntax; the parameters themselves define the shapes.
  bool parseSignature();

  bool parseInstruction(HloComputation& comp, std::vector<PendingInstruction>& pending, const char*& rootAt);

  // Whether the next token is an opcode directly followed by '(' (the shape-less form); consumes nothing.
  bool startsWithOpcode();
  // Shapes of the shape-less instructions, once operands and calls are resolved (core/ir/shape_inference.h).
  bool inferMissingShapes();
  bool parseParameterNumber(HloInstruction& inst);

  bool parseOperands(std::vector<OperandRef>& operands);

  bool parseConstant(HloInstruction& inst);

  bool parseInstructionAttributes(HloInstruction& inst, PendingInstruction& entry);

  bool check(const AttributeResult& result, std::string_view key);

  bool applyAttribute(HloInstruction& inst, InstructionAttributes& attrs, PendingInstruction& entry,
                      std::string_view key, std::string_view value);

  bool resolveOperands(HloComputation& comp, std::vector<PendingInstruction>& pending);

  bool resolveCalls();
  bool rejectCallCycles();

  // A braced attribute value that runs onto a later line and ends with a '}' that starts its line is most
  // likely unterminated and swallowed the computation's '}'. Kept per computation so that the missing '}'
  // noticed later is blamed on the attribute rather than on the end of input.
  struct SuspectValue {
    std::string key;
    const char* at;
  };
  void noteSuspectValue(std::string_view key, std::string_view value);
  bool failSuspect(std::string_view computation);

  std::vector<ShapelessInstruction> m_shapeless;
  TextCursor m_cursor;
  std::string m_fileName;
  const char* m_headerAt = nullptr;   // the header's attributes, for checkEntryLayout
  const char* m_lineStart = nullptr;  // setTextPosition's scan: start of line m_line
  int64_t m_line = 1;
  const char* m_lastComputationAt = nullptr;
  std::optional<SuspectValue> m_suspect;
  std::string m_error;
  std::unique_ptr<HloModule> m_module;
  std::vector<std::string_view> m_seenKeys;  // scratch for parseInstructionAttributes
  std::vector<PendingCall> m_pendingCalls;
};

}  // namespace fusionscope::core::text_internal
