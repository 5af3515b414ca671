#include "core/ir/shape.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fusionscope::core {

std::string dimensionsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}
namespace {

struct TypeInfo {
  PrimitiveType type;
  std::string_view name;
  int bits;
};

constexpr std::array kTypes = {
    TypeInfo{PrimitiveType::kPred, "pred", 8},
    TypeInfo{PrimitiveType::kS2, "s2", 2},
    TypeInfo{PrimitiveType::kS4, "s4", 4},
    TypeInfo{PrimitiveType::kS8, "s8", 8},
    TypeInfo{PrimitiveType::kS16, "s16", 16},
    TypeInfo{PrimitiveType::kS32, "s32", 32},
    TypeInfo{PrimitiveType::kS64, "s64", 64},
    TypeInfo{PrimitiveType::kU2, "u2", 2},
    TypeInfo{PrimitiveType::kU4, "u4", 4},
    TypeInfo{PrimitiveType::kU8, "u8", 8},
    TypeInfo{PrimitiveType::kU16, "u16", 16},
    TypeInfo{PrimitiveType::kU32, "u32", 32},
    TypeInfo{PrimitiveType::kU64, "u64", 64},
    TypeInfo{PrimitiveType::kF16, "f16", 16},
    TypeInfo{PrimitiveType::kBF16, "bf16", 16},
    TypeInfo{PrimitiveType::kF32, "f32", 32},
    TypeInfo{PrimitiveType::kF64, "f64", 64},
    TypeInfo{PrimitiveType::kF8E5M2, "f8e5m2", 8},
    TypeInfo{PrimitiveType::kF8E4M3, "f8e4m3", 8},
    TypeInfo{PrimitiveType::kF8E4M3FN, "f8e4m3fn", 8},
    TypeInfo{PrimitiveType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 8},
    TypeInfo{PrimitiveType::kF8E5M2FNUZ, "f8e5m2fnuz", 8},
    TypeInfo{PrimitiveType::kF8E4M3FNUZ, "f8e4m3fnuz", 8},
    TypeInfo{PrimitiveType::kF8E3M4, "f8e3m4", 8},
    TypeInfo{PrimitiveType::kF4E2M1FN, "f4e2m1fn", 4},
    TypeInfo{PrimitiveType::kF8E8M0FNU, "f8e8m0fnu", 8},
    TypeInfo{PrimitiveType::kC64, "c64", 64},
    TypeInfo{PrimitiveType::kC128, "c128", 128},
    TypeInfo{PrimitiveType::kToken, "token", 0},
    TypeInfo{PrimitiveType::kOpaque, "opaque", 0},
};

}  // namespace

std::string_view primitiveTypeName(PrimitiveType type) {
  if (type == PrimitiveType::kTuple) return "tuple";
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return info.name;
  }
  return "invalid";
}

PrimitiveType parsePrimitiveType(std::string_view name) {
  // Called for every shape in the text: test the first character and length before comparing bytes.
  if (name.empty()) return PrimitiveType::kInvalid;
  for (const TypeInfo& info : kTypes) {
    if (info.name.size() == name.size() && info.name[0] == name[0] && info.name == name) return info.type;
  }
  return PrimitiveType::kInvalid;
}

int primitiveTypeBitWidth(PrimitiveType type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == type) return info.bits;
  }
  return 0;
}

bool isFloatingPoint(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E4M3:
    case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E4M3B11FNUZ:
    case PrimitiveType::kF8E5M2FNUZ:
    case PrimitiveType::kF8E4M3FNUZ:
    case PrimitiveType::kF8E3M4:
    case PrimitiveType::kF4E2M1FN:
    case PrimitiveType::kF8E8M0FNU: return true;
    default: return false;
  }
}

bool isComplex(PrimitiveType type) {
  return type == PrimitiveType::kC64 || type == PrimitiveType::kC128;
}

bool isSignedInteger(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kS2:
    case PrimitiveType::kS4:
    case PrimitiveType::kS8:
    case PrimitiveType::kS16:
    case PrimitiveType::kS32:
    case PrimitiveType::kS64: return true;
    default: return false;
  }
}

bool isUnsignedInteger(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kU2:
    case PrimitiveType::kU4:
    case PrimitiveType::kU8:
    case PrimitiveType::kU16:
    case PrimitiveType::kU32:
    case PrimitiveType::kU64: return true;
    default: return false;
  }
}

