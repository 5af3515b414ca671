#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {
namespace {

// users() is kept by the mutation methods: a plain list while an instruction has few users, a list plus a
// position index once it has many. These tests drive instructions across that boundary and check the list
// against the operands, which are the truth.

const Shape kScalar = Shape::scalar(PrimitiveType::kF32);

// users() must hold each instruction that reads `inst` exactly once, and nothing else.
::testing::AssertionResult usersMatchOperands(const HloComputation& c) {
  std::map<const HloInstruction*, std::set<const HloInstruction*>> expected;
  for (const auto& inst : c.instructions()) {
    for (const HloInstruction* operand : inst->operands()) expected[operand].insert(inst.get());
  }
  for (const auto& inst : c.instructions()) {
    const std::vector<HloInstruction*>& users = inst->users();
    std::set<const HloInstruction*> actual(users.begin(), users.end());
    if (actual.size() != users.size()) {
      return ::testing::AssertionFailure() << inst->name() << " lists a user twice";
    }
    if (actual != expected[inst.get()]) {
      return ::testing::AssertionFailure()
             << inst->name() << "'s users are not the instructions reading it (" << actual.size() << " listed, "
             << expected[inst.get()].size() << " read it)";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(UseList, AUserReadingTwiceIsListedOnceAndStaysUntilBothUsesGo) {
  for (int others : {2, 100}) {  // below and above the size where the index is built
    SCOPED_TRACE(others);
    HloComputation c("c");
    HloInstruction* hub = c.addInstruction("hub", HloOpcode::kParameter, kScalar, {});
    for (int i = 0; i < others; ++i) c.addInstruction("neg", HloOpcode::kNegate, kScalar, {hub});
    HloInstruction* other = c.addInstruction("other", HloOpcode::kParameter, kScalar, {});
    HloInstruction* twice = c.addInstruction("add", HloOpcode::kAdd, kScalar, {hub, hub});
    EXPECT_EQ(std::count(hub->users().begin(), hub->users().end(), twice), 1);
    twice->replaceOperand(0, other);
    EXPECT_EQ(std::count(hub->users().begin(), hub->users().end(), twice), 1) << "one use is left";
    twice->replaceOperand(1, other);
    EXPECT_EQ(std::count(hub->users().begin(), hub->users().end(), twice), 0);
    EXPECT_EQ(other->users(), std::vector<HloInstruction*>{twice});
    EXPECT_TRUE(usersMatchOperands(c));
  }
}

TEST(UseList, ReplacingAllUsesMovesThemBetweenHubs) {
  HloComputation c("c");
  HloInstruction* a = c.addInstruction("a", HloOpcode::kParameter, kScalar, {});
  HloInstruction* b = c.addInstruction("b", HloOpcode::kParameter, kScalar, {});
  for (int i = 0; i < 300; ++i) c.addInstruction("add", HloOpcode::kAdd, kScalar, {a, i % 3 == 0 ? a : b});
  EXPECT_EQ(a->users().size(), 300u);
  EXPECT_EQ(b->users().size(), 200u);
  a->replaceAllUsesWith(b);
  EXPECT_TRUE(a->users().empty());
  EXPECT_EQ(b->users().size(), 300u);
  EXPECT_TRUE(usersMatchOperands(c));
  // Back to few users, then many again.
  for (HloInstruction* user : std::vector<HloInstruction*>(b->users())) {
    user->replaceOperand(0, a);
    user->replaceOperand(1, a);
  }
  EXPECT_TRUE(b->users().empty());
  EXPECT_EQ(a->users().size(), 300u);
  EXPECT_TRUE(usersMatchOperands(c));
}

// Random rewiring, replacement and removal around three hubs and many small instructions, checked against
// the operands after every step.
TEST(UseList, MatchesTheOperandsUnderRandomEdits) {
  std::mt19937 rng(11);
  HloComputation c("c");
  std::vector<HloInstruction*> sources;
  for (int i = 0; i < 3; ++i) sources.push_back(c.addInstruction("p", HloOpcode::kParameter, kScalar, {}));
  std::vector<HloInstruction*> adds;
  for (int i = 0; i < 400; ++i) {
    std::uniform_int_distribution<size_t> pick(0, sources.size() - 1);
    HloInstruction* x = sources[pick(rng)];
    HloInstruction* y = i % 5 == 0 ? x : sources[pick(rng)];
    adds.push_back(c.addInstruction("add", HloOpcode::kAdd, kScalar, {x, y}));
    if (i % 50 == 0) sources.push_back(adds.back());  // sources of later adds, some with few users
  }
  ASSERT_TRUE(usersMatchOperands(c));
  int removed = 0;
  for (int step = 0; step < 600; ++step) {
    std::uniform_int_distribution<size_t> pickSource(0, sources.size() - 1);
    std::uniform_int_distribution<size_t> pickAdd(0, adds.size() - 1);
    HloInstruction* user = adds[pickAdd(rng)];
    HloInstruction* to = sources[pickSource(rng)];
    if (step % 97 == 0) {
      HloInstruction* from = sources[pickSource(rng)];
      if (from != to && !from->isRoot()) {
        // Only when `to` does not depend on `from`, so no instruction reads itself.
        bool dependsOnFrom = false;
        std::vector<const HloInstruction*> work{to};
        while (!work.empty() && !dependsOnFrom) {
          const HloInstruction* inst = work.back();
          work.pop_back();
          dependsOnFrom = inst == from;
          work.insert(work.end(), inst->operands().begin(), inst->operands().end());
        }
        if (!dependsOnFrom) from->replaceAllUsesWith(to);
      }
    } else if (step % 13 == 0) {
      if (user->users().empty() && std::find(sources.begin(), sources.end(), user) == sources.end() &&
          c.removeInstruction(user).ok()) {
        adds.erase(std::find(adds.begin(), adds.end(), user));
        ++removed;
      }
    } else if (std::find(sources.begin(), sources.end(), user) == sources.end()) {
      std::uniform_int_distribution<int> operand(0, 1);
      user->replaceOperand(operand(rng), to);
    }
    ASSERT_TRUE(usersMatchOperands(c)) << "after step " << step;
  }
  EXPECT_GT(removed, 0);
}

}  // namespace
}  // namespace fusionscope::core
