#include "core/pipeline/fusion_comparison.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_utils.h"
#include "core/pipeline/fusion_correspondence.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_printer.h"

namespace fusionscope::core {
namespace {

constexpr int kUnmatched = -1;

// One compared op where it ends up: which group of its side, and the instruction matched across.
struct Occurrence {
  const HloInstruction* inst = nullptr;
  int group = 0;
  int identity = kUnmatched;
  bool byName = false;
  bool bySource = false;  // matched as part of one source op's expansion (matchBySourceOp)
  bool toPlumbing = false;  // no op of its own on the other side: a bitcast there, or folded into its user
};

struct Side {
  std::vector<ComparedGroup> groups;  // members filled once identities are known
  std::vector<Occurrence> ops;
};

void collectFused(const HloInstruction& fusion, int group, Side& side) {
  for (const HloInstruction* member : fusedInstructions(fusion)) {
    if (member->isFusion() && member->fusedComputation()) {
      collectFused(*member, group, side);
    } else if (isComparedOp(*member)) {
      side.ops.push_back({member, group});
    }
  }
}

Side collectSide(const HloModule& module) {
  Side side;
  for (const HloComputation* computation : computationsToFuseIn(module)) {
    for (const auto& inst : computation->instructions()) {
      bool fusion = inst->isFusion() && inst->fusedComputation();
      if (!fusion && !isComparedOp(*inst)) continue;
      int group = static_cast<int>(side.groups.size());
      side.groups.push_back({inst->name(), fusion, {}});
      if (fusion) {
        collectFused(*inst, group, side);
      } else {
        side.ops.push_back({inst.get(), group});
      }
    }
  }
  return side;
}

bool hasMetadata(const HloInstruction& inst) {
  return inst.metadata() && !inst.metadata()->empty();
}

// Two instructions with one normalized name are the same op when nothing else about them disagrees.
bool sameOpByName(const HloInstruction& x, const HloInstruction& y) {
  if (x.opcode() != y.opcode() || x.shape().toString(false) != y.shape().toString(false)) return false;
  return !hasMetadata(x) || !hasMetadata(y) || *x.metadata() == *y.metadata();
}

// Opcode, shape and the last component of op_name ("" without an op_name).
std::string looseKey(const HloInstruction& inst) {
  const std::string& opName = inst.metadata()->opName;
  if (opName.empty()) return "";
  return std::string(inst.opcodeString()) + " " + inst.shape().toString(false) + " " +
         opName.substr(opName.rfind('/') + 1);
}

size_t distinctNames(const std::vector<Occurrence*>& ops) {
  std::set<std::string> names;
  for (const Occurrence* op : ops) names.insert(normalizedInstructionName(op->inst->name()));
  return names.size();
}

// Gives every op of `a` and `b` that has a counterpart an identity shared with it; returns how many there are.
int matchIdentities(Side& a, Side& b) {
  int next = 0;
  std::map<std::string, std::vector<Occurrence*>> byNameB;
  for (Occurrence& op : b.ops) byNameB[normalizedInstructionName(op.inst->name())].push_back(&op);
  std::map<std::string, int> nameIdentity;
  for (Occurrence& op : a.ops) {
    std::string name = normalizedInstructionName(op.inst->name());
    auto found = byNameB.find(name);
    if (found == byNameB.end() || !sameOpByName(*op.inst, *found->second.front()->inst)) continue;
    auto [it, added] = nameIdentity.emplace(name, next);
    if (added) ++next;
    op.identity = it->second;
    op.byName = true;
    for (Occurrence* other : found->second) {
      if (!sameOpByName(*op.inst, *other->inst)) continue;
      other->identity = it->second;
      other->byName = true;
    }
  }
  // The rest by what they compute and where in the source they come from.
  std::map<std::string, std::vector<Occurrence*>> byKeyB;
  for (Occurrence& op : b.ops) {
    if (op.identity == kUnmatched && hasMetadata(*op.inst)) byKeyB[opKey(*op.inst)].push_back(&op);
  }
  std::map<std::string, int> keyIdentity;
  for (Occurrence& op : a.ops) {
    if (op.identity != kUnmatched || !hasMetadata(*op.inst)) continue;
    std::string key = opKey(*op.inst);
    auto found = byKeyB.find(key);
    if (found == byKeyB.end()) continue;
    auto [it, added] = keyIdentity.emplace(key, next);
    if (added) {
      ++next;
      for (Occurrence* other : found->second) other->identity = it->second;
    }
    op.identity = it->second;
  }
  // Last, ops whose metadata an inliner rewrote: XLA's call inliner prefixes the op_name of the call and merges
  // the stack frames (`mul`, frame 1 becomes `jit(f)/while/body/closed_call/mul`, frame 13), ours keeps the
  // callee's. Opcode, shape and the last component of op_name, when exactly one op (by name) on each side has them.
  std::map<std::string, std::vector<Occurrence*>> looseA;
  std::map<std::string, std::vector<Occurrence*>> looseB;
  for (auto [side, loose] : {std::pair{&a, &looseA}, std::pair{&b, &looseB}}) {
    for (Occurrence& op : side->ops) {
      if (op.identity == kUnmatched && hasMetadata(*op.inst)) (*loose)[looseKey(*op.inst)].push_back(&op);
    }
  }
  for (auto& [key, opsA] : looseA) {
    auto found = looseB.find(key);
    if (key.empty() || found == looseB.end() || distinctNames(opsA) != 1 || distinctNames(found->second) != 1) continue;
    for (Occurrence* op : opsA) op->identity = next;
    for (Occurrence* op : found->second) op->identity = next;
    ++next;
  }
  return next;
}

// ---- Matching by dataflow -------------------------------------------------------------------------------------
// What names and metadata leave unmatched (XLA renames what it fuses and rewrites what it inlines; JAX's helpers
// such as clip and where leave no op_name of their own) is matched by what an op computes from what: opcode, shape,
// attributes (names, metadata and called computations aside) and where each operand's value comes from. A value's
// origin looks through the plumbing the two compilers place differently: fusion parameters (the fusion's operand),
// get-tuple-element of tuples and multi-output fusions, bitcasts, copies, reshapes and transposes (XLA's layout
// assignment turns many of these into bitcasts or copies); it ends at an entry parameter (its number), a constant
// (its value), a loop's state (the origin of the loop's initial value) or a compared op (its identity, once it has
// one). Matching proceeds from the entry parameters and constants outwards until nothing more matches.

// The compared-op attributes that say what an op computes: everything the printer writes but names, metadata,
// called computations and backend hints.
std::string computingAttributes(const HloInstruction& inst) {
  const std::string text = printAttributes(inst);
  std::string kept;
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  auto keep = [&](size_t end) {
    std::string_view part = std::string_view(text).substr(start, end - start);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    const std::string_view key = part.substr(0, part.find('='));
    static const std::set<std::string_view> kIgnored = {
        "metadata", "to_apply", "calls", "body", "condition", "branch_computations", "true_computation",
        "false_computation", "backend_config", "frontend_attributes", "sharding", "statistics", "kind",
        "origin", "operand_precision", "precision_config", "algorithm"};
    if (!part.empty() && !kIgnored.count(key)) {
      kept += part;
      kept += ';';
    }
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) quoted = !quoted;
    if (quoted) continue;
    if (c == '{' || c == '(' || c == '[') ++depth;
    if (c == '}' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      keep(i);
      start = i + 1;
    }
  }
  keep(text.size());
  return kept;
}

// Where a computation's parameters get their values: the instruction that calls it (fusion, while, conditional,
// call) and, for a conditional's branch, which operand feeds it.
struct Caller {
  const HloInstruction* inst = nullptr;
  int operandBase = 0;  // parameter 0 of the computation is operand `operandBase` of the caller
  bool loop = false;    // a while's body or condition: parameter 0 is the loop state
};

// Origins as small integers, shared by the two sides of one comparison (equal keys, equal origins).
using Interner = std::unordered_map<std::string, int>;

class Dataflow {
 public:
  Dataflow(const HloModule& module, Side& side, Interner& interner) : m_interner(interner) {
    for (const auto& computation : module.computations()) {
      for (const auto& inst : computation->instructions()) {
        for (const HloComputation* called : inst->calledComputations()) {
          if (called == nullptr) continue;
          Caller caller{inst.get(), 0, inst->opcode() == HloOpcode::kWhile};
          if (inst->opcode() == HloOpcode::kConditional) {
            const std::vector<HloComputation*> branches = inst->calledComputations();
            caller.operandBase = static_cast<int>(std::find(branches.begin(), branches.end(), called) -
                                                  branches.begin()) + 1;
          }
          if (inst->opcode() == HloOpcode::kFusion || inst->opcode() == HloOpcode::kWhile ||
              inst->opcode() == HloOpcode::kConditional || inst->opcode() == HloOpcode::kCall) {
            m_callers.emplace(called, caller);
          }
        }
      }
    }
    for (Occurrence& op : side.ops) m_occurrence.emplace(op.inst, &op);
  }

