#include "core/passes/rng_bit_generator_expander.h"

#include <array>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/literal.h"
#include "core/ir/rng_bit_generator.h"

namespace fusionscope::core {
namespace {

constexpr PrimitiveType kU32 = PrimitiveType::kU32;
constexpr PrimitiveType kU64 = PrimitiveType::kU64;

// Builds the expansion of one rng-bit-generator next to it. Every instruction it adds carries the generator's
// metadata, so the viewer's scope groups and `explain` still attribute the work to it.
class Expansion {
 public:
  Expansion(HloInstruction* rng, RngBitGeneratorSpec spec)
      : m_rng(rng), m_computation(*rng->parent()), m_spec(std::move(spec)), m_dims(m_spec.output.dimensions()) {}

  HloInstruction* expand() {
    HloInstruction* bits = nullptr;
    HloInstruction* state = nullptr;
    if (m_spec.algorithm == RngAlgorithm::kThreeFry) {
      bits = threeFryBits();
      state = concatenate({word(0), addScalar(word(1), m_spec.threeFryCounters())});
    } else {
      bits = philoxBits();
      auto [low, high] = counterPlus(word(1), highWord(), constant(kU64, m_spec.philoxCounters()));
      // A two-word state keeps its key: the counter's high word (the key) does not carry into it.
      state = m_spec.stateWords == 3 ? concatenate({word(0), low, high}) : concatenate({word(0), low});
    }
    if (m_spec.output.elementType() != bits->shape().elementType()) bits = convert(bits, m_spec.output.elementType());
    // The generator's own layouts, so the tuple's elements are its get-tuple-elements' shapes exactly and
    // `tuple-simplify` forwards them (a layout-less element would keep the tuple, and fusion stops at it).
    bits->mutableShape().setLayout(m_spec.output.layout());
    state->mutableShape().setLayout(m_rng->shape().tupleElement(0).layout());
    return add("tuple", HloOpcode::kTuple, m_rng->shape(), {state, bits});
  }

 private:
  HloInstruction* add(std::string_view name, HloOpcode opcode, const Shape& shape,
                      const std::vector<HloInstruction*>& operands) {
    HloInstruction* inst = m_computation.addInstruction(name, opcode, shape, operands);
    if (const OpMetadata* metadata = m_rng->metadata()) inst->mutableAttributes().metadata = *metadata;
    return inst;
  }

  Shape array(PrimitiveType type) const { return Shape(type, m_dims); }

  HloInstruction* constant(PrimitiveType type, uint64_t value) {
    const Shape shape = Shape::scalar(type);
    HloInstruction* c = add("constant", HloOpcode::kConstant, shape, {});
    c->setLiteral(Literal::integers(shape, {static_cast<int64_t>(value)}));
    return c;
  }

  // A scalar in every element of the output's shape.
  HloInstruction* spread(HloInstruction* scalar) {
    if (m_dims.empty()) return scalar;
    HloInstruction* broadcast = add("broadcast", HloOpcode::kBroadcast, array(scalar->shape().elementType()), {scalar});
    broadcast->mutableAttributes().dimensions = std::vector<int64_t>{};
    return broadcast;
  }

  HloInstruction* fill(PrimitiveType type, uint64_t value) { return spread(constant(type, value)); }

  HloInstruction* binary(HloOpcode opcode, HloInstruction* a, HloInstruction* b) {
    return add(opcodeName(opcode), opcode, a->shape(), {a, b});
  }

  // `value` in `like`'s type and shape: a scalar, the output's shape, or the state's u64[1] words.
  HloInstruction* constantLike(HloInstruction* like, uint64_t value) {
    const Shape& shape = like->shape();
    if (shape.rank() == 0) return constant(shape.elementType(), value);
    if (shape.dimensions() == m_dims) return fill(shape.elementType(), value);
    HloInstruction* c = add("constant", HloOpcode::kConstant, shape, {});
    c->setLiteral(Literal::integers(
        shape, std::vector<int64_t>(static_cast<size_t>(shape.elementCount()), static_cast<int64_t>(value))));
    return c;
  }

  // a op c for a constant c of a's type and shape.
  HloInstruction* withConstant(HloOpcode opcode, HloInstruction* a, uint64_t c) {
    return binary(opcode, a, constantLike(a, c));
  }

  HloInstruction* addScalar(HloInstruction* a, uint64_t c) { return withConstant(HloOpcode::kAdd, a, c); }

  HloInstruction* convert(HloInstruction* a, PrimitiveType type) {
    return add("convert", HloOpcode::kConvert, Shape(type, a->shape().dimensions()), {a});
  }

  HloInstruction* compare(HloInstruction* a, HloInstruction* b, ComparisonDirection direction) {
    HloInstruction* c =
        add("compare", HloOpcode::kCompare, Shape(PrimitiveType::kPred, a->shape().dimensions()), {a, b});
    c->mutableAttributes().direction = direction;
    return c;
  }

