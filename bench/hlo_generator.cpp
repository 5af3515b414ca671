#include "bench/hlo_generator.h"

#include <array>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "bench/bench_support.h"

namespace fusionscope::bench {
namespace {

// `f32[128,256]{1,0}`; scalars print as `f32[]` like XLA.
std::string arrayShape(std::string_view type, std::initializer_list<int64_t> dims) {
  std::string s(type);
  s += '[';
  bool first = true;
  for (int64_t d : dims) {
    if (!first) s += ',';
    first = false;
    s += std::to_string(d);
  }
  s += ']';
  if (dims.size() > 0) {
    s += '{';
    for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
      s += std::to_string(i);
      if (i > 0) s += ',';
    }
    s += '}';
  }
  return s;
}

struct Value {
  std::string name;
  std::string shape;
};

std::string operands(std::initializer_list<const Value*> values) {
  std::string s;
  for (const Value* v : values) {
    if (!s.empty()) s += ", ";
    s += v->shape;
    s += " %";
    s += v->name;
  }
  return s;
}

// One "model width": activations are f32[m,n], the bias f32[n], the weight f32[n,n].
struct Family {
  int64_t m = 0;
  int64_t n = 0;
  Value bias;
  Value weight;
  Value current;
  std::vector<Value> history;  // earlier layer outputs, for residual connections
};

constexpr std::array<std::string_view, 4> kScopes = {"attention", "mlp", "layer_norm", "output"};
constexpr std::array<std::string_view, 4> kSourceFiles = {
    "/workspace/model/transformer.py", "/workspace/model/layers.py",
    "/usr/lib/python3/site-packages/torch/nn/functional.py", "/workspace/train.py"};

class Generator {
 public:
  Generator(int64_t target, uint64_t seed) : m_target(target), m_rng(seed) {}

  GeneratedHlo run() {
    std::string reducers;
    m_addReducer = reducer(reducers, "add_reducer", "add");
    m_maxReducer = reducer(reducers, "max_reducer", "maximum");
    m_minReducer = reducer(reducers, "min_reducer", "minimum");

    // ENTRY parameters: per family an input, a bias and a weight.
    constexpr std::array<std::array<int64_t, 2>, 5> kWidths = {
        {{64, 128}, {128, 256}, {256, 512}, {32, 1024}, {128, 128}}};
    std::string layout = "{(";
    int64_t param = 0;
    for (const auto& [m, n] : kWidths) {
      Family f;
      f.m = m;
      f.n = n;
      f.current = parameter(arrayShape("f32", {m, n}), param++, layout);
      f.bias = parameter(arrayShape("f32", {n}), param++, layout);
      f.weight = parameter(arrayShape("f32", {n, n}), param++, layout);
      m_families.push_back(std::move(f));
    }
    layout += ")->(";

    // One root tuple (1 instruction) closes the entry; every layer adds about 30 (entry + fused).
    while (m_count + 1 < m_target) {
      Family& f = m_families[static_cast<size_t>(m_rng.uniform(static_cast<int64_t>(m_families.size())))];
      layer(f);
    }

    std::string rootShape = "(";
    std::string rootOperands;
    for (size_t i = 0; i < m_families.size(); ++i) {
      if (i > 0) {
        rootShape += ", ";
        layout += ", ";
      }
      rootShape += m_families[i].current.shape;
      layout += m_families[i].current.shape;
      if (i > 0) rootOperands += ", ";
      rootOperands += operands({&m_families[i].current});
    }
    rootShape += ")";
    layout += ")}";
    emit(m_entry, newName("tuple"), rootShape, "tuple", rootOperands, "", "", /*root=*/true);

    GeneratedHlo out;
    out.text.reserve(reducers.size() + m_fused.size() + m_entry.size() + m_entryParams.size() + 512);
    out.text += "HloModule bench_generated_";
    out.text += std::to_string(m_target);
    out.text += ", entry_computation_layout=";
    out.text += layout;
    out.text += "\n\n";
    out.text += reducers;
    out.text += m_fused;
    out.text += "ENTRY %main.0 (";
    out.text += m_entrySignature;
    out.text += ") -> ";
    out.text += rootShape;
    out.text += " {\n";
    out.text += m_entryParams;
    out.text += m_entry;
    out.text += "}\n";
    out.instructionCount = m_count;
    out.computationCount = 3 + m_fusions + 1;
    out.fusionCount = m_fusions;
    return out;
  }

 private:
  std::string newName(std::string_view base) {
    std::string s(base);
    s += '.';
    s += std::to_string(m_nextId++);
    return s;
  }

