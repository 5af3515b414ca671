#include "core/eval/value.h"

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "core/eval/scalar_ops.h"
#include "core/ir/literal.h"

namespace fusionscope::core {

bool isEvaluableElementType(PrimitiveType type) {
  if (type == PrimitiveType::kPred || isInteger(type) || isComplex(type)) return true;
  return isFloatingPoint(type) && eval::floatFormat(type) != nullptr;
}

PrimitiveType complexPartType(PrimitiveType type) {
  if (type == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (type == PrimitiveType::kC128) return PrimitiveType::kF64;
  return type;
}

double roundToFloatType(PrimitiveType type, double value) {
  return eval::roundFloat(type, value);
}

int64_t wrapToIntegerType(PrimitiveType type, int64_t value) {
  return eval::wrapInteger(type, value);
}

Value Value::floats(Shape shape, std::vector<double> values) {
  Value v;
  shape.clearLayout();
  PrimitiveType type = shape.elementType();
  if (type != PrimitiveType::kF64) {
    for (double& x : values) x = eval::roundFloat(type, x);
  }
  v.m_shape = std::move(shape);
  v.m_floats = std::make_shared<const std::vector<double>>(std::move(values));
  return v;
}

Value Value::complex(Shape shape, std::vector<double> real, std::vector<double> imag) {
  Value v;
  shape.clearLayout();
  if (complexPartType(shape.elementType()) == PrimitiveType::kF32) {
    for (double& x : real) x = eval::roundFloat(PrimitiveType::kF32, x);
    for (double& x : imag) x = eval::roundFloat(PrimitiveType::kF32, x);
  }
  v.m_shape = std::move(shape);
  v.m_floats = std::make_shared<const std::vector<double>>(std::move(real));
  v.m_imag = std::make_shared<const std::vector<double>>(std::move(imag));
  return v;
}

Value Value::integers(Shape shape, std::vector<int64_t> values) {
  Value v;
  shape.clearLayout();
  PrimitiveType type = shape.elementType();
  if (type != PrimitiveType::kS64 && type != PrimitiveType::kU64) {
    for (int64_t& x : values) x = eval::wrapInteger(type, x);
  }
  v.m_shape = std::move(shape);
  v.m_ints = std::make_shared<const std::vector<int64_t>>(std::move(values));
  return v;
}

Value Value::fromDoubles(Shape shape, const std::vector<double>& values) {
  PrimitiveType type = shape.elementType();
  if (isFloatingPoint(type)) return floats(std::move(shape), values);
  if (isComplex(type)) return complex(std::move(shape), values, std::vector<double>(values.size(), 0.0));
  std::vector<int64_t> ints(values.size());
  for (size_t i = 0; i < values.size(); ++i) ints[i] = eval::floatToInteger(type, values[i]);
  return integers(std::move(shape), std::move(ints));
}

Value Value::scalar(PrimitiveType type, double value) {
  return fromDoubles(Shape::scalar(type), {value});
}

Value Value::zeros(const Shape& shape) {
  if (shape.isTuple()) {
    std::vector<Value> elements;
    elements.reserve(static_cast<size_t>(shape.tupleSize()));
    for (const Shape& e : shape.tupleElements()) elements.push_back(zeros(e));
    return tuple(std::move(elements));
  }
  if (!shape.isArray()) return token();
  size_t n = static_cast<size_t>(shape.elementCount());
  if (isFloatingPoint(shape.elementType())) return floats(shape, std::vector<double>(n, 0.0));
  if (isComplex(shape.elementType())) return complex(shape, std::vector<double>(n, 0.0), std::vector<double>(n, 0.0));
  return integers(shape, std::vector<int64_t>(n, 0));
}

Value Value::tuple(std::vector<Value> elements) {
  Value v;
  std::vector<Shape> shapes;
  shapes.reserve(elements.size());
  for (const Value& e : elements) shapes.push_back(e.shape());
  v.m_shape = Shape::tuple(std::move(shapes));
  v.m_elements = std::move(elements);
  return v;
}

Value Value::token() {
  Value v;
  v.m_shape = Shape(PrimitiveType::kToken, {});
  return v;
}

StatusOr<Value> Value::fromLiteral(const Literal& literal) {
  const Shape& shape = literal.shape();
  switch (literal.kind()) {
    case Literal::Kind::kElided: return Status::error("constant value was elided ({...}) in the text");
    case Literal::Kind::kRaw:
      return Status::error(
          fmt::format("cannot evaluate a {} constant '{}'", shape.toString(false), literal.rawText().substr(0, 40)));
    case Literal::Kind::kFloat:
    case Literal::Kind::kInteger: break;
  }
  if (!shape.isArray() || !isEvaluableElementType(shape.elementType())) {
    return Status::error(fmt::format("unsupported constant type {}", shape.toString(false)));
  }
  size_t n = static_cast<size_t>(shape.elementCount());
  if (isComplex(shape.elementType())) {
    // Complex literals hold (re, im) pairs, one after the other.
    if (literal.kind() != Literal::Kind::kFloat || literal.floatValues().size() != 2 * n) {
      return Status::error("constant has the wrong number of values");
    }
    std::vector<double> real(n);
    std::vector<double> imag(n);
    for (size_t i = 0; i < n; ++i) {
      real[i] = literal.floatValues()[2 * i];
      imag[i] = literal.floatValues()[2 * i + 1];
    }
    return complex(shape, std::move(real), std::move(imag));
  }
  bool floating = isFloatingPoint(shape.elementType());
  if (literal.kind() == Literal::Kind::kFloat) {
    if (literal.floatValues().size() != n) return Status::error("constant has the wrong number of values");
    if (floating) return floats(shape, literal.floatValues());
    return fromDoubles(shape, literal.floatValues());
  }
  if (literal.integerValues().size() != n) return Status::error("constant has the wrong number of values");
  if (!floating) return integers(shape, literal.integerValues());
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = eval::integerToDouble(shape.elementType(), literal.integerValues()[i]);
  return floats(shape, std::move(values));
}

int64_t Value::elementCount() const {
  if (m_floats) return static_cast<int64_t>(m_floats->size());
  if (m_ints) return static_cast<int64_t>(m_ints->size());
  return 0;
}

std::span<const double> Value::floatData() const {
  if (!m_floats) return {};
  return {m_floats->data(), m_floats->size()};
}

std::span<const double> Value::imagData() const {
  if (!m_imag) return {};
  return {m_imag->data(), m_imag->size()};
}

std::span<const int64_t> Value::intData() const {
  if (!m_ints) return {};
  return {m_ints->data(), m_ints->size()};
}

double Value::doubleAt(int64_t linear) const {
  if (linear < 0 || linear >= elementCount()) return 0;
  if (m_floats) return (*m_floats)[static_cast<size_t>(linear)];
  return eval::integerToDouble(elementType(), (*m_ints)[static_cast<size_t>(linear)]);
}

int64_t Value::int64At(int64_t linear) const {
  if (linear < 0 || linear >= elementCount()) return 0;
  if (m_ints) return (*m_ints)[static_cast<size_t>(linear)];
  return eval::floatToInteger(PrimitiveType::kS64, (*m_floats)[static_cast<size_t>(linear)]);
}

int64_t Value::linearIndex(std::span<const int64_t> index) const {
  int64_t linear = 0;
  const std::vector<int64_t>& dims = m_shape.dimensions();
  for (size_t d = 0; d < dims.size() && d < index.size(); ++d) linear = linear * dims[d] + index[d];
  return linear;
}

Value Value::withShape(Shape shape) const {
  Value v = *this;
  shape.clearLayout();
  v.m_shape = std::move(shape);
  return v;
}

namespace {

void appendFloat(std::string& out, PrimitiveType type, double x) {
  if (std::isnan(x)) {
    out += "nan";  // the sign of a NaN carries no meaning here
  } else if (type == PrimitiveType::kF64 || type == PrimitiveType::kC128) {
    fmt::format_to(std::back_inserter(out), "{}", x);
  } else {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<float>(x));
  }
}

void appendElement(std::string& out, const Value& value, int64_t i) {
  PrimitiveType type = value.elementType();
  if (value.holdsComplex()) {
    out += '(';
    appendFloat(out, type, value.floatData()[static_cast<size_t>(i)]);
    out += ", ";
    appendFloat(out, type, value.imagData()[static_cast<size_t>(i)]);
    out += ')';
    return;
  }
  if (value.holdsFloats()) {
    appendFloat(out, type, value.floatData()[static_cast<size_t>(i)]);
    return;
  }
  int64_t x = value.intData()[static_cast<size_t>(i)];
  if (type == PrimitiveType::kPred) {
    out += x ? "true" : "false";
  } else if (type == PrimitiveType::kU64) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<uint64_t>(x));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", x);
  }
}