  void startRound() { m_origins.clear(); }

  // The interned origin of `inst`'s value, or nullopt while it depends on an op with no identity yet.
  std::optional<int> origin(const HloInstruction* inst) {
    auto cached = m_origins.find(inst);
    if (cached != m_origins.end()) return cached->second;
    m_origins.emplace(inst, std::nullopt);  // cycles (none in valid HLO) end unknown
    std::optional<int> result = computeOrigin(inst);
    m_origins[inst] = result;
    return result;
  }

  // What `op` computes from what, or nullopt while an operand's origin is unknown. `withAttributes` false: a
  // looser signature for a second round (XLA rewrites some attributes: layouts, comparison types) that also leaves
  // out dimensions of size 1, which XLA adds and drops around ops (its dot decomposer gives a matrix-vector dot's
  // vector and result a trailing 1: f32[4,6,1] there, f32[4,6] here).
  std::optional<std::string> signature(const HloInstruction& op, bool withAttributes) {
    std::vector<int> operands;
    for (const HloInstruction* operand : op.operands()) {
      std::optional<int> o = origin(operand);
      if (!o) return std::nullopt;
      operands.push_back(*o);
    }
    if (isCommutativeBinary(op.opcode())) std::sort(operands.begin(), operands.end());
    std::string text = std::string(op.opcodeString()) + " ";
    if (withAttributes || !op.shape().isArray()) {
      text += op.shape().toString(false);
    } else {
      std::vector<int64_t> dims;
      for (int64_t d : op.shape().dimensions()) {
        if (d != 1) dims.push_back(d);
      }
      text += Shape(op.shape().elementType(), dims).toString(false);
    }
    if (withAttributes) text += " {" + computingAttributes(op) + "}";
    for (int o : operands) text += " " + std::to_string(o);
    return text;
  }

  // The origins of `op`'s operands, sorted; nullopt when one is unknown.
  std::optional<std::vector<int>> operandOrigins(const HloInstruction& op) {
    std::vector<int> origins;
    for (const HloInstruction* operand : op.operands()) {
      std::optional<int> o = origin(operand);
      if (!o) return std::nullopt;
      origins.push_back(*o);
    }
    std::sort(origins.begin(), origins.end());
    return origins;
  }

  const Occurrence* occurrenceOf(const HloInstruction* inst) const {
    auto found = m_occurrence.find(inst);
    return found == m_occurrence.end() ? nullptr : found->second;
  }

  int intern(const std::string& key) {
    auto [it, added] = m_interner.emplace(key, static_cast<int>(m_interner.size()));
    return it->second;
  }

