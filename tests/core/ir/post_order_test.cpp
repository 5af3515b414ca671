#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {
namespace {

// HloComputation::postOrder returns the instruction vector as it is while every edge made so far points
// backwards in it; these tests make forward edges in each way the IR allows and check the order still puts
// every operand and control predecessor first.

const Shape kScalar = Shape::scalar(PrimitiveType::kF32);

HloInstruction* add(HloComputation& c, const std::string& name, std::vector<HloInstruction*> operands = {}) {
  return c.addInstruction(name, operands.empty() ? HloOpcode::kParameter : HloOpcode::kNegate, kScalar, operands);
}

// Every operand and control predecessor comes before its user.
::testing::AssertionResult inDependencyOrder(const HloComputation& c) {
  StatusOr<std::vector<HloInstruction*>> order = c.postOrder();
  if (!order.ok()) return ::testing::AssertionFailure() << order.message();
  if (order->size() != static_cast<size_t>(c.instructionCount())) {
    return ::testing::AssertionFailure() << "order has " << order->size() << " of " << c.instructionCount();
  }
  auto position = [&](const HloInstruction* inst) {
    return std::find(order->begin(), order->end(), inst) - order->begin();
  };
  for (const HloInstruction* inst : *order) {
    for (const HloInstruction* pred : inst->operands()) {
      if (position(pred) >= position(inst)) return ::testing::AssertionFailure() << pred->name() << " after " << inst->name();
    }
    for (const HloInstruction* pred : inst->controlPredecessors()) {
      if (position(pred) >= position(inst)) return ::testing::AssertionFailure() << pred->name() << " after " << inst->name();
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::string> names(const HloComputation& c) {
  std::vector<std::string> result;
  StatusOr<std::vector<HloInstruction*>> order = c.postOrder();
  if (!order.ok()) return {order.message()};
  for (HloInstruction* inst : *order) result.push_back(inst->name());
  return result;
}

TEST(PostOrder, AnOrderedVectorIsItsOwnPostOrder) {
  HloComputation c("c");
  HloInstruction* p = add(c, "p");
  HloInstruction* a = add(c, "a", {p});
  add(c, "b", {a});
  EXPECT_EQ(names(c), (std::vector<std::string>{"p", "a", "b"}));
}

TEST(PostOrder, ReplacingAnOperandWithALaterInstruction) {
  HloComputation c("c");
  HloInstruction* p = add(c, "p");
  HloInstruction* a = add(c, "a", {p});
  HloInstruction* q = add(c, "q");
  a->replaceOperand(0, q);  // a now reads q, which comes after it
  EXPECT_TRUE(inDependencyOrder(c));
  ASSERT_TRUE(c.sortInPostOrder().ok());
  EXPECT_TRUE(inDependencyOrder(c));
}

// Sorting walks operands first from each instruction in vector order, so a forward operand moves just
// before its first reader; afterwards the vector is the post order and postOrder() reads it as it is.
TEST(PostOrder, SortingPutsAForwardOperandBeforeItsReader) {
  HloComputation c("c");
  HloInstruction* p = add(c, "p");
  HloInstruction* a = add(c, "a", {p});
  add(c, "b", {a});
  HloInstruction* q = add(c, "q");
  a->replaceOperand(0, q);
  ASSERT_TRUE(c.sortInPostOrder().ok());
  EXPECT_EQ(names(c), (std::vector<std::string>{"p", "q", "a", "b"}));
  ASSERT_TRUE(c.sortInPostOrder().ok());  // already sorted: unchanged
  EXPECT_EQ(names(c), (std::vector<std::string>{"p", "q", "a", "b"}));
}

// Removing instructions keeps a sorted vector sorted: sorting then only closes the gaps, and what is added
// afterwards still lands in the right place.
TEST(PostOrder, SortingAfterRemovalsKeepsTheOrder) {
  HloComputation c("c");
  HloInstruction* p = add(c, "p");
  HloInstruction* a = add(c, "a", {p});
  HloInstruction* b = add(c, "b", {p});
  add(c, "d", {a});
  ASSERT_TRUE(c.removeInstruction(b).ok());
  ASSERT_TRUE(c.sortInPostOrder().ok());
  EXPECT_EQ(names(c), (std::vector<std::string>{"p", "a", "d"}));
  HloInstruction* e = add(c, "e", {p});
  a->replaceOperand(0, e);
  ASSERT_TRUE(c.sortInPostOrder().ok());
  EXPECT_EQ(names(c), (std::vector<std::string>{"p", "e", "a", "d"}));
  EXPECT_TRUE(inDependencyOrder(c));
}

TEST(PostOrder, AppendingALaterOperand) {
  HloComputation c("c");
  HloInstruction* a = add(c, "a", {add(c, "p")});
  HloInstruction* q = add(c, "q");
  a->appendOperand(q);
  EXPECT_TRUE(inDependencyOrder(c));
}

TEST(PostOrder, ReplacingAllUsesWithALaterInstruction) {
  HloComputation c("c");
  HloInstruction* p = add(c, "p");
  add(c, "a", {p});
  HloInstruction* q = add(c, "q");
  p->replaceAllUsesWith(q);
  EXPECT_TRUE(inDependencyOrder(c));
}

TEST(PostOrder, ControlEdgeToAnEarlierInstruction) {
  HloComputation c("c");
  HloInstruction* a = add(c, "a");
  HloInstruction* b = add(c, "b");
  b->addControlDependencyTo(a);  // a must now come after b
  EXPECT_TRUE(inDependencyOrder(c));
  EXPECT_EQ(names(c), (std::vector<std::string>{"b", "a"}));
}

TEST(PostOrder, AddingAnInstructionThatEarlierOnesAlreadyRead) {
  HloComputation c("c");
  auto late = std::make_unique<HloInstruction>("late", HloOpcode::kParameter, kScalar);
  HloInstruction* a = add(c, "a", {late.get()});  // reads an instruction not added yet
  HloInstruction* lateRaw = c.addInstruction(std::move(late));
  EXPECT_TRUE(inDependencyOrder(c));
  EXPECT_EQ(names(c).front(), lateRaw->name());
  (void)a;
}

TEST(PostOrder, OperandFromAnotherComputationIsStillReported) {
  HloComputation c("c");
  HloComputation other("other");
  HloInstruction* foreign = add(other, "foreign");
  add(c, "a", {foreign});
  StatusOr<std::vector<HloInstruction*>> order = c.postOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.message().find("from another computation"), std::string::npos) << order.message();
}

TEST(PostOrder, ACycleIsStillReported) {
  HloComputation c("c");
  HloInstruction* p = add(c, "p");
  HloInstruction* a = add(c, "a", {p});
  HloInstruction* b = add(c, "b", {a});
  a->replaceOperand(0, b);
  StatusOr<std::vector<HloInstruction*>> order = c.postOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.message().find("cycle"), std::string::npos) << order.message();
}

// The order a depth-first walk gives when it looks into every instruction: from each instruction in vector
// order, operands and control predecessors first. postOrder() skips looking into most of them and must give
// exactly this.
std::vector<std::string> lookingIntoEverything(const HloComputation& c) {
  std::set<const HloInstruction*> seen;
  std::vector<std::string> order;
  std::function<void(const HloInstruction*)> visit = [&](const HloInstruction* inst) {
    if (!seen.insert(inst).second) return;
    for (const HloInstruction* pred : inst->operands()) visit(pred);
    for (const HloInstruction* pred : inst->controlPredecessors()) visit(pred);
    order.push_back(inst->name());
  };
  for (const auto& inst : c.instructions()) visit(inst.get());
  return order;
}

// Random rewiring (a user reads an instruction chosen anywhere that does not depend on it, or waits for it
// through a control edge), with removals and sorts in between: the order must stay a dependency order, and
// be the order of a walk that looks into every instruction.
TEST(PostOrder, StaysADependencyOrderUnderRandomRewiring) {
  std::mt19937 rng(7);
  HloComputation c("c");
  std::vector<HloInstruction*> live{add(c, "p0"), add(c, "p1")};
  for (int i = 0; i < 200; ++i) {
    std::uniform_int_distribution<size_t> pick(0, live.size() - 1);
    live.push_back(add(c, "n" + std::to_string(i), {live[pick(rng)]}));
  }
  // Does `from` reach `to` through users or control successors?
  auto reaches = [](const HloInstruction* from, const HloInstruction* to) {
    std::vector<const HloInstruction*> work{from};
    std::vector<const HloInstruction*> seen;
    while (!work.empty()) {
      const HloInstruction* inst = work.back();
      work.pop_back();
      if (inst == to) return true;
      if (std::find(seen.begin(), seen.end(), inst) != seen.end()) continue;
      seen.push_back(inst);
      for (const HloInstruction* user : inst->users()) work.push_back(user);
      for (const HloInstruction* succ : inst->controlSuccessors()) work.push_back(succ);
    }
    return false;
  };
  int rewired = 0;
  int removed = 0;
  for (int step = 0; step < 400; ++step) {
    std::uniform_int_distribution<size_t> pick(0, live.size() - 1);
    HloInstruction* user = live[pick(rng)];
    HloInstruction* operand = live[pick(rng)];
    if (step % 11 == 0) {  // remove an instruction nothing reads
      if (user->users().empty() && user->controlSuccessors().empty() && user->controlPredecessors().empty() &&
          c.removeInstruction(user).ok()) {
        live.erase(std::find(live.begin(), live.end(), user));
        ++removed;
      }
      continue;
    }
    if (user == operand || reaches(user, operand)) continue;
    if (step % 7 == 0) {
      operand->addControlDependencyTo(user);
    } else if (user->operandCount() > 0) {
      user->replaceOperand(0, operand);
    } else {
      continue;
    }
    ++rewired;
    ASSERT_TRUE(inDependencyOrder(c)) << "step " << step;
    ASSERT_EQ(names(c), lookingIntoEverything(c)) << "step " << step;
    if (step % 50 == 0) {
      ASSERT_TRUE(c.sortInPostOrder().ok());
      ASSERT_TRUE(inDependencyOrder(c));
      ASSERT_EQ(names(c), lookingIntoEverything(c)) << "step " << step;
    }
  }
  EXPECT_GT(rewired, 100);
  EXPECT_GT(removed, 3);
}

}  // namespace
}  // namespace fusionscope::core
