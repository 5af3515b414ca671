#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "core/base/memory_limit.h"
#include "core/text/hlo_parser_state.h"
#include "core/text/literal_text.h"

namespace fusionscope::core::text_internal {

bool Parser::checkEntryLayout() {
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
    return fail(key, fmt::format("entry_computation_layout lists {} parameter(s), ENTRY {} has {}", count, entry.name(),
                                 params.size()));
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

bool Parser::parseHeaderTables() {
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

bool Parser::parseAttributeList(std::vector<std::pair<std::string, std::string>>& out) {
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

bool Parser::parseKeyValue(std::string_view& key, std::string_view& value) {
  m_cursor.skipSpace();
  key = m_cursor.readName();
  if (key.empty()) {
    return fail(m_cursor.missingTokenPosition(),
                fmt::format("expected an attribute name after ',', found {}", m_cursor.describeNext()));
  }
  if (!m_cursor.consume('=')) return failHere(fmt::format("expected '=' after attribute name '{}'", key));
  return readRawValue(key, value);
}

bool Parser::readRawValue(std::string_view key, std::string_view& value) {
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

bool Parser::parseInstructionAttributes(HloInstruction& inst, PendingInstruction& entry) {
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

bool Parser::check(const AttributeResult& result, std::string_view key) {
  if (!result) return true;
  return fail(result->at, fmt::format("invalid '{}': {}", key, result->message));
}

bool Parser::applyAttribute(HloInstruction& inst, InstructionAttributes& attrs, PendingInstruction& entry,
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

void Parser::noteSuspectValue(std::string_view key, std::string_view value) {
  if (value.front() != '{' || value.back() != '}') return;
  const char* lineStart = value.data() + value.size() - 1;
  while (lineStart > value.data() && (lineStart[-1] == ' ' || lineStart[-1] == '\t' || lineStart[-1] == '\r')) {
    --lineStart;
  }
  if (lineStart > value.data() && lineStart[-1] == '\n') m_suspect = SuspectValue{std::string(key), value.data()};
}

bool Parser::failSuspect(std::string_view computation) {
  return fail(m_suspect->at, fmt::format("unterminated attribute '{}': missing '}}' (the '}}' meant to close "
                                         "computation '{}' closes it instead)",
                                         m_suspect->key, computation));
}

}  // namespace fusionscope::core::text_internal