Shape::Shape(PrimitiveType type, std::vector<int64_t> dims) : m_type(type), m_dims(std::move(dims)) {
  for (int64_t d : m_dims) m_count *= d < 0 ? 0 : d;
}

Shape Shape::tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.m_type = PrimitiveType::kTuple;
  shape.m_elements = std::move(elements);
  return shape;
}

void Shape::setDynamicDimension(int i, bool dynamic) {
  if (m_dynamic.empty()) {
    if (!dynamic) return;
    m_dynamic.assign(m_dims.size(), false);
  }
  m_dynamic[static_cast<size_t>(i)] = dynamic;
  m_hasDynamic = std::find(m_dynamic.begin(), m_dynamic.end(), true) != m_dynamic.end();
}

void Shape::clearLayout() {
  m_layout.reset();
  for (Shape& element : m_elements) element.clearLayout();
}

int64_t Shape::byteSize() const {
  if (isTuple()) {
    int64_t total = 0;
    for (const Shape& element : m_elements) total += element.byteSize();
    return total;
  }
  return (elementCount() * primitiveTypeBitWidth(m_type) + 7) / 8;
}

bool Shape::compatible(const Shape& other) const {
  if (m_type != other.m_type || m_dims != other.m_dims) return false;
  if (m_elements.size() != other.m_elements.size()) return false;
  for (size_t i = 0; i < m_elements.size(); ++i) {
    if (!m_elements[i].compatible(other.m_elements[i])) return false;
  }
  return true;
}

namespace {
// std::to_chars into a stack buffer: fmt::format_to through a back_insert_iterator costs ~10x more per number.
void appendDecimal(std::string& out, int64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}
}  // namespace

void Shape::appendTo(std::string& out, bool withLayout) const {
  if (isTuple()) {
    out += '(';
    for (size_t i = 0; i < m_elements.size(); ++i) {
      if (i > 0) out += ", ";
      // XLA marks every fifth tuple element with an index comment to keep long tuples readable.
      if (i > 0 && i % 5 == 0) fmt::format_to(std::back_inserter(out), "/*index={}*/", i);
      m_elements[i].appendTo(out, withLayout);
    }
    out += ')';
    return;
  }
  out += primitiveTypeName(m_type);
  out += '[';
  for (size_t i = 0; i < m_dims.size(); ++i) {
    if (i > 0) out += ',';
    if (m_dims[i] < 0) {
      out += '?';
      continue;
    }
    if (!m_dynamic.empty() && m_dynamic[i]) out += "<=";
    appendDecimal(out, m_dims[i]);
  }
  out += ']';
  if (withLayout && m_layout) {
    out += '{';
    for (size_t i = 0; i < m_layout->minorToMajor.size(); ++i) {
      if (i > 0) out += ',';
      appendDecimal(out, m_layout->minorToMajor[i]);
    }
    if (!m_layout->annotations.empty()) {
      out += ':';
      out += m_layout->annotations;
    }
    out += '}';
  }
}

std::string Shape::toString(bool withLayout) const {
  std::string out;
  appendTo(out, withLayout);
  return out;
}

bool hasRowMajorLayout(const Shape& shape) {
  if (!shape.isArray()) return false;
  if (!shape.layout() || shape.rank() == 0) return true;
  const std::vector<int64_t>& order = shape.layout()->minorToMajor;
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(order.size() - 1 - i)) return false;
  }
  return true;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

std::vector<int64_t> physicalStrides(const Shape& shape) {
  const std::vector<int64_t>& dims = shape.dimensions();
  const std::optional<Layout>& layout = shape.layout();
  if (!layout || layout->minorToMajor.size() != dims.size()) return rowMajorStrides(dims);
  std::vector<int64_t> strides(dims.size(), 1);
  std::vector<bool> seen(dims.size(), false);
  int64_t stride = 1;
  for (int64_t d : layout->minorToMajor) {
    if (d < 0 || d >= static_cast<int64_t>(dims.size()) || seen[static_cast<size_t>(d)]) return rowMajorStrides(dims);
    seen[static_cast<size_t>(d)] = true;
    strides[static_cast<size_t>(d)] = stride;
    stride *= dims[static_cast<size_t>(d)];
  }
  return strides;
}

}  // namespace fusionscope::core
