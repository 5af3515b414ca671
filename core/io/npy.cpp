#include "core/io/npy.h"

#include <array>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/base/file_util.h"

namespace fusionscope::core {
namespace {

static_assert(std::endian::native == std::endian::little, ".npy data is kept as little-endian bytes");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreambleV1 = 10;  // magic, 2 version bytes, uint16 header length
constexpr size_t kPreambleV2 = 12;  // magic, 2 version bytes, uint32 header length
constexpr size_t kAlignment = 64;
constexpr size_t kGrowthAxisMaxDigits = 21;  // numpy.lib.format.GROWTH_AXIS_MAX_DIGITS

struct DtypeInfo {
  PrimitiveType type;
  char kind;  // NumPy's kind character: b, i, u, f, c
  int bytes;
};

constexpr std::array kDtypes = {
    DtypeInfo{PrimitiveType::kPred, 'b', 1}, DtypeInfo{PrimitiveType::kS8, 'i', 1},
    DtypeInfo{PrimitiveType::kS16, 'i', 2},  DtypeInfo{PrimitiveType::kS32, 'i', 4},
    DtypeInfo{PrimitiveType::kS64, 'i', 8},  DtypeInfo{PrimitiveType::kU8, 'u', 1},
    DtypeInfo{PrimitiveType::kU16, 'u', 2},  DtypeInfo{PrimitiveType::kU32, 'u', 4},
    DtypeInfo{PrimitiveType::kU64, 'u', 8},  DtypeInfo{PrimitiveType::kF16, 'f', 2},
    DtypeInfo{PrimitiveType::kF32, 'f', 4},  DtypeInfo{PrimitiveType::kF64, 'f', 8},
    DtypeInfo{PrimitiveType::kC64, 'c', 8},  DtypeInfo{PrimitiveType::kC128, 'c', 16},
};

const DtypeInfo* findDtype(PrimitiveType type) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.type == type) return &info;
  }
  return nullptr;
}

Status error(std::string_view name, std::string_view what) {
  return Status::error(fmt::format("{}: error: {}", name, what));
}

// Maps a dtype string to a type. Byte order: '<' little, '|' not applicable (one-byte types), '=' native
// (little on every host we build for); '>' is refused because the data is kept as little-endian bytes.
StatusOr<PrimitiveType> parseDescr(std::string_view descr, std::string_view name) {
  auto unsupported = [&](std::string_view why) {
    return error(name, fmt::format("unsupported dtype '{}'{}", descr, why));
  };
  if (descr.size() < 3) return unsupported("");
  char order = descr[0];
  char kind = descr[1];
  int size = 0;
  for (char c : descr.substr(2)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || size > 1000) return unsupported("");
    size = size * 10 + (c - '0');
  }
  if (order == '>' && size > 1) return unsupported(" (big-endian)");
  if (order != '<' && order != '|' && order != '=' && order != '>') return unsupported("");
  for (const DtypeInfo& info : kDtypes) {
    if (info.kind == kind && info.bytes == size) return info.type;
  }
  return unsupported("");
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
      if (!consume(':')) return fail(fmt::format("expected ':' after '{}' in the header", *key));
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
        Status status = readShape(shape);
        if (!status.ok()) return status;
        haveShape = true;
      } else {
        return fail(fmt::format("unexpected key '{}' in the header", *key));
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

// Element count, or nullopt on overflow past what a byte size can hold.
std::optional<int64_t> checkedElementCount(const std::vector<int64_t>& dims, int elementBytes) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / elementBytes / d) return std::nullopt;
    count *= d;
  }
  return count;
}

std::string shapeText(const std::vector<int64_t>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

}  // namespace

int64_t NpyArray::elementCount() const {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

std::string_view npyDescr(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred: return "|b1";
    case PrimitiveType::kS8: return "|i1";
    case PrimitiveType::kS16: return "<i2";
    case PrimitiveType::kS32: return "<i4";
    case PrimitiveType::kS64: return "<i8";
    case PrimitiveType::kU8: return "|u1";
    case PrimitiveType::kU16: return "<u2";
    case PrimitiveType::kU32: return "<u4";
    case PrimitiveType::kU64: return "<u8";
    case PrimitiveType::kF16: return "<f2";
    case PrimitiveType::kF32: return "<f4";
    case PrimitiveType::kF64: return "<f8";
    case PrimitiveType::kC64: return "<c8";
    case PrimitiveType::kC128: return "<c16";
    default: return {};
  }
}