  // `  [ROOT ]%NAME = SHAPE OPCODE(OPERANDS)[, ATTRS][, metadata={...}]`
  Value emit(std::string& out, std::string name, std::string shape, std::string_view opcode,
             std::string_view operandText, std::string_view attrs, std::string_view opType, bool root = false) {
    out += root ? "  ROOT %" : "  %";
    out += name;
    out += " = ";
    out += shape;
    out += ' ';
    out += opcode;
    out += '(';
    out += operandText;
    out += ')';
    if (!attrs.empty()) {
      out += ", ";
      out += attrs;
    }
    if (!opType.empty() && m_rng.chance(88)) {
      out += ", metadata={op_type=\"";
      out += opType;
      out += "\" op_name=\"jit(train_step)/jit(main)/transformer/layer_";
      out += std::to_string(m_layer);
      out += '/';
      out += m_scope;
      out += '/';
      out += opType;
      out += "\" source_file=\"";
      out += m_rng.pick(kSourceFiles);
      out += "\" source_line=";
      out += std::to_string(20 + m_rng.uniform(1980));
      out += '}';
    }
    out += '\n';
    ++m_count;
    return Value{std::move(name), std::move(shape)};
  }

  Value op(std::string& out, std::string_view opcode, std::string shape, std::initializer_list<const Value*> args,
           std::string_view attrs, std::string_view opType, bool root = false) {
    return emit(out, newName(opcode), std::move(shape), opcode, operands(args), attrs, opType, root);
  }

  Value constant(std::string& out, std::string_view literal) {
    return emit(out, newName("constant"), "f32[]", "constant", literal, "", "", false);
  }

  Value parameter(std::string shape, int64_t number, std::string& layout) {
    std::string name = "Arg_" + std::to_string(number) + "." + std::to_string(m_nextId++);
    if (number > 0) {
      m_entrySignature += ", ";
      layout += ", ";
    }
    m_entrySignature += name + ": " + shape;
    layout += shape;
    return emit(m_entryParams, std::move(name), std::move(shape), "parameter", std::to_string(number), "", "");
  }

  std::string reducer(std::string& out, std::string_view name, std::string_view opcode) {
    std::string comp = std::string(name) + "." + std::to_string(m_nextId++);
    std::string x = newName("x");
    std::string y = newName("y");
    out += "%" + comp + " (" + x + ": f32[], " + y + ": f32[]) -> f32[] {\n";
    Value vx = emit(out, x, "f32[]", "parameter", "0", "", "");
    Value vy = emit(out, y, "f32[]", "parameter", "1", "", "");
    op(out, opcode, "f32[]", {&vx, &vy}, "", "", true);
    out += "}\n\n";
    return comp;
  }

  // A kLoop fusion: out = max(p0 * broadcast(p1) + broadcast(p2), 0) with p0 f32[m,n], p1 f32[m], p2 f32[n].
  std::string loopFusionComputation(const Family& f, const Value& a, const Value& b, const Value& c) {
    std::string comp = newName("fused_computation");
    std::string body;
    std::string mn = arrayShape("f32", {f.m, f.n});
    Value p0 = emit(body, newName("param_0"), a.shape, "parameter", "0", "", "");
    Value p1 = emit(body, newName("param_1"), b.shape, "parameter", "1", "", "");
    Value p2 = emit(body, newName("param_2"), c.shape, "parameter", "2", "", "");
    Value b1 = op(body, "broadcast", mn, {&p1}, "dimensions={0}", "aten__expand");
    Value b2 = op(body, "broadcast", mn, {&p2}, "dimensions={1}", "aten__expand");
    Value mul = op(body, "multiply", mn, {&p0, &b1}, "", "aten__mul");
    Value add = op(body, "add", mn, {&mul, &b2}, "", "aten__add");
    Value zero = constant(body, "0");
    Value bz = op(body, "broadcast", mn, {&zero}, "dimensions={}", "aten__relu");
    op(body, "maximum", mn, {&add, &bz}, "", "aten__relu", true);
    m_fused += "%" + comp + " (" + p0.name + ": " + p0.shape + ", " + p1.name + ": " + p1.shape + ", " + p2.name +
               ": " + p2.shape + ") -> " + mn + " {\n" + body + "}\n\n";
    return comp;
  }

  // A kInput (reduction) fusion: out = reduce(exp(p0), 0, dims={1}, add) with p0 f32[m,n].
  std::string inputFusionComputation(const Family& f, const Value& a) {
    std::string comp = newName("fused_computation");
    std::string body;
    std::string mn = arrayShape("f32", {f.m, f.n});
    Value p0 = emit(body, newName("param_0"), a.shape, "parameter", "0", "", "");
    Value e = op(body, "exponential", mn, {&p0}, "", "aten__exp");
    Value zero = constant(body, "0");
    op(body, "reduce", arrayShape("f32", {f.m}), {&e, &zero}, "dimensions={1}, to_apply=%" + m_addReducer, "aten__sum",
       true);
    m_fused +=
        "%" + comp + " (" + p0.name + ": " + p0.shape + ") -> " + arrayShape("f32", {f.m}) + " {\n" + body + "}\n\n";
    return comp;
  }