 private:
  std::optional<int> computeOrigin(const HloInstruction* inst) {
    switch (inst->opcode()) {
      case HloOpcode::kBitcast:
      case HloOpcode::kCopy:
      case HloOpcode::kReshape:
      case HloOpcode::kTranspose: return origin(inst->operand(0));
      case HloOpcode::kConstant: {
        if (const std::string* value = valueKey(inst)) return intern(*value);
        std::string text = printInstruction(*inst);
        const size_t equals = text.find(" = ");
        const size_t metadata = text.find(", metadata=");
        text = text.substr(equals == std::string::npos ? 0 : equals + 3,
                           metadata == std::string::npos ? std::string::npos : metadata - equals - 3);
        // Layouts aside: `f32[2]{0} constant({1, 2})` and `f32[2] constant({1, 2})` are one value.
        return intern("const " + inst->shape().toString(false) + " " + text.substr(text.find(' ') + 1));
      }
      case HloOpcode::kParameter: return parameterOrigin(inst);
      case HloOpcode::kGetTupleElement: {
        const int64_t index = inst->attributes().tupleIndex.value_or(-1);
        const HloInstruction* tuple = throughPlumbing(inst->operand(0));
        if (tuple->opcode() == HloOpcode::kTuple && index >= 0 && index < tuple->operandCount()) {
          return origin(tuple->operand(static_cast<int>(index)));
        }
        if (std::optional<std::optional<int>> element = loopElementOrigin(tuple, index)) return *element;
        std::optional<int> whole = origin(tuple);
        if (!whole) return std::nullopt;
        return intern("gte " + std::to_string(index) + " " + std::to_string(*whole));
      }
      case HloOpcode::kTuple: {
        std::string key = "tuple";
        for (const HloInstruction* operand : inst->operands()) {
          std::optional<int> o = origin(operand);
          if (!o) return std::nullopt;
          key += " " + std::to_string(*o);
        }
        return intern(key);
      }
      case HloOpcode::kWhile: {
        std::optional<int> init = origin(inst->operand(0));
        if (!init) return std::nullopt;
        return intern("loop result " + std::to_string(*init));
      }
      default: break;
    }
    if (inst->isFusion() && inst->fusedComputation() && inst->fusedComputation()->root()) {
      return origin(inst->fusedComputation()->root());
    }
    if (const std::string* value = valueKey(inst)) return intern(*value);
    auto found = m_occurrence.find(inst);
    if (found == m_occurrence.end() || found->second->identity == kUnmatched) return std::nullopt;
    return intern("op " + std::to_string(found->second->identity));
  }

  const HloInstruction* throughPlumbing(const HloInstruction* inst) {
    while (inst->opcode() == HloOpcode::kBitcast || inst->opcode() == HloOpcode::kCopy) inst = inst->operand(0);
    if (inst->isFusion() && inst->fusedComputation() && inst->fusedComputation()->root()) {
      return throughPlumbing(inst->fusedComputation()->root());
    }
    if (inst->opcode() == HloOpcode::kParameter) {
      if (const HloInstruction* source = callerOperand(inst)) return throughPlumbing(source);
    }
    return inst;
  }

  // An element of a loop's state (a get-tuple-element of a while body's or condition's parameter, or of the while's
  // result) by where its initial value comes from, not by its index: XLA's while-loop simplifier and invariant code
  // motion drop and add state elements, so one value sits at another index on each side. The k-th element with one
  // initial value and shape is told from the others by k. nullopt when `tuple` is no loop state or its initial
  // tuple is not a tuple instruction (then the whole state is the origin, as before).
  std::optional<std::optional<int>> loopElementOrigin(const HloInstruction* tuple, int64_t index) {
    const LoopElement element = loopElement(tuple, index);
    if (!element.loop) return std::nullopt;
    std::optional<int> value = origin(element.initial);
    if (!value) return std::optional<int>();
    // An element the body passes on unchanged holds its initial value throughout (XLA's invariant code motion
    // widens loops with such elements: a constant the body reads arrives as loop state there).
    if (invariantLoopElement(*element.loop, index)) return std::optional<int>(*value);
    const Shape& shape = element.initial->shape();
    int earlier = 0;
    for (int64_t i = 0; i < index; ++i) {
      const HloInstruction* other = element.init->operand(static_cast<int>(i));
      std::optional<int> otherValue = origin(other);
      if (otherValue == value && other->shape().compatible(shape)) ++earlier;
    }
    const char* kind = tuple->opcode() == HloOpcode::kWhile ? "loop result element " : "loop state element ";
    return std::optional<int>(
        intern(kind + shape.toString(false) + " " + std::to_string(*value) + " #" + std::to_string(earlier)));
  }

  // Element `index` of a loop's state, when `tuple` is a while body's or condition's parameter or the while itself:
  // the while, its initial tuple and what that tuple holds there; all null otherwise (or when the initial state is
  // not a tuple instruction).
  struct LoopElement {
    const HloInstruction* loop = nullptr;
    const HloInstruction* init = nullptr;
    const HloInstruction* initial = nullptr;
  };
  LoopElement loopElement(const HloInstruction* tuple, int64_t index) {
    const HloInstruction* loop = nullptr;
    if (tuple->opcode() == HloOpcode::kWhile) {
      loop = tuple;
    } else if (tuple->opcode() == HloOpcode::kParameter) {
      auto caller = m_callers.find(tuple->parent());
      if (caller != m_callers.end() && caller->second.loop) loop = caller->second.inst;
    }
    if (!loop) return {};
    const HloInstruction* init = throughPlumbing(loop->operand(0));
    if (init->opcode() != HloOpcode::kTuple || index < 0 || index >= init->operandCount()) return {};
    return {loop, init, init->operand(static_cast<int>(index))};
  }

  // The operand that gives a parameter of a fusion, call or conditional branch its value; null for the entry's and
  // a loop's parameters.
  const HloInstruction* callerOperand(const HloInstruction* parameter) const {
    auto caller = m_callers.find(parameter->parent());
    if (caller == m_callers.end() || caller->second.loop) return nullptr;
    const int operand = caller->second.operandBase + static_cast<int>(parameter->parameterNumber());
    return operand < caller->second.inst->operandCount() ? caller->second.inst->operand(operand) : nullptr;
  }

  // A value known before the program runs (computed from constants and iotas alone, at most
  // kMaxFoldedElements elements), as "value TYPE[DIMS] v0 v1 ...", dimensions of size 1 left out; null otherwise.
  // Such a value is its own origin, however each compiler computes it: XLA computes a scatter's bounds {0, 5} in its
  // loop from an iota (invariant code motion hoisted it before constant folding), ours folds them to a constant.
  const std::string* valueKey(const HloInstruction* inst) {
    auto cached = m_values.find(inst);
    if (cached != m_values.end()) return cached->second ? &cached->second->first : nullptr;
    m_values.emplace(inst, std::nullopt);
    std::optional<Value> value = constantValue(inst);
    if (!value) return nullptr;
    std::string key = fmt::format("value {}[", primitiveTypeName(value->shape().elementType()));
    for (int64_t d : value->shape().dimensions()) {
      if (d != 1) key += fmt::format("{},", d);
    }
    key += "]";
    for (int64_t i = 0; i < value->elementCount(); ++i) {
      key += value->holdsFloats() ? fmt::format(" {}", value->doubleAt(i)) : fmt::format(" {}", value->int64At(i));
    }
    auto& slot = m_values[inst];
    slot.emplace(std::move(key), std::move(*value));
    return &slot->first;
  }

