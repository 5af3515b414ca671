#include "core/base/npy_format.h"

#include <bit>
#include <cctype>
#include <limits>
#include <optional>

namespace fusionscope {
namespace {

static_assert(std::endian::native == std::endian::little, ".npy data is kept as little-endian bytes");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreambleV1 = 10;  // magic, 2 version bytes, uint16 header length
constexpr size_t kPreambleV2 = 12;  // magic, 2 version bytes, uint32 header length
constexpr size_t kAlignment = 64;
constexpr size_t kGrowthAxisMaxDigits = 21;  // numpy.lib.format.GROWTH_AXIS_MAX_DIGITS

Status error(std::string_view name, std::string_view what) {
  std::string message(name);
  message += ": error: ";
  message += what;
  return Status::error(std::move(message));
}

std::string quoted(std::string_view text) {
  std::string out(1, '\'');  // appended, not `"'" + string`: GCC 12's -O3 -Wrestrict false alarm
  out.append(text).push_back('\'');
  return out;
}

// "(3,)" for one dimension, "(2, 3)" otherwise, "()" for a scalar: Python's tuple spelling, as NumPy writes it.
std::string shapeText(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(dims[i]);
  }
  if (dims.size() == 1) out += ',';
  return out + ")";
}

// A tiny reader for the Python dict literal in the header, e.g.
// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`. It accepts what NumPy's own
// `ast.literal_eval` would for the three keys NumPy writes: strings, True/False and tuples of integers.
class HeaderReader {
 public:
  HeaderReader(std::string_view text, std::string_view name) : m_text(text), m_name(name) {}

  Status parse(std::string& descr, bool& fortranOrder, std::vector<int64_t>& shape) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    if (!consume('{')) return fail("header does not start with '{'");
    while (true) {
      skipSpace();
      if (consume('}')) break;
      std::optional<std::string> key = readString();
      if (!key) return fail("expected a quoted key in the header");
      if (!consume(':')) return fail("expected ':' after " + quoted(*key) + " in the header");
      if (*key == "descr") {
        std::optional<std::string> value = readString();
        // A list here is a structured dtype such as [('a', '<f4'), ('b', '<i4')].
        if (!value) return fail("unsupported dtype (structured or not a string)");
        descr = *value;
        haveDescr = true;
      } else if (*key == "fortran_order") {
        std::optional<bool> value = readBool();
        if (!value) return fail("fortran_order is not True or False");
        fortranOrder = *value;
        haveOrder = true;
      } else if (*key == "shape") {
        FS_RETURN_IF_ERROR(readShape(shape));
        haveShape = true;
      } else {
        return fail("unexpected key " + quoted(*key) + " in the header");
      }
      skipSpace();
      if (consume('}')) break;
      if (!consume(',')) return fail("expected ',' or '}' in the header");
    }
    skipSpace();
    if (m_pos != m_text.size()) return fail("unexpected text after the header dictionary");
    if (!haveDescr) return fail("header has no 'descr'");
    if (!haveOrder) return fail("header has no 'fortran_order'");
    if (!haveShape) return fail("header has no 'shape'");
    return okStatus();
  }

 private:
  Status fail(std::string_view what) const { return error(m_name, what); }

  void skipSpace() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
  }
  bool consume(char c) {
    skipSpace();
    if (m_pos < m_text.size() && m_text[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    skipSpace();
    if (m_text.substr(m_pos, word.size()) != word) return false;
    m_pos += word.size();
    return true;
  }
  std::optional<std::string> readString() {
    skipSpace();
    if (m_pos >= m_text.size() || (m_text[m_pos] != '\'' && m_text[m_pos] != '"')) return std::nullopt;
    char quote = m_text[m_pos++];
    size_t end = m_text.find(quote, m_pos);
    if (end == std::string_view::npos) return std::nullopt;
    std::string value(m_text.substr(m_pos, end - m_pos));
    m_pos = end + 1;
    return value;
  }
  std::optional<bool> readBool() {
    if (consumeWord("True")) return true;
    if (consumeWord("False")) return false;
    return std::nullopt;
  }
  Status readShape(std::vector<int64_t>& shape) {
    shape.clear();
    if (!consume('(')) return fail("shape is not a tuple");
    while (true) {
      if (consume(')')) return okStatus();
      skipSpace();
      size_t start = m_pos;
      int64_t value = 0;
      while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos]))) {
        if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) return fail("shape dimension is too large");
        value = value * 10 + (m_text[m_pos++] - '0');
      }
      if (m_pos == start) return fail("shape holds something other than non-negative integers");
      if (m_pos < m_text.size() && m_text[m_pos] == 'L') ++m_pos;  // Python 2 long literals, e.g. (3L,)
      shape.push_back(value);
      if (consume(')')) return okStatus();
      if (!consume(',')) return fail("expected ',' or ')' in the shape");
    }
  }

  std::string_view m_text;
  std::string_view m_name;
  size_t m_pos = 0;
};

uint32_t readLittle(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}

// Byte size of `dims` elements of `elementBytes` each, or nullopt when negative or past what a size can hold.
std::optional<uint64_t> checkedByteSize(const std::vector<int64_t>& dims, int elementBytes) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / elementBytes / d) return std::nullopt;
    count *= d;
  }
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(elementBytes);
}