StatusOr<NpyArray> parseNpy(std::string_view bytes, std::string_view name) {
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
    return error(name, fmt::format("unsupported .npy format version {}.{}", major, minor));
  }
  if (bytes.size() - preamble < headerLength) {
    return error(name, fmt::format("header is {} bytes, file has only {} after the preamble", headerLength,
                                   bytes.size() - preamble));
  }
  // Version 1 and 2 headers are latin-1, version 3 UTF-8; the keys and values we accept are ASCII either way.
  std::string_view header = bytes.substr(preamble, headerLength);

  std::string descr;
  bool fortranOrder = false;
  NpyArray array;
  Status status = HeaderReader(header, name).parse(descr, fortranOrder, array.dims);
  if (!status.ok()) return status;
  StatusOr<PrimitiveType> type = parseDescr(descr, name);
  if (!type.ok()) return type.status();
  array.type = *type;
  if (fortranOrder) {
    return error(name, "fortran_order=True is not supported (save a C-order array, e.g. np.ascontiguousarray)");
  }
  int elementBytes = findDtype(array.type)->bytes;
  std::optional<int64_t> count = checkedElementCount(array.dims, elementBytes);
  if (!count) return error(name, fmt::format("shape {} is too large", shapeText(array.dims)));
  uint64_t expected = static_cast<uint64_t>(*count) * static_cast<uint64_t>(elementBytes);
  std::string_view data = bytes.substr(preamble + headerLength);
  if (data.size() != expected) {
    return error(name, fmt::format("data is {} bytes, header says {} (shape {}, dtype '{}')", data.size(), expected,
                                   shapeText(array.dims), descr));
  }
  array.bytes.assign(data);
  return array;
}

StatusOr<NpyArray> readNpy(const std::string& path) {
  StatusOr<std::string> content = readFile(path);
  if (!content.ok()) return content.status();
  return parseNpy(*content, path);
}

StatusOr<std::string> serializeNpy(const NpyArray& array, std::string_view name) {
  std::string_view descr = npyDescr(array.type);
  if (descr.empty()) {
    return error(name, fmt::format("element type {} cannot be stored in .npy", primitiveTypeName(array.type)));
  }
  int elementBytes = findDtype(array.type)->bytes;
  std::optional<int64_t> count = checkedElementCount(array.dims, elementBytes);
  if (!count) return error(name, fmt::format("shape {} is invalid or too large", shapeText(array.dims)));
  uint64_t expected = static_cast<uint64_t>(*count) * static_cast<uint64_t>(elementBytes);
  if (array.bytes.size() != expected) {
    return error(name, fmt::format("data is {} bytes, shape {} of {} needs {}", array.bytes.size(),
                                   shapeText(array.dims), primitiveTypeName(array.type), expected));
  }

  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shapeText(array.dims));
  // Like np.save: room for the first dimension to grow to 21 digits (so appending writers can rewrite the
  // header in place), then space padding and '\n' so that the data is 64-byte aligned. The output is
  // byte-for-byte what NumPy writes.
  if (!array.dims.empty()) dict.append(kGrowthAxisMaxDigits - fmt::formatted_size("{}", array.dims[0]), ' ');
  auto paddedLength = [&](size_t preamble) {
    size_t unpadded = preamble + dict.size() + 1;
    return dict.size() + 1 + (kAlignment - unpadded % kAlignment) % kAlignment;
  };
  bool version1 = paddedLength(kPreambleV1) <= std::numeric_limits<uint16_t>::max();
  size_t preamble = version1 ? kPreambleV1 : kPreambleV2;
  size_t headerLength = paddedLength(preamble);

  std::string out;
  out.reserve(preamble + headerLength + array.bytes.size());
  out += kMagic;
  out += static_cast<char>(version1 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < (version1 ? 2u : 4u); ++i) out += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  out += dict;
  out.append(headerLength - dict.size() - 1, ' ');
  out += '\n';
  out += array.bytes;
  return out;
}

Status writeNpy(const std::string& path, const NpyArray& array) {
  StatusOr<std::string> content = serializeNpy(array, path);
  if (!content.ok()) return content.status();
  return writeFileAtomic(path, *content);
}

}  // namespace fusionscope::core