  std::optional<Value> constantValue(const HloInstruction* inst) {
    static constexpr int64_t kMaxFoldedElements = 1024;
    const Shape& shape = inst->shape();
    if (!shape.isArray() || shape.elementCount() > kMaxFoldedElements || isComplex(shape.elementType()) ||
        inst->hasSideEffect()) {
      return std::nullopt;
    }
    switch (inst->opcode()) {
      case HloOpcode::kParameter: {
        const HloInstruction* source = callerOperand(inst);
        return source ? known(source) : std::nullopt;
      }
      case HloOpcode::kGetTupleElement: {
        const int64_t index = inst->attributes().tupleIndex.value_or(-1);
        const HloInstruction* tuple = throughPlumbing(inst->operand(0));
        if (tuple->opcode() == HloOpcode::kTuple && index >= 0 && index < tuple->operandCount()) {
          return known(tuple->operand(static_cast<int>(index)));
        }
        const LoopElement element = loopElement(tuple, index);
        if (!element.loop || !invariantLoopElement(*element.loop, index)) return std::nullopt;
        return known(element.initial);
      }
      case HloOpcode::kFusion:
        if (!inst->fusedComputation() || !inst->fusedComputation()->root()) return std::nullopt;
        return known(inst->fusedComputation()->root());
      case HloOpcode::kWhile:
      case HloOpcode::kConditional:
      case HloOpcode::kCall:
      case HloOpcode::kCustomCall:
      case HloOpcode::kRng:
      case HloOpcode::kRngBitGenerator:
      case HloOpcode::kRngGetAndUpdateState: return std::nullopt;
      default: break;
    }
    std::vector<Value> operands;
    for (const HloInstruction* operand : inst->operands()) {
      std::optional<Value> value = known(operand);
      if (!value) return std::nullopt;
      operands.push_back(std::move(*value));
    }
    StatusOr<Value> value = evaluateInstruction(*inst, operands);
    if (!value.ok()) return std::nullopt;
    return std::move(*value);
  }

  // The value of `inst` when it is known before running (valueKey), else nullopt.
  std::optional<Value> known(const HloInstruction* inst) {
    if (!valueKey(inst)) return std::nullopt;
    return m_values.at(inst)->second;
  }

  // Whether a while's body returns element `index` of its state as it received it.
  static bool invariantLoopElement(const HloInstruction& loop, int64_t index) {
    const HloComputation* body = loop.calledComputation("body");
    if (!body || !body->root() || body->root()->opcode() != HloOpcode::kTuple ||
        index >= body->root()->operandCount()) {
      return false;
    }
    const HloInstruction* element = body->root()->operand(static_cast<int>(index));
    while (element->opcode() == HloOpcode::kBitcast || element->opcode() == HloOpcode::kCopy) {
      element = element->operand(0);
    }
    return element->opcode() == HloOpcode::kGetTupleElement && element->attributes().tupleIndex == index &&
           element->operand(0)->opcode() == HloOpcode::kParameter && element->operand(0)->parent() == body;
  }

  std::optional<int> parameterOrigin(const HloInstruction* inst) {
    auto caller = m_callers.find(inst->parent());
    if (caller == m_callers.end()) return intern("entry parameter " + std::to_string(inst->parameterNumber()));
    const Caller& c = caller->second;
    if (c.loop) {
      std::optional<int> init = origin(c.inst->operand(0));
      if (!init) return std::nullopt;
      return intern("loop state " + std::to_string(*init));
    }
    const HloInstruction* source = callerOperand(inst);
    return source ? origin(source) : std::nullopt;
  }

