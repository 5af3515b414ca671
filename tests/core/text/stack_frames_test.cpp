// XLA's stack-frame index, as current JAX dumps print it between the HloModule line and the first computation:
// parsed, kept verbatim, printed back, and resolved from metadata's stack_frame_id.
#include <gtest/gtest.h>

#include "core/ir/stack_frames.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"

namespace fusionscope::core {
namespace {

// The shape of what jaxlib 0.10 writes (tests/data/xla has real files); paths shortened.
constexpr std::string_view kJaxModule = R"(HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

FileNames
1 "/home/me/train.py"
2 "/home/me/model.py"

FunctionNames
1 "<module>"
2 "loss"

FileLocations
1 {file_name_id=1 function_name_id=1 line=45 end_line=45 column=4 end_column=10}
2 {file_name_id=2 function_name_id=2 line=94 end_line=94 column=52 end_column=57}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}

ENTRY main.3 {
  x = f32[4]{0} parameter(0), metadata={op_name="x"}
  ROOT e = f32[4]{0} exponential(x), metadata={op_name="jit(f)/exp" stack_frame_id=2}
}
)";

TEST(StackFrames, TablesAreParsedKeptAndPrintedBack) {
  auto module = parseHloModule(kJaxModule, "jax.hlo");
  ASSERT_TRUE(module.ok()) << module.message();
  const std::vector<HeaderTable>& tables = (*module)->headerTables();
  ASSERT_EQ(tables.size(), 4u);
  EXPECT_EQ(tables[0].name, "FileNames");
  EXPECT_EQ(tables[3].name, "StackFrames");
  ASSERT_EQ(tables[2].rows.size(), 2u);
  EXPECT_EQ(tables[2].rows[1].first, 2);
  EXPECT_EQ(tables[2].rows[1].second,
            "{file_name_id=2 function_name_id=2 line=94 end_line=94 column=52 end_column=57}");
  std::string printed = printModule(**module);
  EXPECT_NE(printed.find("\nFileNames\n1 \"/home/me/train.py\"\n2 \"/home/me/model.py\"\n"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("stack_frame_id=2"), std::string::npos);
  // Round trip: printing the re-parsed text gives the same text.
  auto again = parseHloModule(printed, "printed.hlo");
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(printModule(**again), printed);
  EXPECT_EQ((*again)->headerTables(), tables);
}

TEST(StackFrames, StackFrameIdResolvesToFileLineAndFunction) {
  auto module = parseHloModule(kJaxModule, "jax.hlo");
  ASSERT_TRUE(module.ok()) << module.message();
  const HloInstruction* e = (*module)->entry()->root();
  ASSERT_NE(e->metadata(), nullptr);
  EXPECT_EQ(stackFrameId(*e->metadata()), 2);
  std::optional<SourceLocation> location = (*module)->sourceLocation(*e->metadata());
  ASSERT_TRUE(location);
  EXPECT_EQ(location->toString(), "/home/me/model.py:94:52 (loss)");
  // The caller chain ends at the outermost frame, which XLA prints as its own parent.
  std::vector<SourceLocation> stack = (*module)->stackFrames().stack(2);
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(stack[1].toString(), "/home/me/train.py:45:4 (<module>)");
  // Metadata without a frame has no location.
  EXPECT_FALSE((*module)->sourceLocation(*(*module)->entry()->parameters()[0]->metadata()));
}

TEST(StackFrames, UnknownBlocksAndOddRowsAreKeptNotFatal) {
  auto module = parseHloModule(R"(HloModule m

SomethingNew
7 whatever {a=1}
8 "text"

StackFrames
1 {file_location_id=99 parent_frame_id=5}
5 {parent_frame_id=1}

ENTRY e {
  ROOT p = f32[] parameter(0), metadata={stack_frame_id=1}
}
)",
                               "odd.hlo");
  ASSERT_TRUE(module.ok()) << module.message();
  ASSERT_EQ((*module)->headerTables().size(), 2u);
  EXPECT_EQ((*module)->headerTables()[0].name, "SomethingNew");
  EXPECT_EQ((*module)->headerTables()[0].rows[0].second, "whatever {a=1}");
  // Frame 1 names a location that does not exist; frame 5 has no location: nothing resolves, nothing fails.
  EXPECT_FALSE((*module)->sourceLocation(*(*module)->entry()->root()->metadata()));
  EXPECT_TRUE((*module)->stackFrames().stack(1).empty());
  EXPECT_NE(printModule(**module).find("SomethingNew\n7 whatever {a=1}\n8 \"text\"\n"), std::string::npos);
}

TEST(StackFrames, CyclicParentsStop) {
  std::vector<HeaderTable> tables = {
      {"FileNames", {{1, "\"a.py\""}}},
      {"FileLocations", {{1, "{file_name_id=1 line=3}"}}},
      {"StackFrames", {{1, "{file_location_id=1 parent_frame_id=2}"}, {2, "{file_location_id=1 parent_frame_id=1}"}}},
  };
  StackFrameIndex index(tables);
  EXPECT_EQ(index.stack(1).size(), 2u);
  EXPECT_EQ(index.location(1)->toString(), "a.py:3");
}

TEST(StackFrames, ComputationNamedLikeABlockStillParses) {
  // A computation whose name stands alone on its line with `{` on the next is not a block.
  auto module = parseHloModule("HloModule m\n\nadd\n{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                               "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[] parameter(0)\n"
                               "  ROOT r = f32[] call(x, x), to_apply=add\n}\n",
                               "named.hlo");
  ASSERT_TRUE(module.ok()) << module.message();
  EXPECT_TRUE((*module)->headerTables().empty());
  EXPECT_EQ((*module)->computations().size(), 2u);
}

TEST(StackFrames, BadRowIdPointsAtTheRow) {
  auto module = parseHloModule("HloModule m\n\nFileNames\n99999999999999999999 \"a.py\"\n\nENTRY e {\n"
                               "  ROOT p = f32[] parameter(0)\n}\n",
                               "bad.hlo");
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.message().find("bad.hlo:4:1: error: row id out of range in block 'FileNames'"), std::string::npos)
      << module.message();
}

}  // namespace
}  // namespace fusionscope::core