  HloInstruction* select(HloInstruction* predicate, HloInstruction* a, HloInstruction* b) {
    return add("select", HloOpcode::kSelect, a->shape(), {predicate, a, b});
  }

  // Low and high 32 bits of a u64 scalar or array.
  HloInstruction* low32(HloInstruction* a) { return convert(a, kU32); }
  HloInstruction* high32(HloInstruction* a) {
    return convert(withConstant(HloOpcode::kShiftRightLogical, a, 32), kU32);
  }
  HloInstruction* join(HloInstruction* low, HloInstruction* high) {
    return binary(HloOpcode::kOr, convert(low, kU64), withConstant(HloOpcode::kShiftLeft, convert(high, kU64), 32));
  }

  // State word i as a u64[1] (for the new state) or a u64[] scalar (for the numbers).
  HloInstruction* word(int i) {
    HloInstruction* s = add("slice", HloOpcode::kSlice, Shape(kU64, {1}), {m_rng->operand(0)});
    s->mutableAttributes().slice = std::vector<SliceDim>{{i, i + 1, 1}};
    return s;
  }
  HloInstruction* scalarWord(int i) { return add("reshape", HloOpcode::kReshape, Shape::scalar(kU64), {word(i)}); }

  // Philox's counter high word: state[2], or the key for a two-word state.
  HloInstruction* highWord() { return word(m_spec.stateWords == 3 ? 2 : 0); }

  HloInstruction* concatenate(const std::vector<HloInstruction*>& words) {
    HloInstruction* c = add("concatenate", HloOpcode::kConcatenate, m_rng->operand(0)->shape(), words);
    c->mutableAttributes().dimensions = std::vector<int64_t>{0};
    return c;
  }

  // (low, high) + v as a 128-bit sum: the low word wraps and carries one into the high word.
  std::pair<HloInstruction*, HloInstruction*> counterPlus(HloInstruction* low, HloInstruction* high,
                                                          HloInstruction* v) {
    if (low->shape().rank() != v->shape().rank()) v = v->shape().rank() == 0 ? reshapeLike(v, low) : v;
    HloInstruction* sum = binary(HloOpcode::kAdd, low, v);
    HloInstruction* carried = compare(sum, low, ComparisonDirection::kLt);
    return {sum, binary(HloOpcode::kAdd, high, select(carried, constantLike(low, 1), constantLike(low, 0)))};
  }

  HloInstruction* reshapeLike(HloInstruction* scalar, HloInstruction* target) {
    return add("reshape", HloOpcode::kReshape, target->shape(), {scalar});
  }

  // Σ iota_d · strides[d] over the output's dimensions, as u64; `halve` makes dimension `halve` count i / 2.
  HloInstruction* linearIndex(const std::vector<int64_t>& strides, int halve) {
    HloInstruction* sum = nullptr;
    for (int d = 0; d < static_cast<int>(m_dims.size()); ++d) {
      if (m_dims[static_cast<size_t>(d)] < 2) continue;  // the index is always 0
      HloInstruction* index = iota(d);
      if (d == halve) index = withConstant(HloOpcode::kShiftRightLogical, index, 1);
      if (strides[static_cast<size_t>(d)] != 1) {
        index = withConstant(HloOpcode::kMultiply, index, static_cast<uint64_t>(strides[static_cast<size_t>(d)]));
      }
      sum = sum ? binary(HloOpcode::kAdd, sum, index) : index;
    }
    return sum ? sum : fill(kU64, 0);
  }

  HloInstruction* iota(int dimension) {
    HloInstruction* i = add("iota", HloOpcode::kIota, array(kU64), {});
    i->mutableAttributes().iotaDimension = dimension;
    return i;
  }

  static std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims) {
    std::vector<int64_t> strides(dims.size(), 1);
    for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
      strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * dims[static_cast<size_t>(d) + 1];
    }
    return strides;
  }

  // select(which == 0, choices[0], select(which == 1, choices[1], ...)).
  HloInstruction* pick(HloInstruction* which, const std::vector<HloInstruction*>& choices) {
    HloInstruction* out = choices.back();
    for (int k = static_cast<int>(choices.size()) - 2; k >= 0; --k) {
      out = select(compare(which, fill(kU64, static_cast<uint64_t>(k)), ComparisonDirection::kEq),
                   choices[static_cast<size_t>(k)], out);
    }
    return out;
  }

  HloInstruction* rotateLeft(HloInstruction* v, int distance) {
    return binary(HloOpcode::kOr, withConstant(HloOpcode::kShiftLeft, v, static_cast<uint64_t>(distance)),
                  withConstant(HloOpcode::kShiftRightLogical, v, static_cast<uint64_t>(32 - distance)));
  }