  Interner& m_interner;
  std::unordered_map<const HloComputation*, Caller> m_callers;
  std::unordered_map<const HloInstruction*, Occurrence*> m_occurrence;
  std::unordered_map<const HloInstruction*, std::optional<int>> m_origins;
  // valueKey's results: the key and the value, or nullopt for a value not known before running.
  std::unordered_map<const HloInstruction*, std::optional<std::pair<std::string, Value>>> m_values;
};

// Gives identities to the ops of `a` and `b` that compute the same thing from the same values, round after round
// until nothing changes; `next` is the next free identity. Ops with one signature on a side count as one op (copies
// of a duplicated producer; distinct ops that compute one value).
int matchByDataflow(const HloModule& moduleA, Side& a, const HloModule& moduleB, Side& b, int next) {
  Interner interner;
  Dataflow flowA(moduleA, a, interner);
  Dataflow flowB(moduleB, b, interner);
  for (bool withAttributes : {true, false}) {
    for (bool changed = true; changed;) {
      changed = false;
      flowA.startRound();
      flowB.startRound();
      std::map<std::string, std::vector<Occurrence*>> signaturesA;
      std::map<std::string, std::vector<Occurrence*>> signaturesB;
      // What the matched ops compute, by signature: an unmatched op computing one of those values is a duplicate
      // the other side merged (XLA's CSE and while-loop simplifier keep one `i + 1` where we have two).
      std::map<std::string, int> matchedValues;
      for (auto [side, flow, signatures] : {std::tuple{&a, &flowA, &signaturesA}, std::tuple{&b, &flowB, &signaturesB}}) {
        for (Occurrence& op : side->ops) {
          std::optional<std::string> sig = flow->signature(*op.inst, withAttributes);
          if (!sig) continue;
          if (op.identity != kUnmatched) {
            if (withAttributes) matchedValues.emplace(*sig, op.identity);
            continue;
          }
          (*signatures)[*sig].push_back(&op);
        }
      }
      for (auto* signatures : {&signaturesA, &signaturesB}) {
        for (auto it = signatures->begin(); it != signatures->end();) {
          auto value = matchedValues.find(it->first);
          if (value == matchedValues.end()) {
            ++it;
            continue;
          }
          for (Occurrence* op : it->second) op->identity = value->second;
          changed = true;
          it = signatures->erase(it);
        }
      }
      for (auto& [sig, opsA] : signaturesA) {
        auto found = signaturesB.find(sig);
        if (found == signaturesB.end()) continue;
        // Without attributes, only one op by name on each side: a looser key must not pair distinct ops.
        if (!withAttributes && (distinctNames(opsA) != 1 || distinctNames(found->second) != 1)) continue;
        for (Occurrence* op : opsA) op->identity = next;
        for (Occurrence* op : found->second) op->identity = next;
        ++next;
        changed = true;
      }
    }
  }
  return next;
}

// Ops that neither names nor dataflow match but that both sides made from one source op (an rng-bit-generator,
// a batch norm or a softmax each compiler expands its own way: XLA's and our expansions share the source op's
// metadata, not their ops): all of them, on both sides, become one identity, as copies of a duplicated op do. A copy
// joins only when the other side's ops of that source op move data too (a transpose or a copy: XLA writes a transpose
// as a copy into another layout). Else it computes nothing the other side computes (XLA's layout assignment copies
// each LAPACK operand into column-major order; lumped with the call's ops, those copies made pairs no fusion decision
// made) and matchToPlumbing takes it. An approximation: ops of two source ops with one name (two `mul`s left
// unmatched) become one identity too.
bool matchBySourceOp(Side& a, Side& b, int& next) {
  // The last component of op_name: XLA's call inliner prefixes the caller's path (`jit(f)/jit(_uniform)/
  // rng_bit_generator` for our `rng_bit_generator`) and replaces source lines by stack frames.
  auto sourceKey = [](const HloInstruction& inst) -> std::string {
    if (!hasMetadata(inst) || inst.metadata()->opName.empty()) return "";
    const std::string& opName = inst.metadata()->opName;
    return opName.substr(opName.rfind('/') + 1);
  };
  std::map<std::string, std::vector<Occurrence*>> keysA;
  std::map<std::string, std::vector<Occurrence*>> keysB;
  for (auto [side, keys] : {std::pair{&a, &keysA}, std::pair{&b, &keysB}}) {
    for (Occurrence& op : side->ops) {
      if (op.identity != kUnmatched) continue;
      if (std::string key = sourceKey(*op.inst); !key.empty()) (*keys)[key].push_back(&op);
    }
  }
  auto isCopy = [](const Occurrence* op) { return op->inst->opcode() == HloOpcode::kCopy; };
  auto movesData = [&](const std::vector<Occurrence*>& ops) {
    return std::any_of(ops.begin(), ops.end(),
                       [&](const Occurrence* op) { return isCopy(op) || op->inst->opcode() == HloOpcode::kTranspose; });
  };
  bool changed = false;
  for (auto& [key, opsA] : keysA) {
    auto found = keysB.find(key);
    if (found == keysB.end()) continue;
    // The members on each side: copies only where the other side's ops of the source op move data.
    auto members = [&](const std::vector<Occurrence*>& ops, const std::vector<Occurrence*>& other) {
      const bool copiesJoin = movesData(other);
      std::vector<Occurrence*> result;
      for (Occurrence* op : ops) {
        if (!isCopy(op) || copiesJoin) result.push_back(op);
      }
      return result;
    };
    const std::vector<Occurrence*> membersA = members(opsA, found->second);
    const std::vector<Occurrence*> membersB = members(found->second, opsA);
    if (membersA.empty() || membersB.empty()) continue;
    for (const std::vector<Occurrence*>* group : {&membersA, &membersB}) {
      for (Occurrence* op : *group) op->identity = next, op->bySource = true;
    }
    ++next;
    changed = true;
  }
  return changed;
}

// Ops still unmatched that have a counterpart which is not an op of its own: a copy of a value (XLA's copy insertion
// for loop state and layouts; a copy computes nothing), a reshape or transpose the other side made a bitcast (same
// operand origin, same dimensions: layout assignment does this), or an op the other side
// folded into its user (a transpose of a dot's result becomes the dot's own output order: our dot's user is
// matched to a dot there that reads the dot's operands directly). They count as matched and take no part in the
// pair counts (the user's identity, when folded).
// The compared ops that read `inst`'s value: through fusion parameters, bitcasts and copies.
std::vector<const HloInstruction*> effectiveUsers(const HloInstruction& inst) {
  std::vector<const HloInstruction*> result;
  for (const HloInstruction* user : inst.users()) {
    if (user->isFusion() && user->fusedComputation()) {
      for (int i = 0; i < user->operandCount(); ++i) {
        if (user->operand(i) != &inst) continue;
        for (const HloInstruction* parameter : user->fusedComputation()->parameters()) {
          if (parameter != nullptr && parameter->parameterNumber() == i) {
            std::vector<const HloInstruction*> inner = effectiveUsers(*parameter);
            result.insert(result.end(), inner.begin(), inner.end());
          }
        }
      }
    } else if (user->opcode() == HloOpcode::kBitcast || user->opcode() == HloOpcode::kCopy) {
      std::vector<const HloInstruction*> inner = effectiveUsers(*user);
      result.insert(result.end(), inner.begin(), inner.end());
    } else {
      result.push_back(user);
    }
  }
  return result;
}

// "value type elements" of a broadcast of a one-element constant, else nullopt.
std::optional<std::string> constantBroadcastKey(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kBroadcast || inst.operandCount() != 1 || !inst.shape().isArray()) {
    return std::nullopt;
  }
  const HloInstruction& constant = *inst.operand(0);
  if (constant.opcode() != HloOpcode::kConstant || !constant.shape().isArray() ||
      constant.shape().elementCount() != 1 || !constant.literal()) {
    return std::nullopt;
  }
  const Literal& literal = *constant.literal();
  if (literal.kind() != Literal::Kind::kFloat && literal.kind() != Literal::Kind::kInteger) return std::nullopt;
  if (literal.valueCount() != 1) return std::nullopt;
  return fmt::format("{} {} {}", literal.asDouble(0), primitiveTypeName(inst.shape().elementType()),
                     inst.shape().elementCount());
}

