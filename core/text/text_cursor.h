#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fusionscope::core {

// A read position over HLO text that skips whitespace and comments (`/* ... */`, `// ...`) and turns a
// pointer into `FILE:LINE:COL` plus the offending line with a caret. Positions are plain pointers into the
// text, which must outlive the cursor. Line/column are only computed when an error is formatted, so the
// hot path is a pointer bump.
class TextCursor {
 public:
  TextCursor(std::string_view text, std::string_view fileName);

  const char* pos() const { return m_pos; }
  void setPos(const char* pos) { m_pos = pos; }
  const char* begin() const { return m_begin; }
  const char* end() const { return m_end; }
  bool atEnd() {
    skipSpace();
    return m_pos >= m_end;
  }
  // The current character after skipping space, or '\0' at the end.
  char peek() {
    skipSpace();
    return m_pos < m_end ? *m_pos : '\0';
  }
  // The character right at the position (no skipping), or '\0' at the end.
  char rawPeek() const { return m_pos < m_end ? *m_pos : '\0'; }

  void skipSpace() {
    // Fast path inline (most calls find a non-space character at once); comments go out of line.
    while (m_pos < m_end && (*m_pos == ' ' || *m_pos == '\n' || *m_pos == '\t' || *m_pos == '\r')) ++m_pos;
    if (m_pos < m_end && *m_pos == '/') skipSpaceAndComments();
  }
  // Skips space, then consumes `c` if it is next.
  bool consume(char c) {
    skipSpace();
    if (m_pos < m_end && *m_pos == c) {
      ++m_pos;
      return true;
    }
    return false;
  }
  // Skips space, then consumes `word` if it is next and not followed by a name character.
  bool consumeKeyword(std::string_view word);
  // Skips space, then reads a name: [A-Za-z0-9_.-]+ (XLA instruction/computation names). Empty if none.
  std::string_view readName() {
    skipSpace();
    const char* start = m_pos;
    while (m_pos < m_end && isNameChar(*m_pos)) ++m_pos;
    return {start, static_cast<size_t>(m_pos - start)};
  }
  // Skips space, then reads a word: [A-Za-z0-9_]+ (attribute keys). Empty if none.
  std::string_view readWord();
  // Reads an optionally signed decimal integer; false (position unchanged) if there is none or it overflows.
  bool readInt(int64_t& value);
  // Skips space, then reads a `"..."` string, unescaping \n, \t and \<c>; false (position unchanged) if not at a
  // well-formed string.
  bool readQuoted(std::string& out);

  // Start of an unterminated `/*` comment, if skipSpace met one.
  const char* unterminatedComment() const { return m_unterminatedComment; }

  // For messages about a missing token. Just after the last non-space character before `at`:
  const char* endOfPreviousToken(const char* at) const;
  // Where to report a token missing at the position: right after the previous token when what follows is on a
  // later line or absent (as compilers report a missing ';'), else at the unexpected token.
  const char* missingTokenPosition();
  // The next token for "found ..." in messages: 'name', 'c' (one character) or "end of input".
  std::string describeNext();

  std::string_view fileName() const { return m_fileName; }
  // 1-based line and column of `at`.
  void lineColumn(const char* at, int64_t& line, int64_t& column) const;
  // `FILE:LINE:COL: error: MESSAGE\n<line>\n<spaces>^`
  std::string formatError(const char* at, std::string_view message) const;

  static bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  }

 private:
  void skipSpaceAndComments();
  const char* m_begin;
  const char* m_end;
  const char* m_pos;
  const char* m_unterminatedComment = nullptr;
  std::string m_fileName;
};

}  // namespace fusionscope::core
