#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fusionscope::core {

// Element types of XLA's PrimitiveType that appear in HLO text. kTuple marks a tuple shape; kToken and
// kOpaque carry no data.
enum class PrimitiveType : uint8_t {
  kInvalid,
  kPred,
  kS2,
  kS4,
  kS8,
  kS16,
  kS32,
  kS64,
  kU2,
  kU4,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E5M2,
  kF8E4M3,
  kF8E4M3FN,
  kF8E4M3B11FNUZ,
  kF8E5M2FNUZ,
  kF8E4M3FNUZ,
  kF8E3M4,
  kF4E2M1FN,
  kF8E8M0FNU,
  kC64,
  kC128,
  kToken,
  kOpaque,
  kTuple,
};

// "f32" for kF32 and so on; "tuple" for kTuple.
std::string_view primitiveTypeName(PrimitiveType type);
// "[2,3]": dimension sizes, written as a shape writes them (messages).
std::string dimensionsText(const std::vector<int64_t>& dims);
// Parses the lower-case XLA spelling; returns kInvalid for anything else (including "tuple").
PrimitiveType parsePrimitiveType(std::string_view name);
// Size of one element in bits (sub-byte types report their real width); 0 for token/opaque/tuple.
int primitiveTypeBitWidth(PrimitiveType type);
bool isFloatingPoint(PrimitiveType type);
bool isComplex(PrimitiveType type);
bool isSignedInteger(PrimitiveType type);
bool isUnsignedInteger(PrimitiveType type);
inline bool isInteger(PrimitiveType type) {
  return isSignedInteger(type) || isUnsignedInteger(type);
}

// A layout as XLA prints it inside `{...}` after the dimensions: minor-to-major order, then, after a
// colon, tiling and memory-space annotations such as `T(8,128)(2,1)S(1)`. The part after the colon is
// kept verbatim because only the minor-to-major order matters to our passes.
struct Layout {
  std::vector<int64_t> minorToMajor;
  std::string annotations;  // text after ':' without the colon; empty when absent

  bool operator==(const Layout&) const = default;
};

// An array shape (element type, dimensions, optional layout) or a tuple of shapes. Dimensions may be
// dynamic (`<=N`, bound N) or unbounded (`?`, stored as -1). Value type; copies are deep.
class Shape {
 public:
  Shape() = default;
  Shape(PrimitiveType type, std::vector<int64_t> dims);
  static Shape tuple(std::vector<Shape> elements);
  static Shape scalar(PrimitiveType type) { return Shape(type, {}); }

  PrimitiveType elementType() const { return m_type; }
  bool isTuple() const { return m_type == PrimitiveType::kTuple; }
  bool isArray() const { return !isTuple() && m_type != PrimitiveType::kToken && m_type != PrimitiveType::kOpaque; }
  bool isToken() const { return m_type == PrimitiveType::kToken; }
  bool isScalar() const { return isArray() && m_dims.empty(); }

  int rank() const { return static_cast<int>(m_dims.size()); }
  const std::vector<int64_t>& dimensions() const { return m_dims; }
  int64_t dimension(int i) const { return m_dims[static_cast<size_t>(i)]; }
  const std::vector<bool>& dynamicDimensions() const { return m_dynamic; }
  bool isDynamicDimension(int i) const { return m_hasDynamic && m_dynamic[static_cast<size_t>(i)]; }
  bool hasDynamicDimension() const { return m_hasDynamic; }
  void setDynamicDimension(int i, bool dynamic);

  const std::optional<Layout>& layout() const { return m_layout; }
  void setLayout(std::optional<Layout> layout) { m_layout = std::move(layout); }
  void clearLayout();  // recursively, for tuples too

  const std::vector<Shape>& tupleElements() const { return m_elements; }
  std::vector<Shape>& mutableTupleElements() { return m_elements; }
  const Shape& tupleElement(int i) const { return m_elements[static_cast<size_t>(i)]; }
  int tupleSize() const { return static_cast<int>(m_elements.size()); }

  // Number of elements of an array shape (1 for a scalar, 0 for token/tuple). Kept with the shape: passes ask
  // for it on every visit, and multiplying the dimensions out reads them from the heap.
  int64_t elementCount() const { return isArray() ? m_count : 0; }
  // Bytes of the data: elements × element size for arrays, sum of the elements for tuples.
  int64_t byteSize() const;

  // Same element type and dimensions (and tuple structure); layouts ignored.
  bool compatible(const Shape& other) const;
  bool operator==(const Shape& other) const = default;

  // XLA text: `f32[2,3]{1,0}`, `(f32[], s32[4]{0})`, `token[]`. `withLayout=false` omits layouts.
  std::string toString(bool withLayout = true) const;
  void appendTo(std::string& out, bool withLayout = true) const;

 private:
  // Element type, element count, dimensions and tuple elements first: what passes read on every visit.
  PrimitiveType m_type = PrimitiveType::kInvalid;
  bool m_hasDynamic = false;  // some entry of m_dynamic is true
  int64_t m_count = 1;        // product of m_dims (a negative, unknown dimension counts as 0)
  std::vector<int64_t> m_dims;
  std::vector<Shape> m_elements;
  std::vector<bool> m_dynamic;  // empty when no dimension is dynamic
  std::optional<Layout> m_layout;
};

// An array shape whose layout is row-major (minor-to-major {rank-1, ..., 0}) or absent: rows are contiguous. False
// for tuples and tokens.
bool hasRowMajorLayout(const Shape& shape);
// Row-major strides of `dims` (the last dimension has stride 1).
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims);
// Strides of each logical dimension in the physical buffer `shape`'s layout describes (row-major without a
// usable layout). A bitcast whose operand and result are both physically row-major is a free reshape; otherwise it
// moves data.
std::vector<int64_t> physicalStrides(const Shape& shape);

}  // namespace fusionscope::core
