#include "core/passes/call_inliner.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_clone.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {
namespace {

HloComputation* calleeOf(const HloInstruction& call) {
  if (call.opcode() != HloOpcode::kCall) return nullptr;
  if (HloComputation* callee = call.toApply()) return callee;
  return call.calledComputation("calls");
}

class Inliner {
 public:
  explicit Inliner(HloModule& module) : m_module(module) {}

  // Copies `body`'s instructions into `into`, parameter i read as arguments[i], control edges between copies
  // kept. Returns the copy of the root (an argument when the root is a parameter); `copies` receives the rest.
  StatusOr<HloInstruction*> copyBody(HloComputation& into, const HloComputation& body,
                                     const std::vector<HloInstruction*>& arguments, const std::string& user,
                                     std::vector<HloInstruction*>& copies) {
    std::vector<HloInstruction*> params = body.parameters();
    if (params.size() != arguments.size()) {
      return Status::error(fmt::format("inline: {} passes {} operand(s) to {}, which takes {} parameter(s)", user,
                                       arguments.size(), body.name(), params.size()));
    }
    if (!body.root()) return Status::error(fmt::format("inline: {} has no root", body.name()));
    StatusOr<std::vector<HloInstruction*>> order = body.postOrder();
    if (!order.ok()) return Status::error(fmt::format("inline: {}", order.message()));

    std::unordered_map<const HloInstruction*, HloInstruction*> map;
    map.reserve(order->size());
    std::vector<HloInstruction*> operands;
    for (HloInstruction* inst : *order) {
      if (inst->opcode() == HloOpcode::kParameter) {
        int64_t n = inst->parameterNumber();
        if (n < 0 || n >= static_cast<int64_t>(arguments.size()) || params[static_cast<size_t>(n)] != inst) {
          return Status::error(fmt::format("inline: {} has a misnumbered parameter {}", body.name(), inst->name()));
        }
        map[inst] = arguments[static_cast<size_t>(n)];
        continue;
      }
      operands.clear();
      for (HloInstruction* operand : inst->operands()) operands.push_back(map.at(operand));
      HloInstruction* copy = into.addInstruction(
          inst->cloneWithOperands(into.uniqueInstructionName(inst->name()), inst->shape(), operands));
      unshareFusedComputation(*copy);
      map[inst] = copy;
      copies.push_back(copy);
    }
    for (HloInstruction* inst : *order) {
      if (inst->opcode() == HloOpcode::kParameter) continue;
      for (HloInstruction* successor : inst->controlSuccessors()) {
        if (successor->opcode() != HloOpcode::kParameter) map.at(inst)->addControlDependencyTo(map.at(successor));
      }
    }
    return map.at(body.root());
  }

  Status inlineCall(HloInstruction* call, const HloComputation& callee) {
    HloComputation& caller = *call->parent();
    std::vector<HloInstruction*> copies;
    StatusOr<HloInstruction*> root = copyBody(caller, callee, call->operands(), call->name(), copies);
    if (!root.ok()) return root.status();
    // The call's own control edges order the whole body.
    std::vector<HloInstruction*> before = call->controlPredecessors();
    std::vector<HloInstruction*> after = call->controlSuccessors();
    for (HloInstruction* pred : before) {
      for (HloInstruction* copy : copies) pred->addControlDependencyTo(copy);
      if (copies.empty()) {
        for (HloInstruction* succ : after) pred->addControlDependencyTo(succ);
      }
    }
    for (HloInstruction* copy : copies) {
      for (HloInstruction* succ : after) copy->addControlDependencyTo(succ);
    }

    call->replaceAllUsesWith(*root);
    call->dropAllControlDependencies();
    if (Status s = caller.removeInstruction(call); !s.ok()) {
      return Status::error(fmt::format("inline: {}", s.message()));
    }
    return okStatus();
  }

  bool addedComputations() const { return m_addedComputations; }

 private:
  // A fused computation belongs to exactly one fusion instruction (the fusion passes edit bodies in place),
  // so a copied fusion gets a copy of its body. The callee's original goes with the callee when nothing
  // else references it (removeDeadCallees).
  void unshareFusedComputation(HloInstruction& copy) {
    HloComputation* fused = copy.fusedComputation();
    if (!fused) return;
    HloComputation* clone = cloneComputation(*fused, m_module, m_module.uniqueComputationName(fused->name()));
    for (CalledComputationRef& ref : copy.mutableCalledComputationRefs()) {
      if (ref.key != "calls") continue;
      for (HloComputation*& callee : ref.computations) {
        if (callee == fused) callee = clone;
      }
    }
    m_addedComputations = true;
  }

