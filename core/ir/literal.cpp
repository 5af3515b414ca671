#include "core/ir/literal.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

namespace fusionscope::core {
namespace {

void appendElement(std::string& out, const Literal& literal, int64_t i) {
  PrimitiveType type = literal.shape().elementType();
  auto emitFloat = [&](double v) {
    if (std::isnan(v)) {
      // XLA's spelling: `nan`, `-nan`, and the payload (mantissa bits) when it is not the plain quiet NaN's.
      const uint64_t bits = std::bit_cast<uint64_t>(v);
      const uint64_t payload = bits & ((uint64_t{1} << 52) - 1);
      out += std::signbit(v) ? "-nan" : "nan";
      if (payload != uint64_t{1} << 51) fmt::format_to(std::back_inserter(out), "(0x{:x})", payload);
      return;
    }
    // Shortest text that reads back to the same value at the literal's precision.
    if (type == PrimitiveType::kF64 || type == PrimitiveType::kC128) {
      fmt::format_to(std::back_inserter(out), "{}", v);
    } else {
      fmt::format_to(std::back_inserter(out), "{}", static_cast<float>(v));
    }
  };
  if (literal.kind() == Literal::Kind::kFloat) {
    if (isComplex(type)) {
      out += '(';
      emitFloat(literal.floatValues()[static_cast<size_t>(2 * i)]);
      out += ", ";
      emitFloat(literal.floatValues()[static_cast<size_t>(2 * i + 1)]);
      out += ')';
    } else {
      emitFloat(literal.floatValues()[static_cast<size_t>(i)]);
    }
    return;
  }
  int64_t v = literal.integerValues()[static_cast<size_t>(i)];
  if (type == PrimitiveType::kPred) {
    out += v ? "true" : "false";
  } else if (type == PrimitiveType::kU64) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<uint64_t>(v));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

// Prints dimension `dim` of the array starting at flat index `base`, nested the way XLA prints it.
void appendArray(std::string& out, const Literal& literal, int dim, int64_t base, int64_t stride, int64_t maxElements,
                 int64_t& printed) {
  const Shape& shape = literal.shape();
  int64_t extent = shape.dimension(dim);
  int64_t inner = stride / (extent == 0 ? 1 : extent);
  bool last = dim == shape.rank() - 1;
  out += last ? "{" : "{ ";
  for (int64_t j = 0; j < extent; ++j) {
    if (maxElements > 0 && printed >= maxElements) {
      out += "...";
      break;
    }
    if (j > 0) out += ", ";
    if (last) {
      appendElement(out, literal, base + j);
      ++printed;
    } else {
      appendArray(out, literal, dim + 1, base + j * inner, inner, maxElements, printed);
    }
  }
  out += last ? "}" : " }";
}

}  // namespace

Literal Literal::floats(Shape shape, std::vector<double> values) {
  Literal literal;
  literal.m_kind = Kind::kFloat;
  literal.m_shape = std::move(shape);
  literal.m_floats = std::move(values);
  return literal;
}

Literal Literal::integers(Shape shape, std::vector<int64_t> values) {
  Literal literal;
  literal.m_kind = Kind::kInteger;
  literal.m_shape = std::move(shape);
  literal.m_ints = std::move(values);
  return literal;
}

Literal Literal::elided(Shape shape) {
  Literal literal;
  literal.m_kind = Kind::kElided;
  literal.m_shape = std::move(shape);
  return literal;
}

Literal Literal::raw(Shape shape, std::string text) {
  Literal literal;
  literal.m_kind = Kind::kRaw;
  literal.m_shape = std::move(shape);
  literal.m_raw = std::move(text);
  return literal;
}

int64_t Literal::valueCount() const {
  switch (m_kind) {
    case Kind::kFloat:
      return static_cast<int64_t>(isComplex(m_shape.elementType()) ? m_floats.size() / 2 : m_floats.size());
    case Kind::kInteger: return static_cast<int64_t>(m_ints.size());
    default: return 0;
  }
}

bool Literal::isSplat() const {
  if (m_kind == Kind::kFloat) {
    for (double v : m_floats) {
      if (!(v == m_floats.front()) && !(std::isnan(v) && std::isnan(m_floats.front()))) return false;
    }
    return !m_floats.empty() && !isComplex(m_shape.elementType());
  }
  if (m_kind == Kind::kInteger) {
    for (int64_t v : m_ints) {
      if (v != m_ints.front()) return false;
    }
    return !m_ints.empty();
  }
  return false;
}

double Literal::asDouble(int64_t i) const {
  if (m_kind == Kind::kFloat) {
    return m_floats[static_cast<size_t>(isComplex(m_shape.elementType()) ? 2 * i : i)];
  }
  if (m_kind == Kind::kInteger) {
    if (m_shape.elementType() == PrimitiveType::kU64) {
      return static_cast<double>(static_cast<uint64_t>(m_ints[static_cast<size_t>(i)]));
    }
    return static_cast<double>(m_ints[static_cast<size_t>(i)]);
  }
  return 0;
}

std::string Literal::toString(int64_t maxElements) const {
  std::string out;
  switch (m_kind) {
    case Kind::kElided: return "{...}";
    case Kind::kRaw: return m_raw;
    default: break;
  }
  if (m_shape.rank() == 0) {
    appendElement(out, *this, 0);
    return out;
  }
  int64_t printed = 0;
  appendArray(out, *this, 0, 0, m_shape.elementCount(), maxElements, printed);
  return out;
}

bool Literal::operator==(const Literal& other) const {
  if (m_kind != other.m_kind || !m_shape.compatible(other.m_shape)) return false;
  if (m_raw != other.m_raw || m_ints != other.m_ints || m_floats.size() != other.m_floats.size()) return false;
  for (size_t i = 0; i < m_floats.size(); ++i) {
    double a = m_floats[i];
    double b = other.m_floats[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    // Values below f64 are compared at the precision they are printed with.
    bool wide = m_shape.elementType() == PrimitiveType::kF64 || m_shape.elementType() == PrimitiveType::kC128;
    if (wide ? a != b : static_cast<float>(a) != static_cast<float>(b)) return false;
  }
  return true;
}

}  // namespace fusionscope::core