  void layer(Family& f) {
    ++m_layer;
    m_scope = m_rng.pick(kScopes);
    std::string& e = m_entry;
    const std::string mn = arrayShape("f32", {f.m, f.n});
    const std::string nm = arrayShape("f32", {f.n, f.m});
    const std::string m1 = arrayShape("f32", {f.m});
    const std::string pmn = arrayShape("pred", {f.m, f.n});

    Value x = f.current;
    if (!f.history.empty() && m_rng.chance(25)) {
      const Value& skip = f.history[static_cast<size_t>(m_rng.uniform(static_cast<int64_t>(f.history.size())))];
      x = op(e, "add", mn, {&x, &skip}, "", "aten__add");
    }
    constexpr std::array<std::string_view, 6> kScales = {"0.125", "0.5", "1.5", "0.044715", "2", "-0.25"};
    Value scale = constant(e, m_rng.pick(kScales));
    Value bs = op(e, "broadcast", mn, {&scale}, "dimensions={}", "aten__mul");
    Value mul = op(e, "multiply", mn, {&x, &bs}, "", "aten__mul");
    Value bb = op(e, "broadcast", mn, {&f.bias}, "dimensions={1}", "aten__add");
    Value add = op(e, "add", mn, {&mul, &bb}, "", "aten__add");
    constexpr std::array<std::array<std::string_view, 2>, 4> kUnary = {{{"exponential", "aten__exp"},
                                                                        {"tanh", "aten__tanh"},
                                                                        {"logistic", "aten__sigmoid"},
                                                                        {"exponential", "aten__softmax"}}};
    const auto& unary = m_rng.pick(kUnary);
    Value u = op(e, unary[0], mn, {&add}, "", unary[1]);
    bool useMax = m_rng.chance(30);
    Value init = constant(e, useMax ? "-inf" : "0");
    Value r = op(e, "reduce", m1, {&u, &init}, "dimensions={1}, to_apply=%" + (useMax ? m_maxReducer : m_addReducer),
                 useMax ? "aten__amax" : "aten__sum");
    Value br = op(e, "broadcast", mn, {&r}, "dimensions={0}", "aten__div");
    Value d = op(e, "divide", mn, {&u, &br}, "", "aten__div");

    Value y = d;
    if (m_rng.chance(70)) {
      Value dt = op(e, "dot", mn, {&d, &f.weight}, "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "aten__mm");
      Value t = op(e, "transpose", nm, {&dt}, "dimensions={1,0}", "aten__permute");
      y = op(e, "reshape", mn, {&t}, "", "aten__view");
    }
    Value zero = constant(e, "0");
    Value bz = op(e, "broadcast", mn, {&zero}, "dimensions={}", "aten__gt");
    constexpr std::array<std::string_view, 4> kDirections = {"GT", "GE", "LT", "NE"};
    Value cmp = op(e, "compare", pmn, {&y, &bz}, "direction=" + std::string(m_rng.pick(kDirections)), "aten__gt");
    Value sel = op(e, "select", mn, {&cmp, &y, &mul}, "", "aten__where");
    if (m_rng.chance(10)) {
      Value lo = constant(e, "-6");
      Value hi = constant(e, "6");
      sel = op(e, "clamp", mn, {&lo, &sel, &hi}, "", "aten__hardtanh");
    }
    Value tup = op(e, "tuple", "(" + mn + ", " + m1 + ")", {&sel, &r}, "", "");
    Value g0 = op(e, "get-tuple-element", mn, {&tup}, "index=0", "");
    Value g1 = op(e, "get-tuple-element", m1, {&tup}, "index=1", "");

    std::string fusedLoop = loopFusionComputation(f, g0, g1, f.bias);
    ++m_fusions;
    Value out = op(e, "fusion", mn, {&g0, &g1, &f.bias}, "kind=kLoop, calls=%" + fusedLoop, "aten__relu");
    if (m_rng.chance(20)) {
      std::string fusedInput = inputFusionComputation(f, out);
      ++m_fusions;
      Value sum = op(e, "fusion", m1, {&out}, "kind=kInput, calls=%" + fusedInput, "aten__sum");
      Value bsum = op(e, "broadcast", mn, {&sum}, "dimensions={0}", "aten__sub");
      out = op(e, "subtract", mn, {&out, &bsum}, "", "aten__sub");
    } else if (m_rng.chance(15)) {
      Value lo = constant(e, "-inf");
      Value rmin = op(e, "reduce", m1, {&out, &lo}, "dimensions={1}, to_apply=%" + m_minReducer, "aten__amin");
      Value bmin = op(e, "broadcast", mn, {&rmin}, "dimensions={0}", "aten__sub");
      out = op(e, "subtract", mn, {&out, &bmin}, "", "aten__sub");
    }

    f.history.push_back(f.current);
    if (f.history.size() > 8) f.history.erase(f.history.begin());
    f.current = out;
  }

  int64_t m_target;
  SplitMix64 m_rng;
  int64_t m_count = 0;
  int64_t m_nextId = 1;
  int64_t m_layer = 0;
  int64_t m_fusions = 0;
  std::string_view m_scope = "model";
  std::string m_addReducer, m_maxReducer, m_minReducer;
  std::vector<Family> m_families;
  std::string m_entrySignature;
  std::string m_entryParams;
  std::string m_entry;
  std::string m_fused;
};

}  // namespace

GeneratedHlo generateHloModule(int64_t targetInstructions, uint64_t seed) {
  return Generator(targetInstructions, seed).run();
}

}  // namespace fusionscope::bench