  HloModule& m_module;
  bool m_addedComputations = false;
};

}  // namespace

Status inlineBody(HloInstruction* caller, const HloComputation& body, HloModule& module) {
  Inliner inliner(module);
  return inliner.inlineCall(caller, body);
}

StatusOr<HloInstruction*> copyBodyInto(HloComputation& into, const HloComputation& body,
                                       const std::vector<HloInstruction*>& arguments, HloModule& module) {
  Inliner inliner(module);
  std::vector<HloInstruction*> copies;
  return inliner.copyBody(into, body, arguments, body.name(), copies);
}

namespace {

// Removes the inlined callees nothing references any more, then whatever only they referenced. Computations
// that were unreferenced before the pass (and not inlined) are not this pass's business and stay.
void removeDeadCallees(HloModule& module, const std::vector<HloComputation*>& callees) {
  std::unordered_map<const HloComputation*, int64_t> references;
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      for (const HloComputation* callee : inst->calledComputations()) ++references[callee];
    }
  }
  std::vector<HloComputation*> work;
  std::unordered_set<const HloComputation*> queued;
  for (HloComputation* callee : callees) {
    if (references[callee] == 0 && callee != module.entry() && queued.insert(callee).second) work.push_back(callee);
  }
  while (!work.empty()) {
    HloComputation* dead = work.back();
    work.pop_back();
    std::vector<HloComputation*> referenced;
    for (const auto& inst : dead->instructions()) {
      for (HloComputation* callee : inst->calledComputations()) referenced.push_back(callee);
    }
    if (!module.removeComputation(dead).ok()) continue;
    for (HloComputation* callee : referenced) {
      if (--references[callee] == 0 && callee != module.entry() && queued.insert(callee).second) {
        work.push_back(callee);
      }
    }
  }
}

// The instructions each computation will hold once its calls are inlined (a callee's body replaces each call of it),
// measured before anything is copied: 60 computations that each call the next twice are 2.6 KB of text and 2^60
// instructions inlined.
Status checkInlinedSize(const HloModule& module) {
  std::unordered_map<const HloComputation*, double> size;
  for (HloComputation* computation : module.computationsPostOrder()) {
    double total = 0;
    const HloComputation* largestCallee = nullptr;
    for (const auto& inst : computation->instructions()) {
      const HloComputation* callee = calleeOf(*inst);
      auto it = callee ? size.find(callee) : size.end();
      if (it == size.end()) {
        total += 1;
        continue;
      }
      total += it->second;
      if (!largestCallee || it->second > size[largestCallee]) largestCallee = callee;
    }
    size[computation] = total;
    if (total > static_cast<double>(kMaxInlinedInstructions)) {
      return Status::badInput(fmt::format(
          "inline: computation {} would hold {:.3g} instructions once its calls are inlined ({} alone is {:.3g}), more "
          "than the {} allowed",
          computation->name(), total, largestCallee ? largestCallee->name() : std::string("?"),
          largestCallee ? size[largestCallee] : 0.0, kMaxInlinedInstructions));
    }
  }
  return okStatus();
}

}  // namespace

StatusOr<bool> CallInliner::run(HloModule& module, PassContext& /*context*/) {
  if (Status s = checkInlinedSize(module); !s.ok()) return s;
  Inliner inliner(module);
  std::vector<HloComputation*> inlined;
  std::unordered_set<const HloComputation*> seenCallee;
  bool changed = false;
  // Callees come first, so the body copied into a caller holds no calls any more.
  for (HloComputation* computation : module.computationsPostOrder()) {
    std::vector<HloInstruction*> calls;
    for (const auto& inst : computation->instructions()) {
      if (calleeOf(*inst)) calls.push_back(inst.get());
    }
    if (calls.empty()) continue;
    for (HloInstruction* call : calls) {
      HloComputation* callee = calleeOf(*call);
      FS_RETURN_IF_ERROR(inliner.inlineCall(call, *callee));
      if (seenCallee.insert(callee).second) inlined.push_back(callee);
    }
    if (Status s = computation->sortInPostOrder(); !s.ok()) {
      return Status::error(fmt::format("inline: {}", s.message()));
    }
    changed = true;
  }
  if (!changed) return false;
  removeDeadCallees(module, inlined);
  if (inliner.addedComputations()) module.sortComputationsInPostOrder();
  return true;
}

}  // namespace fusionscope::core