void matchToPlumbing(const HloModule& moduleA, Side& a, const HloModule& moduleB, Side& b) {
  Interner interner;
  Dataflow flowA(moduleA, a, interner);
  Dataflow flowB(moduleB, b, interner);
  auto bitcastKeys = [](const HloModule& module, Dataflow& flow) {
    std::set<std::string> keys;
    for (const auto& computation : module.computations()) {
      for (const auto& inst : computation->instructions()) {
        if (inst->opcode() != HloOpcode::kBitcast && inst->opcode() != HloOpcode::kCopy) continue;
        if (std::optional<int> o = flow.origin(inst->operand(0))) {
          keys.insert(inst->shape().toString(false) + " " + std::to_string(*o));
        }
      }
    }
    return keys;
  };
  // Each matched op's operand origins, by identity, on each side.
  auto originsByIdentity = [](Side& side, Dataflow& flow) {
    std::map<int, std::vector<std::vector<int>>> byIdentity;
    for (Occurrence& op : side.ops) {
      if (op.identity == kUnmatched) continue;
      if (auto origins = flow.operandOrigins(*op.inst)) byIdentity[op.identity].push_back(*origins);
    }
    return byIdentity;
  };
  // Broadcasts of one-element constants by value, element type and element count: XLA drops or adds dimensions of
  // size 1 around them ([32,1] here is [32] there), and neither side's metadata names them.
  auto constantBroadcastKeys = [](const HloModule& module) {
    std::set<std::string> keys;
    for (const auto& computation : module.computations()) {
      for (const auto& inst : computation->instructions()) {
        if (std::optional<std::string> key = constantBroadcastKey(*inst)) keys.insert(*key);
      }
    }
    return keys;
  };
  const std::set<std::string> constantBroadcastsA = constantBroadcastKeys(moduleA);
  const std::set<std::string> constantBroadcastsB = constantBroadcastKeys(moduleB);
  // The identities the matched broadcasts of one constant value have on each side, by that key.
  auto constantBroadcastIdentities = [](const Side& side) {
    std::map<std::string, std::set<int>> identities;
    for (const Occurrence& op : side.ops) {
      if (op.identity == kUnmatched) continue;
      if (std::optional<std::string> key = constantBroadcastKey(*op.inst)) identities[*key].insert(op.identity);
    }
    return identities;
  };
  const auto broadcastIdentitiesA = constantBroadcastIdentities(a);
  const auto broadcastIdentitiesB = constantBroadcastIdentities(b);
  const std::set<std::string> bitcastsA = bitcastKeys(moduleA, flowA);
  const std::set<std::string> bitcastsB = bitcastKeys(moduleB, flowB);
  const auto originsA = originsByIdentity(a, flowA);
  const auto originsB = originsByIdentity(b, flowB);
  for (auto [side, flow, otherBitcasts, otherOrigins, otherConstantBroadcasts, otherBroadcastIdentities] :
       {std::tuple{&a, &flowA, &bitcastsB, &originsB, &constantBroadcastsB, &broadcastIdentitiesB},
        std::tuple{&b, &flowB, &bitcastsA, &originsA, &constantBroadcastsA, &broadcastIdentitiesA}}) {
    for (Occurrence& op : side->ops) {
      if (op.identity != kUnmatched) continue;
      const HloOpcode opcode = op.inst->opcode();
      // The same constant spread to a shape that differs only in dimensions of size 1. When the other side's
      // broadcasts of it are one matched op, this one is a copy of that op (XLA's CSE made one broadcast of what JAX
      // wrote twice, [8,1] and [8]): it takes that identity and its pairs count; else it is plumbing.
      if (std::optional<std::string> key = constantBroadcastKey(*op.inst);
          key && otherConstantBroadcasts->count(*key)) {
        auto identities = otherBroadcastIdentities->find(*key);
        if (identities != otherBroadcastIdentities->end() && identities->second.size() == 1) {
          op.identity = *identities->second.begin();
        } else {
          op.toPlumbing = true;
        }
        continue;
      }
      // A copy the other side does not make (XLA's copy insertion for loop state and layouts): the same value.
      if (opcode == HloOpcode::kCopy && flow->origin(op.inst->operand(0))) {
        op.toPlumbing = true;
        continue;
      }
      if ((opcode == HloOpcode::kReshape || opcode == HloOpcode::kTranspose || opcode == HloOpcode::kCopy) &&
          op.inst->operandCount() == 1) {
        std::optional<int> o = flow->origin(op.inst->operand(0));
        if (o && otherBitcasts->count(op.inst->shape().toString(false) + " " + std::to_string(*o))) {
          op.toPlumbing = true;
          continue;
        }
      }
      // Folded into its user: the one user is matched, and its counterpart reads this op's operands directly.
      std::vector<const HloInstruction*> users = effectiveUsers(*op.inst);
      if (users.size() != 1) continue;
      const Occurrence* user = flow->occurrenceOf(users.front());
      std::optional<std::vector<int>> mine = flow->operandOrigins(*op.inst);
      if (user == nullptr || user->identity == kUnmatched || !mine) continue;
      auto counterpart = otherOrigins->find(user->identity);
      if (counterpart == otherOrigins->end()) continue;
      for (const std::vector<int>& theirs : counterpart->second) {
        if (theirs == *mine) {
          op.toPlumbing = true;
          break;
        }
      }
    }
  }
}

