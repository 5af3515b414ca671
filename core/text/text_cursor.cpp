#include "core/text/text_cursor.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "core/base/message_text.h"

namespace fusionscope::core {

TextCursor::TextCursor(std::string_view text, std::string_view fileName)
    : m_begin(text.data()), m_end(text.data() + text.size()), m_pos(text.data()), m_fileName(fileName) {}

void TextCursor::skipSpaceAndComments() {
  while (m_pos < m_end) {
    char c = *m_pos;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++m_pos;
    } else if (c == '/' && m_pos + 1 < m_end && m_pos[1] == '*') {
      const char* close = nullptr;
      for (const char* p = m_pos + 2; p + 1 < m_end; ++p) {
        if (p[0] == '*' && p[1] == '/') {
          close = p;
          break;
        }
      }
      if (!close) {
        if (!m_unterminatedComment) m_unterminatedComment = m_pos;
        m_pos = m_end;
        return;
      }
      m_pos = close + 2;
    } else if (c == '/' && m_pos + 1 < m_end && m_pos[1] == '/') {
      while (m_pos < m_end && *m_pos != '\n') ++m_pos;
    } else {
      return;
    }
  }
}

bool TextCursor::consumeKeyword(std::string_view word) {
  skipSpace();
  if (static_cast<size_t>(m_end - m_pos) < word.size() || std::string_view(m_pos, word.size()) != word) return false;
  const char* after = m_pos + word.size();
  if (after < m_end && isNameChar(*after)) return false;
  m_pos = after;
  return true;
}

bool TextCursor::readInt(int64_t& value) {
  skipSpace();
  const char* start = m_pos;
  if (start < m_end && *start == '+') ++start;
  auto [ptr, ec] = std::from_chars(start, m_end, value);
  if (ec != std::errc()) return false;
  m_pos = ptr;
  return true;
}

std::string_view TextCursor::readWord() {
  skipSpace();
  const char* start = m_pos;
  while (m_pos < m_end && (std::isalnum(static_cast<unsigned char>(*m_pos)) || *m_pos == '_')) ++m_pos;
  return {start, static_cast<size_t>(m_pos - start)};
}

bool TextCursor::readQuoted(std::string& out) {
  skipSpace();
  if (m_pos >= m_end || *m_pos != '"') return false;
  const char* p = m_pos + 1;
  out.clear();
  // Fast path: no escapes, one copy.
  const char* q = p;
  while (q < m_end && *q != '"' && *q != '\\') ++q;
  if (q < m_end && *q == '"') {
    out.assign(p, q);
    m_pos = q + 1;
    return true;
  }
  while (p < m_end && *p != '"') {
    if (*p == '\\' && p + 1 < m_end) {
      ++p;
      switch (*p) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        default: out += *p; break;
      }
    } else {
      out += *p;
    }
    ++p;
  }
  if (p >= m_end) return false;
  m_pos = p + 1;
  return true;
}

const char* TextCursor::endOfPreviousToken(const char* at) const {
  while (at > m_begin && (at[-1] == ' ' || at[-1] == '\n' || at[-1] == '\t' || at[-1] == '\r')) --at;
  return at;
}

const char* TextCursor::missingTokenPosition() {
  skipSpace();
  const char* found = m_pos;
  const char* previous = endOfPreviousToken(found);
  return atEnd() || std::find(previous, found, '\n') != found ? previous : found;
}

std::string TextCursor::describeNext() {
  char c = peek();
  if (c == '\0') return "end of input";
  if (!isNameChar(c)) return fmt::format("'{}'", c);
  TextCursor probe = *this;
  return fmt::format("'{}'", probe.readName());
}

void TextCursor::lineColumn(const char* at, int64_t& line, int64_t& column) const {
  at = std::clamp(at, m_begin, m_end);
  line = 1 + std::count(m_begin, at, '\n');
  const char* lineStart = at;
  while (lineStart > m_begin && lineStart[-1] != '\n') --lineStart;
  column = 1 + (at - lineStart);
}

std::string TextCursor::formatError(const char* at, std::string_view message) const {
  at = std::clamp(at, m_begin, m_end);
  int64_t line = 0;
  int64_t column = 0;
  lineColumn(at, line, column);
  const char* lineStart = at - (column - 1);
  const char* lineEnd = std::find(at, m_end, '\n');
  std::string_view lineText(lineStart, static_cast<size_t>(lineEnd - lineStart));
  if (!lineText.empty() && lineText.back() == '\r') lineText.remove_suffix(1);
  // Very long lines (a 40-operand tuple) are cut around the column so the caret stays readable.
  size_t caret = static_cast<size_t>(column - 1);
  constexpr size_t kWindow = 160;
  std::string prefix;
  if (lineText.size() > kWindow && caret > kWindow / 2) {
    size_t cut = caret - kWindow / 2;
    lineText.remove_prefix(cut);
    caret -= cut;
    prefix = "...";
    caret += prefix.size();
  }
  if (lineText.size() > kWindow) lineText = lineText.substr(0, kWindow);
  // Tabs in the line keep their width under the caret.
  std::string pad;
  std::string_view shown = lineText;
  for (size_t i = 0; i + prefix.size() < caret && i < shown.size(); ++i) pad += shown[i] == '\t' ? '\t' : ' ';
  pad.append(prefix.size(), ' ');
  return fmt::format("{}:{}:{}: error: {}\n{}{}\n{}^", m_fileName, line, column, withLongWordsShortened(message),
                     prefix, lineText, pad);
}

}  // namespace fusionscope::core
