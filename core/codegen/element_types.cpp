#include "core/codegen/element_types.h"

#include <cstring>

#include <fmt/format.h>

#include "core/eval/evaluator.h"
#include "core/eval/scalar_ops.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

bool isSupportedElementType(PrimitiveType type) {
  return elementByteSize(type) > 0 && !isComplex(type);
}

bool isByteFloat(PrimitiveType type) {
  const eval::FloatFormat* format = eval::floatFormat(type);
  return format != nullptr && format->exponentBits + format->mantissaBits == 7;
}

int64_t elementByteSize(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred:
    case PrimitiveType::kS8:
    case PrimitiveType::kU8: return 1;
    case PrimitiveType::kS16:
    case PrimitiveType::kU16:
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16: return 2;
    case PrimitiveType::kS32:
    case PrimitiveType::kU32:
    case PrimitiveType::kF32: return 4;
    case PrimitiveType::kS64:
    case PrimitiveType::kU64:
    case PrimitiveType::kF64:
    case PrimitiveType::kC64: return 8;
    case PrimitiveType::kC128: return 16;
    default: return isByteFloat(type) ? 1 : 0;
  }
}

bool complexSupportedInCodegen(const HloInstruction& inst) {
  return supportsComplexForm(inst);
}

StatusOr<std::vector<uint8_t>> valueToBytes(const Value& value) {
  const PrimitiveType type = value.elementType();
  const int64_t width = elementByteSize(type);
  if (!value.isArray() || width == 0) {
    return Status::error(fmt::format("cannot store a value of shape {} in a buffer", value.shape().toString(false)));
  }
  const int64_t count = value.elementCount();
  std::vector<uint8_t> bytes(static_cast<size_t>(count * width));
  if (isComplex(type)) {
    // (re, im) pairs of f32 (c64) or f64 (c128).
    for (int64_t i = 0; i < count; ++i) {
      const double parts[2] = {value.floatData()[static_cast<size_t>(i)], value.imagData()[static_cast<size_t>(i)]};
      for (int p = 0; p < 2; ++p) {
        uint8_t* at = bytes.data() + i * width + p * width / 2;
        if (type == PrimitiveType::kC64) {
          const auto f = static_cast<float>(parts[p]);
          std::memcpy(at, &f, 4);
        } else {
          std::memcpy(at, &parts[p], 8);
        }
      }
    }
    return bytes;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    if (type == PrimitiveType::kF32) {
      float f = static_cast<float>(value.doubleAt(i));
      uint32_t b32 = 0;
      std::memcpy(&b32, &f, 4);
      bits = b32;
    } else if (type == PrimitiveType::kF64) {
      double d = value.doubleAt(i);
      std::memcpy(&bits, &d, 8);
    } else if (isFloatingPoint(type)) {
      if (!eval::floatToBits(type, value.doubleAt(i), bits)) {
        return Status::error(fmt::format("cannot encode {} elements", primitiveTypeName(type)));
      }
    } else {
      bits = static_cast<uint64_t>(value.int64At(i));
    }
    std::memcpy(bytes.data() + i * width, &bits, static_cast<size_t>(width));  // little-endian host
  }
  return bytes;
}

StatusOr<Value> bytesToValue(const Shape& shape, const uint8_t* data, int64_t size) {
  const PrimitiveType type = shape.elementType();
  const int64_t width = elementByteSize(type);
  if (!shape.isArray() || width == 0) {
    return Status::error(fmt::format("cannot read a value of shape {} from a buffer", shape.toString(false)));
  }
  const int64_t count = shape.elementCount();
  if (size < count * width) {
    return Status::error(fmt::format("buffer of {} bytes is too small for {}", size, shape.toString(false)));
  }
  if (isComplex(type)) {
    std::vector<double> re(static_cast<size_t>(count));
    std::vector<double> im(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      for (int p = 0; p < 2; ++p) {
        const uint8_t* at = data + i * width + p * width / 2;
        double part = 0;
        if (type == PrimitiveType::kC64) {
          float f = 0;
          std::memcpy(&f, at, 4);
          part = f;
        } else {
          std::memcpy(&part, at, 8);
        }
        (p == 0 ? re : im)[static_cast<size_t>(i)] = part;
      }
    }
    return Value::complex(Shape(type, shape.dimensions()), std::move(re), std::move(im));
  }
  std::vector<double> floats;
  std::vector<int64_t> ints;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, data + i * width, static_cast<size_t>(width));
    if (type == PrimitiveType::kF32) {
      float f = 0;
      uint32_t b32 = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b32, 4);
      floats.push_back(f);
    } else if (type == PrimitiveType::kF64) {
      double d = 0;
      std::memcpy(&d, &bits, 8);
      floats.push_back(d);
    } else if (isFloatingPoint(type)) {
      double d = 0;
      if (!eval::bitsToFloat(type, bits, d)) {
        return Status::error(fmt::format("cannot decode {} elements", primitiveTypeName(type)));
      }
      floats.push_back(d);
    } else if (isSignedInteger(type)) {
      const int shift = static_cast<int>(64 - 8 * width);
      ints.push_back(static_cast<int64_t>(bits << shift) >> shift);
    } else {
      ints.push_back(static_cast<int64_t>(bits));
    }
  }
  Shape plain(type, shape.dimensions());
  if (isFloatingPoint(type)) return Value::floats(plain, std::move(floats));
  return Value::integers(plain, std::move(ints));
}

StatusOr<std::vector<uint8_t>> constantBytes(const HloInstruction& constant) {
  if (constant.literal() == nullptr) return Status::error(constant.name() + ": a constant without a literal");
  StatusOr<Value> value = Value::fromLiteral(*constant.literal());
  if (!value.ok()) return Status::error(constant.name() + ": " + value.message());
  StatusOr<std::vector<uint8_t>> bytes = valueToBytes(*value);
  if (!bytes.ok()) return Status::error(constant.name() + ": " + bytes.message());
  return bytes;
}

}  // namespace fusionscope::core