ComparedSide countSide(const Side& side) {
  ComparedSide counts;
  counts.ops = static_cast<int64_t>(side.ops.size());
  std::set<std::string> listed;
  std::map<std::string, int64_t> kinds;
  for (const Occurrence& op : side.ops) {
    if (op.toPlumbing) {
      ++counts.matched;
      ++counts.matchedToPlumbing;
      continue;
    }
    if (op.identity == kUnmatched) {
      ++kinds[std::string(op.inst->opcodeString())];
      std::string name = normalizedInstructionName(op.inst->name());
      if (listed.insert(name).second) counts.unmatched.push_back({name, std::string(op.inst->opcodeString()), ""});
      continue;
    }
    ++counts.matched;
    if (op.byName) ++counts.matchedByName;
    if (op.bySource) ++counts.matchedBySource;
  }
  counts.unmatchedByKind.assign(kinds.begin(), kinds.end());
  std::stable_sort(counts.unmatchedByKind.begin(), counts.unmatchedByKind.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  counts.groups = static_cast<int64_t>(side.groups.size());
  counts.fusions = std::count_if(side.groups.begin(), side.groups.end(), [](const auto& g) { return g.fusion; });
  return counts;
}

// Every unordered pair of distinct identities that some group of the side holds together.
std::set<std::pair<int, int>> fusedPairs(const Side& side) {
  std::vector<std::set<int>> members(side.groups.size());
  for (const Occurrence& op : side.ops) {
    if (op.identity != kUnmatched) members[static_cast<size_t>(op.group)].insert(op.identity);
  }
  std::set<std::pair<int, int>> pairs;
  for (const std::set<int>& group : members) {
    for (auto i = group.begin(); i != group.end(); ++i) {
      for (auto j = std::next(i); j != group.end(); ++j) pairs.emplace(*i, *j);
    }
  }
  return pairs;
}

int findRoot(std::vector<int>& parent, int x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

// The name of each identity on one side (its first occurrence), for ComparedMember::counterpart.
std::vector<std::string> identityNames(const Side& side, int identities) {
  std::vector<std::string> names(static_cast<size_t>(identities));
  for (const Occurrence& op : side.ops) {
    if (op.identity != kUnmatched && names[static_cast<size_t>(op.identity)].empty()) {
      names[static_cast<size_t>(op.identity)] = op.inst->name();
    }
  }
  return names;
}

void fillMembers(Side& side, const std::vector<std::string>& otherNames) {
  for (const Occurrence& op : side.ops) {
    std::string counterpart = op.identity == kUnmatched ? "" : otherNames[static_cast<size_t>(op.identity)];
    side.groups[static_cast<size_t>(op.group)].members.push_back(
        {op.inst->name(), std::string(op.inst->opcodeString()), std::move(counterpart)});
  }
}

std::vector<FusionDecision> decisionsAbout(const PipelineRun& run, const GroupDifference& difference) {
  std::set<std::string> names;
  for (const ComparedGroup& group : difference.a) {
    names.insert(group.name);
    for (const ComparedMember& member : group.members) names.insert(member.name);
  }
  std::vector<FusionDecision> decisions;
  std::set<std::string> seen;
  for (const PassRun& pass : run.passes) {
    for (const FusionDecision& decision : pass.decisions) {
      if (!names.count(decision.producer) || !names.count(decision.consumer)) continue;
      if (seen.insert(decision.pass + "\n" + decision.reason).second) decisions.push_back(decision);
    }
  }
  return decisions;
}

}  // namespace

std::string normalizedInstructionName(std::string_view name) {
  for (;;) {
    size_t dot = name.rfind('.');
    if (dot == std::string_view::npos) break;
    std::string_view tail = name.substr(dot + 1);
    if (tail == "clone") {
      name = name.substr(0, dot);
      continue;
    }
    // `.N` after `.clone`: the clone's own numbering.
    bool digits = !tail.empty() && std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; });
    std::string_view head = name.substr(0, dot);
    if (digits && head.size() >= 6 && head.substr(head.size() - 6) == ".clone") {
      name = head.substr(0, head.size() - 6);
      continue;
    }
    break;
  }
  return std::string(name);
}

namespace {

// A reshape that only adds or drops dimensions of size 1 keeps every element at its place in any layout: it is a
// bitcast (XLA makes it one, or removes it with the reshape that undoes it), never work.
bool onlyAddsOrDropsUnitDimensions(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kReshape || inst.operandCount() != 1 || !inst.shape().isArray() ||
      !inst.operand(0)->shape().isArray()) {
    return false;
  }
  auto withoutOnes = [](const Shape& shape) {
    std::vector<int64_t> dims;
    for (int64_t d : shape.dimensions()) {
      if (d != 1) dims.push_back(d);
    }
    return dims;
  };
  return withoutOnes(inst.shape()) == withoutOnes(inst.operand(0)->shape());
}

// A transpose whose result layout keeps every element where it was in memory (f32[48,48]{0,1} of a {1,0} operand,
// dimensions={1,0}) moves nothing: XLA makes it a bitcast once layouts are assigned. Dimensions of size 1 are
// ignored; without layouts on both sides it is a real transpose.
bool transposeIsBitcast(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kTranspose || inst.operandCount() != 1 || !inst.shape().isArray()) return false;
  const Shape& in = inst.operand(0)->shape();
  const Shape& out = inst.shape();
  const auto& permutation = inst.attributes().dimensions;
  if (!in.isArray() || !in.layout() || !out.layout() || !permutation ||
      static_cast<int>(permutation->size()) != out.rank() || in.rank() != out.rank()) {
    return false;
  }
  // Input dimensions from minor to major as they lie in memory, on each side, size-1 dimensions skipped.
  std::vector<int64_t> inOrder;
  for (int64_t d : in.layout()->minorToMajor) {
    if (d < 0 || d >= in.rank()) return false;
    if (in.dimension(static_cast<int>(d)) != 1) inOrder.push_back(d);
  }
  std::vector<int64_t> outOrder;
  for (int64_t d : out.layout()->minorToMajor) {
    if (d < 0 || d >= out.rank()) return false;
    const int64_t source = (*permutation)[static_cast<size_t>(d)];
    if (source < 0 || source >= in.rank()) return false;
    if (in.dimension(static_cast<int>(source)) != 1) outOrder.push_back(source);
  }
  return inOrder == outOrder;
}

}  // namespace

bool isComparedOp(const HloInstruction& inst) {
  if (onlyAddsOrDropsUnitDimensions(inst) || transposeIsBitcast(inst)) return false;
  switch (inst.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kBitcast:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall: return false;
    default: return !(inst.isFusion() && inst.fusedComputation());
  }
}

bool FusionComparison::coverageSufficient() const {
  return a.matchedFraction() >= kCoverageForAgreement && b.matchedFraction() >= kCoverageForAgreement;
}

std::string FusionComparison::coverageShortfall() const {
  if (coverageSufficient()) return "";
  return fmt::format(
      "no agreement figure: {:.1f}% of A's ops and {:.1f}% of B's have a counterpart ({:.0f}% needed); the pair counts "
      "see only the matched ops",
      100 * a.matchedFraction(), 100 * b.matchedFraction(), 100 * kCoverageForAgreement);
}