// Byte order: '<' little, '|' not applicable (one-byte types), '=' native (little on every host we build for);
// '>' is refused for multi-byte types because the data is kept as little-endian bytes.
Status checkDescr(std::string_view descr, std::string_view name) {
  int bytes = npyDescrBytes(descr);
  if (bytes < 0) return error(name, "unsupported dtype " + quoted(descr));
  if (descr[0] == '>' && bytes > 1) return error(name, "unsupported dtype " + quoted(descr) + " (big-endian)");
  return okStatus();
}

}  // namespace

int npyDescrBytes(std::string_view descr) {
  if (descr.size() < 3 || descr.size() > 6) return -1;
  if (descr[0] != '<' && descr[0] != '|' && descr[0] != '=' && descr[0] != '>') return -1;
  if (!std::isalpha(static_cast<unsigned char>(descr[1]))) return -1;
  int size = 0;
  for (char c : descr.substr(2)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    size = size * 10 + (c - '0');
  }
  return size > 0 ? size : -1;
}

StatusOr<NpyFile> decodeNpyFile(std::string_view bytes, std::string_view name) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    return error(name, "not a .npy file (no \\x93NUMPY magic)");
  }
  if (bytes.size() < kPreambleV1) return error(name, "truncated .npy preamble");
  int major = static_cast<uint8_t>(bytes[6]);
  int minor = static_cast<uint8_t>(bytes[7]);
  size_t preamble = 0;
  size_t headerLength = 0;
  if (major == 1) {
    preamble = kPreambleV1;
    headerLength = readLittle(bytes, 8, 2);
  } else if (major == 2 || major == 3) {
    if (bytes.size() < kPreambleV2) return error(name, "truncated .npy preamble");
    preamble = kPreambleV2;
    headerLength = readLittle(bytes, 8, 4);
  } else {
    return error(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  }
  if (bytes.size() - preamble < headerLength) {
    return error(name, "header is " + std::to_string(headerLength) + " bytes, file has only " +
                           std::to_string(bytes.size() - preamble) + " after the preamble");
  }
  // Version 1 and 2 headers are latin-1, version 3 UTF-8; the keys and values we accept are ASCII either way.
  std::string_view header = bytes.substr(preamble, headerLength);

  NpyFile file;
  bool fortranOrder = false;
  FS_RETURN_IF_ERROR(HeaderReader(header, name).parse(file.descr, fortranOrder, file.dims));
  FS_RETURN_IF_ERROR(checkDescr(file.descr, name));
  if (fortranOrder) {
    return error(name, "fortran_order=True is not supported (save a C-order array, e.g. np.ascontiguousarray)");
  }
  std::optional<uint64_t> expected = checkedByteSize(file.dims, npyDescrBytes(file.descr));
  if (!expected) return error(name, "shape " + shapeText(file.dims) + " is too large");
  std::string_view data = bytes.substr(preamble + headerLength);
  if (data.size() != *expected) {
    return error(name, "data is " + std::to_string(data.size()) + " bytes, header says " + std::to_string(*expected) +
                           " (shape " + shapeText(file.dims) + ", dtype " + quoted(file.descr) + ")");
  }
  file.data.assign(data);
  return file;
}

StatusOr<std::string> encodeNpyFile(const NpyFile& file, std::string_view name) {
  FS_RETURN_IF_ERROR(checkDescr(file.descr, name));
  std::optional<uint64_t> expected = checkedByteSize(file.dims, npyDescrBytes(file.descr));
  if (!expected) return error(name, "shape " + shapeText(file.dims) + " is invalid or too large");
  if (file.data.size() != *expected) {
    return error(name, "data is " + std::to_string(file.data.size()) + " bytes, shape " + shapeText(file.dims) +
                           " of " + quoted(file.descr) + " needs " + std::to_string(*expected));
  }

  std::string dict =
      "{'descr': " + quoted(file.descr) + ", 'fortran_order': False, 'shape': " + shapeText(file.dims) + ", }";
  // Like np.save: room for the first dimension to grow to 21 digits (so appending writers can rewrite the
  // header in place), then space padding and '\n' so that the data is 64-byte aligned. The output is
  // byte-for-byte what NumPy writes.
  if (!file.dims.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(file.dims[0]).size(), ' ');
  auto paddedLength = [&](size_t preamble) {
    size_t unpadded = preamble + dict.size() + 1;
    return dict.size() + 1 + (kAlignment - unpadded % kAlignment) % kAlignment;
  };
  bool version1 = paddedLength(kPreambleV1) <= std::numeric_limits<uint16_t>::max();
  size_t preamble = version1 ? kPreambleV1 : kPreambleV2;
  size_t headerLength = paddedLength(preamble);

  std::string out;
  out.reserve(preamble + headerLength + file.data.size());
  out += kMagic;
  out += static_cast<char>(version1 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < (version1 ? 2u : 4u); ++i) out += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  out += dict;
  out.append(headerLength - dict.size() - 1, ' ');
  out += '\n';
  out += file.data;
  return out;
}

}  // namespace fusionscope