void appendArray(std::string& out, const Value& value, int dim, int64_t base, int64_t maxElements, int64_t& printed) {
  const Shape& shape = value.shape();
  if (dim == shape.rank()) {
    appendElement(out, value, base);
    ++printed;
    return;
  }
  int64_t extent = shape.dimension(dim);
  int64_t inner = 1;
  for (int d = dim + 1; d < shape.rank(); ++d) inner *= shape.dimension(d);
  out += '{';
  for (int64_t j = 0; j < extent; ++j) {
    if (j > 0) out += ", ";
    if (maxElements > 0 && printed >= maxElements) {
      out += "...";
      break;
    }
    appendArray(out, value, dim + 1, base + j * inner, maxElements, printed);
  }
  out += '}';
}

}  // namespace

std::string Value::toString(int64_t maxElements) const {
  if (isTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < m_elements.size(); ++i) {
      if (i > 0) out += ", ";
      out += m_elements[i].toString(maxElements);
    }
    return out + ")";
  }
  if (!isArray()) return m_shape.toString(false);
  std::string out = m_shape.toString(false);
  out += ' ';
  if (elementCount() != m_shape.elementCount()) return out + "<no data>";
  int64_t printed = 0;
  appendArray(out, *this, 0, 0, maxElements, printed);
  return out;
}

}  // namespace fusionscope::core
