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
#include "core/text/attribute_text.h"
#include "core/text/literal_text.h"
#include "core/text/text_cursor.h"

namespace fusionscope::core {
namespace {

// Deeper tuple shapes do not occur in real modules; the limit keeps a hostile file from overflowing the stack.
constexpr int kMaxTupleNesting = 256;

// Attribute keys whose values name computations of the module.
bool isComputationKey(std::string_view key) {
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
  bool fail(const char* at, std::string_view message) {
    if (m_error.empty()) {
      if (const char* comment = m_cursor.unterminatedComment()) {
        m_error = m_cursor.formatError(comment, "unterminated comment: '/*' has no closing '*/'");
      } else {
        m_error = m_cursor.formatError(at, message);
      }
    }
    return false;
  }
  bool failHere(std::string_view message) { return fail(m_cursor.pos(), message); }

  // Line and column of `at`, counted on from the previous call (instructions come in text order, so the whole
  // file is scanned once rather than once per instruction).
  void setTextPosition(HloInstruction& inst, const char* at) {
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

  bool expect(char c, std::string_view context) {
    if (m_cursor.consume(c)) return true;
    return fail(m_cursor.missingTokenPosition(),
                fmt::format("expected '{}' {}, found {}", c, context, m_cursor.describeNext()));
  }

  bool parseModule() {
    std::string moduleName = "module";
    if (m_cursor.consumeKeyword("HloModule")) {
      const char* at = m_cursor.pos();
      std::string_view name = m_cursor.readName();
      // The name shares the header's line; without this `HloModule` alone would take `ENTRY` as its name.
      bool nextLine = std::find(at, name.data(), '\n') != name.data();
      if (name.empty() || name == "ENTRY" || nextLine) {
        m_cursor.setPos(name.data());
        if (nextLine || m_cursor.atEnd()) {
          return fail(at, fmt::format("expected a module name after 'HloModule', found end of {}",
                                      nextLine ? "line" : "input"));
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
    if (!checkEntryLayout()) return false;
    m_module->updateFusionComputationFlags();
    return true;
  }

  // `entry_computation_layout={(P0, P1, ...)->RESULT}` must describe the ENTRY: as many parameters, each with the
  // shape of that parameter, and the root's shape (layouts are not compared).
  bool checkEntryLayout() {
    if (!m_headerAt || !m_module->findHeaderAttribute("entry_computation_layout")) return true;
    constexpr std::string_view kKey = "entry_computation_layout=";
    const char* lineEnd = std::find(m_headerAt, m_cursor.end(), '\n');
    const char* key = std::search(m_headerAt, lineEnd, kKey.begin(), kKey.end());
    if (key == lineEnd) return true;  // written across lines: kept verbatim, not checked
    m_cursor.setPos(key + kKey.size());
    if (!expect('{', "to open entry_computation_layout") || !expect('(', "to open the parameter shapes")) {
      return false;
    }
    const HloComputation& entry = *m_module->entry();
    const std::vector<HloInstruction*> params = entry.parameters();
    size_t count = 0;
    if (!m_cursor.consume(')')) {
      do {
        const char* at = (m_cursor.skipSpace(), m_cursor.pos());
        Shape shape;
        if (!parseShape(shape)) return false;
        if (count >= params.size()) {
          return fail(at, fmt::format("entry_computation_layout lists more parameters than the {} of ENTRY {}",
                                      params.size(), entry.name()));
        }
        if (params[count] && !params[count]->shape().compatible(shape)) {
          return fail(at, fmt::format("entry_computation_layout says parameter {} is {}, ENTRY {} has {}", count,
                                      shape.toString(false), entry.name(), params[count]->shape().toString(false)));
        }
        ++count;
      } while (m_cursor.consume(','));
      if (!expect(')', "to close the parameter shapes")) return false;
    }
    if (count != params.size()) {
      return fail(key, fmt::format("entry_computation_layout lists {} parameter(s), ENTRY {} has {}", count,
                                   entry.name(), params.size()));
    }
    m_cursor.skipSpace();
    if (!(m_cursor.consume('-') && m_cursor.rawPeek() == '>')) return failHere("expected '->' and the result shape");
    m_cursor.setPos(m_cursor.pos() + 1);
    const char* at = (m_cursor.skipSpace(), m_cursor.pos());
    Shape result;
    if (!parseShape(result)) return false;
    if (entry.root() && !entry.root()->shape().compatible(result)) {
      return fail(at, fmt::format("entry_computation_layout says the result is {}, ENTRY {} returns {}",
                                  result.toString(false), entry.name(), entry.root()->shape().toString(false)));
    }
    return true;
  }

  // Blocks between the header and the first computation: a name alone on its line, then rows `ID TEXT`, one per
  // line (XLA's stack-frame index: FileNames, FunctionNames, FileLocations, StackFrames). Any such block is kept
  // verbatim, known or not; a computation never looks like one (its name is followed by `{` or `(`).
  bool parseHeaderTables() {
    auto isBlank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
    const char* end = m_cursor.end();
    std::vector<HeaderTable> tables;
    while (true) {
      m_cursor.skipSpace();
      const char* name = m_cursor.pos();
      const char* p = name;
      while (p < end && TextCursor::isNameChar(*p)) ++p;
      if (p == name) break;
      const char* afterName = p;
      while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
      if (p < end && *p != '\n') break;
      while (p < end && isBlank(*p)) ++p;
      if (p == end || !isDigit(*p)) break;
      HeaderTable table;
      table.name.assign(name, afterName);
      while (p < end && isDigit(*p)) {
        const char* row = p;
        const char* eol = std::find(p, end, '\n');
        int64_t id = 0;
        auto [idEnd, error] = std::from_chars(row, eol, id);
        if (error != std::errc()) return fail(row, fmt::format("row id out of range in block '{}'", table.name));
        if (idEnd < eol && *idEnd != ' ' && *idEnd != '\t' && *idEnd != '\r') {
          return fail(idEnd, fmt::format("expected a space after the row id in block '{}'", table.name));
        }
        const char* text = idEnd;
        while (text < eol && (*text == ' ' || *text == '\t')) ++text;
        const char* textEnd = eol;
        while (textEnd > text && (textEnd[-1] == ' ' || textEnd[-1] == '\t' || textEnd[-1] == '\r')) --textEnd;
        table.rows.emplace_back(id, std::string(text, textEnd));
        p = eol;
        while (p < end && isBlank(*p)) ++p;
      }
      m_cursor.setPos(p);
      tables.push_back(std::move(table));
    }
    m_module->setHeaderTables(std::move(tables));
    return true;
  }

  // `, key=value, key=value` after the module header or a computation's '}' (instruction attributes are
  // dispatched by key instead).
  bool parseAttributeList(std::vector<std::pair<std::string, std::string>>& out) {
    while (m_cursor.consume(',')) {
      const char* at = m_cursor.pos();
      std::string_view key;
      std::string_view value;
      if (!parseKeyValue(key, value)) return false;
      for (const auto& [k, v] : out) {
        if (k == key) return fail(at, fmt::format("duplicate attribute '{}'", key));
      }
      out.emplace_back(key, value);
    }
    return true;
  }

  bool parseKeyValue(std::string_view& key, std::string_view& value) {
    m_cursor.skipSpace();
    key = m_cursor.readName();
    if (key.empty()) {
      return fail(m_cursor.missingTokenPosition(),
                  fmt::format("expected an attribute name after ',', found {}", m_cursor.describeNext()));
    }
    if (!m_cursor.consume('=')) return failHere(fmt::format("expected '=' after attribute name '{}'", key));
    return readRawValue(key, value);
  }

  // The value text of an attribute: a quoted string, or everything up to ',' / whitespace / a closing
  // bracket at nesting depth 0, with brackets balanced and strings skipped.
  bool readRawValue(std::string_view key, std::string_view& value) {
    m_cursor.skipSpace();
    const char* start = m_cursor.pos();
    const char* p = start;
    const char* end = m_cursor.end();
    std::string closers;  // SSO: no allocation below 16 levels of nesting
    // custom-call's `literal=` is a shape, one space, then the value: `literal=s32[2]{0} {1, 2}`.
    bool shapeThenValue = key == "literal";
    while (p < end) {
      char c = *p;
      if (c == '"') {
        const char* q = p + 1;
        while (q < end && *q != '"') q += (*q == '\\' && q + 1 < end) ? 2 : 1;
        if (q >= end) return fail(p, fmt::format("unterminated string in attribute '{}'", key));
        p = q + 1;
        if (closers.empty()) break;
        continue;
      }
      if (c == '{' || c == '(' || c == '[') {
        closers.push_back(c == '{' ? '}' : c == '(' ? ')' : ']');
      } else if (c == '}' || c == ')' || c == ']') {
        if (closers.empty()) break;
        if (c != closers.back()) {
          return fail(p, fmt::format("mismatched '{}' in attribute '{}' (expected '{}')", c, key, closers.back()));
        }
        // A closing bracket at depth 0 does not end the value: iota device lists go on, `[2,4]<=[4,2]T(1,0)`.
        closers.pop_back();
      } else if (closers.empty() && (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r')) {
        if (c == ' ' && shapeThenValue && p > start) {
          shapeThenValue = false;
          while (p < end && *p == ' ') ++p;
          continue;
        }
        break;
      }
      ++p;
    }
    if (!closers.empty()) {
      return fail(start, fmt::format("unterminated attribute '{}': missing '{}'", key, closers.back()));
    }
    if (p == start) return fail(start, fmt::format("expected a value for attribute '{}'", key));
    value = std::string_view(start, static_cast<size_t>(p - start));
    noteSuspectValue(key, value);
    m_cursor.setPos(p);
    return true;
  }

  bool parseShape(Shape& shape, int depth = 0) {
    m_cursor.skipSpace();
    const char* at = m_cursor.pos();
    if (depth > kMaxTupleNesting) {
      return fail(at, fmt::format("tuple shape nested deeper than {} levels", kMaxTupleNesting));
    }
    if (m_cursor.consume('(')) {
      std::vector<Shape> elements;
      if (!m_cursor.consume(')')) {
        do {
          Shape element;
          if (!parseShape(element, depth + 1)) return false;
          elements.push_back(std::move(element));
        } while (m_cursor.consume(','));
        if (!expect(')', "to close tuple shape")) return false;
      }
      shape = Shape::tuple(std::move(elements));
      return true;
    }
    std::string_view typeName = m_cursor.readName();
    if (typeName.empty()) {
      return fail(m_cursor.missingTokenPosition(),
                  fmt::format("expected a shape such as f32[2,3], found {}", m_cursor.describeNext()));
    }
    PrimitiveType type = parsePrimitiveType(typeName);
    if (type == PrimitiveType::kInvalid) return fail(at, fmt::format("unknown element type '{}'", typeName));
    if (m_cursor.rawPeek() != '[') {
      const char* after = m_cursor.pos();
      return fail(after, fmt::format("expected '[' right after element type '{}', found {}", typeName,
                                     m_cursor.describeNext()));
    }
    m_cursor.setPos(m_cursor.pos() + 1);
    std::vector<int64_t> dims;
    std::vector<bool> dynamic;
    if (!m_cursor.consume(']')) {
      do {
        m_cursor.skipSpace();
        const char* dimAt = m_cursor.pos();
        bool isDynamic = false;
        int64_t d = 0;
        if (m_cursor.consume('?')) {
          d = -1;
        } else {
          if (m_cursor.consume('<')) {
            if (!expect('=', "in dynamic dimension '<=N'")) return false;
            isDynamic = true;
          }
          m_cursor.skipSpace();
          const char sign = m_cursor.rawPeek();
          if (!m_cursor.readInt(d)) {
            return fail(dimAt, fmt::format("expected a dimension size, found {}", m_cursor.describeNext()));
          }
          if (d < 0) return fail(dimAt, fmt::format("negative dimension size {}", d));
          // `-0` and `+4` read as integers but are no dimension size XLA writes.
          if (sign == '-' || sign == '+') return fail(dimAt, "a dimension size is written as digits, without a sign");
        }
        dims.push_back(d);
        if (isDynamic) {
          dynamic.resize(dims.size());
          dynamic.back() = true;
        }
      } while (m_cursor.consume(','));
      if (!expect(']', "to close dimensions")) return false;
    }
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (d > 0 && __builtin_mul_overflow(elements, d, &elements)) {
        return fail(at, fmt::format("shape {}[{}] has more than 2^63 elements", typeName, fmt::join(dims, ",")));
      }
    }
    // Sizes in bytes must fit too, with room to add a few (buffer plans sum them).
    if (const int64_t width = (primitiveTypeBitWidth(type) + 7) / 8; width > 1 && elements > (int64_t{1} << 60) / width) {
      return fail(at, fmt::format("shape {}[{}] has more than 2^60 bytes", typeName, fmt::join(dims, ",")));
    }
    shape = Shape(type, std::move(dims));
    for (size_t i = 0; i < dynamic.size(); ++i) {
      if (dynamic[i]) shape.setDynamicDimension(static_cast<int>(i), true);
    }
    if (m_cursor.rawPeek() == '{') return parseLayout(shape);
    return true;
  }

  // Operand and signature shapes are informational (the defining instruction owns the shape): check the
  // common forms `f32[2,3]{1,0}`, `f32[]`, `(s32[], f32[2])` without building a Shape, and let parseShape
  // handle anything else (dynamic dimensions, layout annotations) and report errors.
  bool skipShape() {
    m_cursor.skipSpace();
    const char* start = m_cursor.pos();
    if (skipSimpleShape()) return true;
    m_cursor.setPos(start);
    Shape ignored;
    return parseShape(ignored);
  }

  bool skipSimpleShape(int depth = 0) {
    const char* p = m_cursor.pos();
    const char* end = m_cursor.end();
    if (depth > kMaxTupleNesting) return false;  // parseShape reports it
    if (p < end && *p == '(') {
      m_cursor.setPos(p + 1);
      if (m_cursor.consume(')')) return true;
      do {
        m_cursor.skipSpace();
        if (!skipSimpleShape(depth + 1)) return false;
      } while (m_cursor.consume(','));
      return m_cursor.consume(')');
    }
    const char* typeStart = p;
    while (p < end && TextCursor::isNameChar(*p)) ++p;
    if (p == typeStart || p >= end || *p != '[') return false;
    if (parsePrimitiveType(std::string_view(typeStart, static_cast<size_t>(p - typeStart))) ==
        PrimitiveType::kInvalid) {
      return false;
    }
    ++p;  // '['
    int rank = 0;
    if (p < end && *p != ']') {
      while (true) {
        if (p >= end || *p < '0' || *p > '9') return false;
        while (p < end && *p >= '0' && *p <= '9') ++p;
        ++rank;
        if (p < end && *p == ',') {
          ++p;
          continue;
        }
        break;
      }
    }
    if (p >= end || *p != ']') return false;
    ++p;
    if (p < end && *p == '{') {
      ++p;
      int layoutRank = 0;
      if (p < end && *p != '}') {
        while (true) {
          if (p >= end || *p < '0' || *p > '9') return false;
          while (p < end && *p >= '0' && *p <= '9') ++p;
          ++layoutRank;
          if (p < end && *p == ',') {
            ++p;
            continue;
          }
          break;
        }
      }
      if (p >= end || *p != '}' || (layoutRank != 0 && layoutRank != rank)) return false;
      ++p;
    }
    m_cursor.setPos(p);
    return true;
  }

  bool parseLayout(Shape& shape) {
    const char* at = m_cursor.pos();
    m_cursor.setPos(at + 1);
    Layout layout;
    if (m_cursor.peek() != '}' && m_cursor.peek() != ':') {
      do {
        int64_t d = 0;
        const char* dimAt = m_cursor.pos();
        if (!m_cursor.readInt(d)) return fail(dimAt, "expected a dimension number in layout");
        layout.minorToMajor.push_back(d);
      } while (m_cursor.consume(','));
    }
    if (m_cursor.consume(':')) {
      const char* start = m_cursor.pos();
      const char* p = start;
      int depth = 0;
      while (p < m_cursor.end() && !(depth == 0 && *p == '}')) {
        if (*p == '(') ++depth;
        if (*p == ')') --depth;
        if (*p == '\n') break;
        ++p;
      }
      layout.annotations.assign(start, p);
      m_cursor.setPos(p);
    }
    if (!expect('}', "to close layout")) return false;
    if (shape.rank() != static_cast<int>(layout.minorToMajor.size()) && !layout.minorToMajor.empty()) {
      return fail(at, fmt::format("layout {{{}}} has {} dimension(s) but the shape has rank {}",
                                  fmt::join(layout.minorToMajor, ","), layout.minorToMajor.size(), shape.rank()));
    }
    // minor_to_major must name every dimension once: anything else has no meaning for the evaluator, codegen
    // or the printer.
    std::vector<bool> seen(layout.minorToMajor.size(), false);
    for (int64_t d : layout.minorToMajor) {
      if (d < 0 || d >= static_cast<int64_t>(seen.size()) || seen[static_cast<size_t>(d)]) {
        return fail(at, fmt::format("layout {{{}}} is not a permutation of the dimensions 0..{}",
                                    fmt::join(layout.minorToMajor, ","), shape.rank() - 1));
      }
      seen[static_cast<size_t>(d)] = true;
    }
    shape.setLayout(std::move(layout));
    return true;
  }

  bool parseComputation() {
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
        return fail(m_cursor.endOfPreviousToken(nameAt), isEntry ? "expected a computation after 'ENTRY'"
                                                                 : "expected a computation name, found end of input");
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

  // `(p0: f32[2], p1: s32[]) -> f32[2]`: checked for syntax; the parameters themselves define the shapes.
  bool parseSignature() {
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

  bool parseInstruction(HloComputation& comp, std::vector<PendingInstruction>& pending, const char*& rootAt) {
    m_cursor.skipSpace();
    const char* lineStart = m_cursor.pos();
    bool isRoot = m_cursor.consumeKeyword("ROOT");
    m_cursor.consume('%');
    const char* nameAt = m_cursor.pos();
    std::string_view name = m_cursor.readName();
    if (name.empty())
      return fail(nameAt, fmt::format("expected an instruction name, found {}", m_cursor.describeNext()));
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
    if (!parseShape(shape)) return false;
    std::string_view opcodeText = m_cursor.readName();
    if (opcodeText.empty()) {
      return fail(m_cursor.missingTokenPosition(),
                  fmt::format("expected an opcode after the shape, found {}", m_cursor.describeNext()));
    }
    HloOpcode opcode = parseOpcode(opcodeText);
    auto owned = std::make_unique<HloInstruction>(std::string(name), opcode, std::move(shape));
    HloInstruction* inst = owned.get();
    if (opcode == HloOpcode::kUnknown) inst->setUnknownOpcodeSpelling(std::string(opcodeText));
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

  bool parseParameterNumber(HloInstruction& inst) {
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

  bool parseOperands(std::vector<OperandRef>& operands) {
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

  bool parseConstant(HloInstruction& inst) {
    Literal literal;
    if (AttributeResult error = readLiteral(m_cursor, inst.shape(), literal)) return fail(error->at, error->message);
    inst.setLiteral(std::move(literal));
    return expect(')', "after the constant literal");
  }

  bool parseInstructionAttributes(HloInstruction& inst, PendingInstruction& entry) {
    // Instructions have a handful of attributes: a linear scan beats a hash set allocated per line.
    std::vector<std::string_view>& seen = m_seenKeys;
    seen.clear();
    InstructionAttributes& attrs = inst.mutableAttributes();
    while (m_cursor.consume(',')) {
      m_cursor.skipSpace();
      const char* keyAt = m_cursor.pos();
      std::string_view key;
      std::string_view value;
      if (!parseKeyValue(key, value)) return false;
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        return fail(keyAt, fmt::format("duplicate attribute '{}'", key));
      }
      seen.push_back(key);
      if (!applyAttribute(inst, attrs, entry, key, value)) return false;
    }
    return true;
  }

  bool check(const AttributeResult& result, std::string_view key) {
    if (!result) return true;
    return fail(result->at, fmt::format("invalid '{}': {}", key, result->message));
  }

  bool applyAttribute(HloInstruction& inst, InstructionAttributes& attrs, PendingInstruction& entry,
                      std::string_view key, std::string_view value) {
    HloOpcode op = inst.opcode();
    if (key == "dimensions") return check(parseIntList(value, attrs.dimensions.emplace()), key);
    if (key == "slice") return check(parseSlice(value, attrs.slice.emplace()), key);
    if (key == "padding") return check(parsePadding(value, attrs.padding.emplace()), key);
    if (key == "window") return check(parseWindow(value, attrs.window.emplace()), key);
    if (key == "metadata") return check(parseMetadata(value, attrs.metadata.emplace()), key);
    if (key == "custom_call_target") return check(parseQuoted(value, attrs.customCallTarget.emplace()), key);
    if (key == "iota_dimension") return check(parseInt(value, attrs.iotaDimension.emplace()), key);
    if (key == "index" && op == HloOpcode::kGetTupleElement)
      return check(parseInt(value, attrs.tupleIndex.emplace()), key);
    if (key == "lhs_batch_dims" || key == "rhs_batch_dims" || key == "lhs_contracting_dims" ||
        key == "rhs_contracting_dims") {
      DotDimensionNumbers& dot = attrs.dot ? *attrs.dot : attrs.dot.emplace();
      std::vector<int64_t>& target = key == "lhs_batch_dims"         ? dot.lhsBatch
                                     : key == "rhs_batch_dims"       ? dot.rhsBatch
                                     : key == "lhs_contracting_dims" ? dot.lhsContracting
                                                                     : dot.rhsContracting;
      return check(parseIntList(value, target), key);
    }
    if (key == "direction") {
      auto direction = parseComparisonDirection(value);
      if (!direction) {
        return fail(value.data(),
                    fmt::format("invalid comparison direction '{}' (expected EQ, NE, GE, GT, LE or LT)", value));
      }
      attrs.direction = *direction;
      return true;
    }
    if (key == "kind" && op == HloOpcode::kFusion) {
      auto kind = parseFusionKind(value);
      if (!kind) {
        return fail(value.data(),
                    fmt::format("invalid fusion kind '{}' (expected kLoop, kInput, kOutput or kCustom)", value));
      }
      attrs.fusionKind = *kind;
      return true;
    }
    if (key == "backend_config") return (attrs.backendConfig = std::string(value)), true;
    if (key == "sharding") return (attrs.sharding = std::string(value)), true;
    if (key == "frontend_attributes") return (attrs.frontendAttributes = std::string(value)), true;
    if (key == "control-predecessors") {
      std::vector<std::string_view> names;
      bool braced = false;
      if (!check(parseNameList(value, names, braced), key)) return false;
      for (std::string_view n : names) entry.controlPredecessors.push_back({n, n.data()});
      return true;
    }
    if (isComputationKey(key) && !(key == "select" && op != HloOpcode::kSelectAndScatter) &&
        !(key == "scatter" && op != HloOpcode::kSelectAndScatter)) {
      std::vector<std::string_view> names;
      bool braced = false;
      if (!check(parseNameList(value, names, braced), key)) return false;
      auto& refs = inst.mutableCalledComputationRefs();
      refs.push_back({std::string(key), {}, braced});
      PendingCall call{&inst, refs.size() - 1, {}};
      for (std::string_view n : names) call.names.push_back({n, n.data()});
      m_pendingCalls.push_back(std::move(call));
      return true;
    }
    attrs.raw.emplace_back(key, value);
    return true;
  }

  bool resolveOperands(HloComputation& comp, std::vector<PendingInstruction>& pending) {
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
          return fail(ref.at,
                      fmt::format("unknown control predecessor '{}' in computation '{}'", ref.name, comp.name()));
        }
        pred->addControlDependencyTo(entry.instruction);
      }
    }
    return true;
  }

  bool resolveCalls() {
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
    return true;
  }

  // A braced attribute value that runs onto a later line and ends with a '}' that starts its line is most
  // likely unterminated and swallowed the computation's '}'. Kept per computation so that the missing '}'
  // noticed later is blamed on the attribute rather than on the end of input.
  struct SuspectValue {
    std::string key;
    const char* at;
  };
  void noteSuspectValue(std::string_view key, std::string_view value) {
    if (value.front() != '{' || value.back() != '}') return;
    const char* lineStart = value.data() + value.size() - 1;
    while (lineStart > value.data() && (lineStart[-1] == ' ' || lineStart[-1] == '\t' || lineStart[-1] == '\r')) {
      --lineStart;
    }
    if (lineStart > value.data() && lineStart[-1] == '\n') m_suspect = SuspectValue{std::string(key), value.data()};
  }
  bool failSuspect(std::string_view computation) {
    return fail(m_suspect->at, fmt::format("unterminated attribute '{}': missing '}}' (the '}}' meant to close "
                                           "computation '{}' closes it instead)",
                                           m_suspect->key, computation));
  }

  TextCursor m_cursor;
  std::string m_fileName;
  const char* m_headerAt = nullptr;  // the header's attributes, for checkEntryLayout
  const char* m_lineStart = nullptr;  // setTextPosition's scan: start of line m_line
  int64_t m_line = 1;
  const char* m_lastComputationAt = nullptr;
  std::optional<SuspectValue> m_suspect;
  std::string m_error;
  std::unique_ptr<HloModule> m_module;
  std::vector<std::string_view> m_seenKeys;  // scratch for parseInstructionAttributes
  std::vector<PendingCall> m_pendingCalls;
};

}  // namespace

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
    return Status::error(fmt::format("{}: error: a {} module needs about {} of memory once parsed, more than the {} "
                                     "this process may use (physical memory or ulimit -v)",
                                     path, humanBytes(size), humanBytes(size * kBytesPerTextByte), humanBytes(limit)));
  }
  StatusOr<std::string> text = readFile(path);
  if (!text.ok()) return text.status();
  return parseHloModule(*text, path);
}

}  // namespace fusionscope::core