std::optional<double> FusionComparison::precision() const {
  if (!coverageSufficient() || pairsBoth + pairsOnlyA == 0) return std::nullopt;
  return static_cast<double>(pairsBoth) / static_cast<double>(pairsBoth + pairsOnlyA);
}

std::optional<double> FusionComparison::recall() const {
  if (!coverageSufficient() || pairsBoth + pairsOnlyB == 0) return std::nullopt;
  return static_cast<double>(pairsBoth) / static_cast<double>(pairsBoth + pairsOnlyB);
}

std::string comparedGroupText(const ComparedGroup& group, bool showCounterpart) {
  std::string text = group.fusion ? group.name + ":" : group.name;
  if (!group.fusion) {
    if (group.members.empty()) return text;
    const ComparedMember& member = group.members.front();
    if (member.counterpart.empty()) return text + "*";
    if (showCounterpart && member.counterpart != member.name) text += "=" + member.counterpart;
    return text;
  }
  for (const ComparedMember& member : group.members) {
    text += " " + member.name;
    if (member.counterpart.empty()) {
      text += "*";
    } else if (showCounterpart && member.counterpart != member.name) {
      text += "=" + member.counterpart;
    }
  }
  return text;
}

FusionComparison compareFusions(const HloModule& a, const HloModule& b, const PipelineRun* run) {
  Side sideA = collectSide(a);
  Side sideB = collectSide(b);
  int identities = matchByDataflow(a, sideA, b, sideB, matchIdentities(sideA, sideB));
  while (matchBySourceOp(sideA, sideB, identities)) identities = matchByDataflow(a, sideA, b, sideB, identities);
  matchToPlumbing(a, sideA, b, sideB);
  FusionComparison result;
  result.a = countSide(sideA);
  result.b = countSide(sideB);

  std::set<std::pair<int, int>> pairsA = fusedPairs(sideA);
  std::set<std::pair<int, int>> pairsB = fusedPairs(sideB);
  std::vector<std::pair<int, int>> onlyA;
  std::vector<std::pair<int, int>> onlyB;
  std::set_difference(pairsA.begin(), pairsA.end(), pairsB.begin(), pairsB.end(), std::back_inserter(onlyA));
  std::set_difference(pairsB.begin(), pairsB.end(), pairsA.begin(), pairsA.end(), std::back_inserter(onlyB));
  result.pairsOnlyA = static_cast<int64_t>(onlyA.size());
  result.pairsOnlyB = static_cast<int64_t>(onlyB.size());
  result.pairsBoth = static_cast<int64_t>(pairsA.size()) - result.pairsOnlyA;

  // Components of groups linked by a shared matched instruction: A's groups are 0..nA-1, B's follow.
  const int groupsA = static_cast<int>(sideA.groups.size());
  std::vector<int> parent(sideA.groups.size() + sideB.groups.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> someGroup(static_cast<size_t>(identities), -1);
  auto link = [&](const Occurrence& op, int offset) {
    if (op.identity == kUnmatched) return;
    int node = op.group + offset;
    int& first = someGroup[static_cast<size_t>(op.identity)];
    if (first < 0) {
      first = node;
    } else {
      parent[static_cast<size_t>(findRoot(parent, node))] = findRoot(parent, first);
    }
  };
  for (const Occurrence& op : sideA.ops) link(op, 0);
  for (const Occurrence& op : sideB.ops) link(op, groupsA);

  std::map<int, std::pair<int64_t, int64_t>> differing;  // component root -> pairs only in A, only in B
  for (const auto& pair : onlyA) differing[findRoot(parent, someGroup[static_cast<size_t>(pair.first)])].first++;
  for (const auto& pair : onlyB) differing[findRoot(parent, someGroup[static_cast<size_t>(pair.first)])].second++;
  if (differing.empty()) return result;

  const std::vector<std::string> namesA = identityNames(sideA, identities);
  const std::vector<std::string> namesB = identityNames(sideB, identities);
  fillMembers(sideA, namesB);
  fillMembers(sideB, namesA);
  auto pairNames = [&](const std::pair<int, int>& pair) {
    auto name = [&](int identity) {
      const std::string& a = namesA[static_cast<size_t>(identity)];
      return a.empty() ? namesB[static_cast<size_t>(identity)] : a;
    };
    std::pair<std::string, std::string> names{name(pair.first), name(pair.second)};
    if (names.second < names.first) std::swap(names.first, names.second);
    return names;
  };
  std::map<int, size_t> differenceOf;  // component root -> index in result.differences, in A's text order
  for (int node = 0; node < static_cast<int>(parent.size()); ++node) {
    int root = findRoot(parent, node);
    auto counts = differing.find(root);
    if (counts == differing.end()) continue;
    auto [it, added] = differenceOf.emplace(root, result.differences.size());
    if (added) {
      result.differences.emplace_back();
      result.differences.back().pairsOnlyA = counts->second.first;
      result.differences.back().pairsOnlyB = counts->second.second;
      for (const auto& pair : onlyA) {
        if (findRoot(parent, someGroup[static_cast<size_t>(pair.first)]) == root) {
          result.differences.back().onlyA.push_back(pairNames(pair));
        }
      }
      for (const auto& pair : onlyB) {
        if (findRoot(parent, someGroup[static_cast<size_t>(pair.first)]) == root) {
          result.differences.back().onlyB.push_back(pairNames(pair));
        }
      }
      std::sort(result.differences.back().onlyA.begin(), result.differences.back().onlyA.end());
      std::sort(result.differences.back().onlyB.begin(), result.differences.back().onlyB.end());
    }
    GroupDifference& difference = result.differences[it->second];
    if (node < groupsA) {
      difference.a.push_back(std::move(sideA.groups[static_cast<size_t>(node)]));
    } else {
      difference.b.push_back(std::move(sideB.groups[static_cast<size_t>(node - groupsA)]));
    }
  }
  if (run) {
    for (GroupDifference& difference : result.differences) difference.decisions = decisionsAbout(*run, difference);
  }
  return result;
}

}  // namespace fusionscope::core