  HloInstruction* threeFryBits() {
    HloInstruction* key = scalarWord(0);
    const std::array<HloInstruction*, 2> keyWords = {low32(key), high32(key)};
    std::array<HloInstruction*, 3> schedule = {
        keyWords[0], keyWords[1],
        binary(HloOpcode::kXor, binary(HloOpcode::kXor, constant(kU32, kThreeFryParity), keyWords[0]), keyWords[1])};
    // The counter of each number: XLA's 32-bit generator pairs numbers along the split dimension.
    const bool wide = m_spec.bits == 64;
    const int split = wide || m_dims.empty() ? -1 : m_spec.threeFrySplitDimension();
    std::vector<int64_t> counted = m_dims;
    if (split >= 0) counted[static_cast<size_t>(split)] = (counted[static_cast<size_t>(split)] + 1) / 2;
    HloInstruction* counter =
        binary(HloOpcode::kAdd, spread(scalarWord(1)), linearIndex(rowMajorStrides(counted), split));
    std::array<HloInstruction*, 2> x = {binary(HloOpcode::kAdd, low32(counter), spread(schedule[0])),
                                        binary(HloOpcode::kAdd, high32(counter), spread(schedule[1]))};
    for (uint32_t group = 1; group <= 5; ++group) {
      const int* rotations = kThreeFryRotations + ((group - 1) % 2) * 4;
      for (int r = 0; r < 4; ++r) {
        x[0] = binary(HloOpcode::kAdd, x[0], x[1]);
        x[1] = binary(HloOpcode::kXor, rotateLeft(x[1], rotations[r]), x[0]);
      }
      x[0] = binary(HloOpcode::kAdd, x[0], spread(schedule[group % 3]));
      x[1] = binary(HloOpcode::kAdd, x[1], spread(addScalar(schedule[(group + 1) % 3], group)));
    }
    if (wide) return join(x[0], x[1]);
    if (split < 0) return x[0];
    return pick(withConstant(HloOpcode::kAnd, iota(split), 1), {x[0], x[1]});
  }

  HloInstruction* philoxBits() {
    HloInstruction* key = scalarWord(0);
    const std::array<HloInstruction*, 2> keyWords = {low32(key), high32(key)};
    const bool wide = m_spec.bits == 64;
    const int shift = wide ? 1 : 2;  // 2 or 4 numbers per counter
    HloInstruction* index = linearIndex(rowMajorStrides(m_dims), -1);
    auto [low, high] = counterPlus(spread(scalarWord(1)),
                                   spread(add("reshape", HloOpcode::kReshape, Shape::scalar(kU64), {highWord()})),
                                   withConstant(HloOpcode::kShiftRightLogical, index, static_cast<uint64_t>(shift)));
    std::array<HloInstruction*, 4> x = {low32(low), high32(low), low32(high), high32(high)};
    auto multiply = [&](HloInstruction* v, uint32_t m) {
      return withConstant(HloOpcode::kMultiply, convert(v, kU64), m);
    };
    for (int round = 0; round < kPhiloxRounds; ++round) {
      HloInstruction* k0 = spread(addScalar(keyWords[0], static_cast<uint32_t>(round * uint64_t{kPhiloxKeyStepA})));
      HloInstruction* k1 = spread(addScalar(keyWords[1], static_cast<uint32_t>(round * uint64_t{kPhiloxKeyStepB})));
      HloInstruction* p0 = multiply(x[0], kPhiloxMultiplierA);
      HloInstruction* p1 = multiply(x[2], kPhiloxMultiplierB);
      x = {binary(HloOpcode::kXor, binary(HloOpcode::kXor, high32(p1), x[1]), k0), low32(p1),
           binary(HloOpcode::kXor, binary(HloOpcode::kXor, high32(p0), x[3]), k1), low32(p0)};
    }
    HloInstruction* which = withConstant(HloOpcode::kAnd, index, wide ? 1 : 3);
    if (wide) return pick(which, {join(x[0], x[1]), join(x[2], x[3])});
    return pick(which, {x[0], x[1], x[2], x[3]});
  }

  HloInstruction* m_rng;
  HloComputation& m_computation;
  RngBitGeneratorSpec m_spec;
  std::vector<int64_t> m_dims;
};

}  // namespace

StatusOr<bool> RngBitGeneratorExpander::run(HloModule& module, PassContext&) {
  bool changed = false;
  for (const auto& computation : module.computations()) {
    std::vector<HloInstruction*> generators;
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() == HloOpcode::kRngBitGenerator) generators.push_back(inst.get());
    }
    for (HloInstruction* rng : generators) {
      StatusOr<RngBitGeneratorSpec> spec = rngBitGeneratorSpec(*rng);
      if (!spec.ok()) return Status::error(fmt::format("{}: {}", rng->name(), spec.message()));
      HloInstruction* replacement = Expansion(rng, *spec).expand();
      for (HloInstruction* pred : rng->controlPredecessors()) pred->addControlDependencyTo(replacement);
      for (HloInstruction* succ : rng->controlSuccessors()) replacement->addControlDependencyTo(succ);
      rng->dropAllControlDependencies();
      rng->replaceAllUsesWith(replacement);
      FS_RETURN_IF_ERROR(computation->removeInstruction(rng));
    }
    if (!generators.empty()) {
      changed = true;
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  return changed;
}

}  // namespace fusionscope::core
