// Malformed HLO text: every test asserts the exact `FILE:LINE:COL: error: MESSAGE` line, so a message that
// gets vaguer or a column that drifts off the offending token fails here. A few also check the quoted
// line and the caret under the column.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"

namespace fusionscope::core {
namespace {

// The error split into lines: the message line, the offending line, the caret line.
std::vector<std::string> errorLines(std::string_view text) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(text, "bad.hlo");
  if (module.ok()) return {"<parsed without error>"};
  std::vector<std::string> lines;
  std::string_view rest = module.message();
  while (true) {
    size_t newline = rest.find('\n');
    lines.emplace_back(rest.substr(0, newline));
    if (newline == std::string_view::npos) break;
    rest.remove_prefix(newline + 1);
  }
  return lines;
}

std::string firstErrorLine(std::string_view text) {
  return errorLines(text).front();
}

// ---- Attribute values --------------------------------------------------------------------------------

TEST(HloParserErrors, UnterminatedAttributeValueAtEndOfInput) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions={0)hlo"),
            (std::vector<std::string>{
                "bad.hlo:3:42: error: unterminated attribute 'dimensions': missing '}'",
                "  ROOT r = f32[2] reverse(p), dimensions={0",
                "                                         ^",
            }));
}

TEST(HloParserErrors, UnterminatedAttributeValueTakesTheComputationsBrace) {
  // The attribute's '{' is closed by the computation's '}', so the module runs out; the caret goes back to
  // the attribute rather than to the end of input.
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions={0
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:3:42: error: unterminated attribute 'dimensions': missing '}' (the '}' meant to close "
                "computation 'e' closes it instead)",
                "  ROOT r = f32[2] reverse(p), dimensions={0",
                "                                         ^",
            }));
}

TEST(HloParserErrors, UnterminatedAttributeValueBeforeAnotherComputation) {
  EXPECT_EQ(firstErrorLine(R"hlo(neg {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions={0
}

ENTRY e {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            "bad.hlo:3:42: error: unterminated attribute 'dimensions': missing '}' (the '}' meant to close "
            "computation 'neg' closes it instead)");
}

TEST(HloParserErrors, UnterminatedAttributeValueFollowedByInstructions) {
  // The value swallows the next line; the integer list then fails at the first thing that is not one.
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  r = f32[2] reverse(p), dimensions={0
  ROOT n = f32[2] negate(r)
}
)hlo"),
            "bad.hlo:4:3: error: invalid 'dimensions': expected ',' or '}' in list of integers");
}

TEST(HloParserErrors, UnterminatedStringInMetadata) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter(0), metadata={op_type="Add}
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:2:51: error: unterminated string in attribute 'metadata'",
                "  ROOT p = f32[2] parameter(0), metadata={op_type=\"Add}",
                "                                                  ^",
            }));
}

TEST(HloParserErrors, UnterminatedStringInCustomCallTarget) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT c = f32[2] custom-call(), custom_call_target="foo
}
)hlo"),
            "bad.hlo:2:53: error: unterminated string in attribute 'custom_call_target'");
}

TEST(HloParserErrors, CustomCallTargetWithoutQuotes) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT c = f32[2] custom-call(), custom_call_target=foo
}
)hlo"),
            "bad.hlo:2:53: error: invalid 'custom_call_target': expected a quoted string");
}

TEST(HloParserErrors, MetadataSourceLineNotAnInteger) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter(0), metadata={op_type="x" source_line=abc}
}
)hlo"),
            "bad.hlo:2:67: error: invalid 'metadata': expected an integer source_line");
}

TEST(HloParserErrors, DuplicateAttribute) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions={0}, dimensions={0}
}
)hlo"),
            "bad.hlo:3:47: error: duplicate attribute 'dimensions'");
}

TEST(HloParserErrors, MismatchedBracketInAttribute) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions={0)
}
)hlo"),
            "bad.hlo:3:44: error: mismatched ')' in attribute 'dimensions' (expected '}')");
}

TEST(HloParserErrors, AttributeWithoutValue) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions=, foo=1
}
)hlo"),
            "bad.hlo:3:42: error: expected a value for attribute 'dimensions'");
}

TEST(HloParserErrors, AttributeWithoutEquals) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions {0}
}
)hlo"),
            "bad.hlo:3:42: error: expected '=' after attribute name 'dimensions'");
}

TEST(HloParserErrors, TrailingCommaAfterAttributes) {
  // The missing name belongs after the ',' at the end of line 3, not at the '}' on line 4.
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] reverse(p), dimensions={0},
}
)hlo"),
            "bad.hlo:3:46: error: expected an attribute name after ',', found '}'");
}

TEST(HloParserErrors, IntegerListWithNonInteger) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2,2] parameter(0)
  ROOT r = f32[2,2] reverse(p), dimensions={0,x}
}
)hlo"),
            "bad.hlo:3:47: error: invalid 'dimensions': expected an integer");
}

TEST(HloParserErrors, InvalidComparisonDirection) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = pred[2] compare(p, p), direction=XX
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:3:45: error: invalid comparison direction 'XX' (expected EQ, NE, GE, GT, LE or LT)",
                "  ROOT c = pred[2] compare(p, p), direction=XX",
                "                                            ^",
            }));
}

TEST(HloParserErrors, InvalidFusionKind) {
  EXPECT_EQ(firstErrorLine(R"hlo(f {
  ROOT p = f32[2] parameter(0)
}

ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = f32[2] fusion(p), kind=kFoo, calls=f
}
)hlo"),
            "bad.hlo:7:35: error: invalid fusion kind 'kFoo' (expected kLoop, kInput, kOutput or kCustom)");
}

TEST(HloParserErrors, SliceWithMismatchedBracket) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[4] parameter(0)
  ROOT s = f32[2] slice(p), slice={[0:2}
}
)hlo"),
            "bad.hlo:3:40: error: mismatched '}' in attribute 'slice' (expected ']')");
}

TEST(HloParserErrors, SliceWithoutLimit) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[4] parameter(0)
  ROOT s = f32[2] slice(p), slice={[0]}
}
)hlo"),
            "bad.hlo:3:38: error: invalid 'slice': expected ':' after slice start");
}

TEST(HloParserErrors, SliceWithNonIntegerStart) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[4,4] parameter(0)
  ROOT s = f32[2,2] slice(p), slice={[0:2], [a:b]}
}
)hlo"),
            "bad.hlo:3:46: error: invalid 'slice': expected slice start");
}

TEST(HloParserErrors, PaddingWithoutHigh) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[6] pad(p, z), padding=1_x
}
)hlo"),
            "bad.hlo:4:40: error: invalid 'padding': expected '_high' in padding");
}

TEST(HloParserErrors, PaddingWithTrailingText) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[6] pad(p, z), padding=1_1y
}
)hlo"),
            "bad.hlo:4:41: error: invalid 'padding': unexpected text after padding");
}

TEST(HloParserErrors, UnknownWindowField) {
  EXPECT_EQ(errorLines(R"hlo(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[2] reduce-window(p, z), window={size=2 strde=2}, to_apply=add
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:10:55: error: invalid 'window': unknown window field 'strde'",
                "  ROOT s = f32[2] reduce-window(p, z), window={size=2 strde=2}, to_apply=add",
                "                                                      ^",
            }));
}

// ---- Comments ----------------------------------------------------------------------------------------

TEST(HloParserErrors, UnterminatedComment) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  /* the rest is a comment
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:2:3: error: unterminated comment: '/*' has no closing '*/'",
                "  /* the rest is a comment",
                "  ^",
            }));
}

TEST(HloParserErrors, UnterminatedCommentAfterAnInstruction) {
  // The comment eats the computation's '}'; the comment, not the missing '}', is what gets reported.
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter(0)  /* never closed
}
)hlo"),
            "bad.hlo:2:33: error: unterminated comment: '/*' has no closing '*/'");
}

// ---- Names -------------------------------------------------------------------------------------------

TEST(HloParserErrors, UnknownOperand) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] negate(q)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:3:26: error: unknown operand 'q' in computation 'e'",
                "  ROOT r = f32[2] negate(q)",
                "                         ^",
            }));
}

TEST(HloParserErrors, UnknownOperandWithPercentAndShape) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY %e {
  %p = f32[2]{0} parameter(0)
  ROOT %r = f32[2]{0} add(f32[2]{0} %p, f32[2]{0} %q)
}
)hlo"),
            "bad.hlo:3:52: error: unknown operand 'q' in computation 'e'");
}

TEST(HloParserErrors, DuplicateInstructionName) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  p = f32[2] parameter(1)
  ROOT r = f32[2] add(p, p)
}
)hlo"),
            "bad.hlo:3:3: error: duplicate instruction name 'p' in computation 'e'");
}

TEST(HloParserErrors, DuplicateComputationName) {
  EXPECT_EQ(firstErrorLine(R"hlo(c {
  ROOT p = f32[2] parameter(0)
}

c {
  ROOT p = f32[2] parameter(0)
}

ENTRY e {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            "bad.hlo:5:1: error: duplicate computation name 'c'");
}

TEST(HloParserErrors, UnknownCalledComputation) {
  EXPECT_EQ(firstErrorLine(R"hlo(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[2] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=%nope
}
)hlo"),
            "bad.hlo:10:58: error: unknown computation 'nope' in 'to_apply' of 'r'");
}

TEST(HloParserErrors, ComputationCallingItself) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT c = f32[2] call(p), to_apply=e
}
)hlo"),
            "bad.hlo:3:37: error: computation 'e' calls itself through 'to_apply'");
}

TEST(HloParserErrors, UnknownControlPredecessor) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] negate(p), control-predecessors={q}
}
)hlo"),
            "bad.hlo:3:52: error: unknown control predecessor 'q' in computation 'e'");
}

// ---- Shapes ------------------------------------------------------------------------------------------

TEST(HloParserErrors, UnknownElementType) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  ROOT p = f33[2] parameter(0)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:2:12: error: unknown element type 'f33'",
                "  ROOT p = f33[2] parameter(0)",
                "           ^",
            }));
}

TEST(HloParserErrors, ShapeMissingClosingBracket) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2 parameter(0)
}
)hlo"),
            "bad.hlo:2:18: error: expected ']' to close dimensions, found 'parameter'");
}

TEST(HloParserErrors, NegativeDimension) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[-2] parameter(0)
}
)hlo"),
            "bad.hlo:2:16: error: negative dimension size -2");
}

TEST(HloParserErrors, DimensionNotANumber) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[x] parameter(0)
}
)hlo"),
            "bad.hlo:2:16: error: expected a dimension size, found 'x'");
}

TEST(HloParserErrors, LayoutRankMismatch) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  ROOT p = f32[2,3]{0} parameter(0)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:2:20: error: layout {0} has 1 dimension(s) but the shape has rank 2",
                "  ROOT p = f32[2,3]{0} parameter(0)",
                "                   ^",
            }));
}

TEST(HloParserErrors, LayoutNotClosed) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2]{0 parameter(0)
}
)hlo"),
            "bad.hlo:2:21: error: expected '}' to close layout, found 'parameter'");
}

TEST(HloParserErrors, ElementTypeWithoutDimensions) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32 negate(p)
}
)hlo"),
            "bad.hlo:3:15: error: expected '[' right after element type 'f32', found 'negate'");
}

TEST(HloParserErrors, MissingShape) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = [2] negate(p)
}
)hlo"),
            "bad.hlo:3:12: error: expected a shape such as f32[2,3], found '['");
}

// ---- Computations and module structure ---------------------------------------------------------------

TEST(HloParserErrors, MissingEntry) {
  EXPECT_EQ(errorLines(R"hlo(HloModule m

e {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:3:1: error: no ENTRY computation: mark the computation the module runs with 'ENTRY'",
                "e {",
                "^",
            }));
}

TEST(HloParserErrors, TwoEntries) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter(0)
}

ENTRY f {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            "bad.hlo:5:1: error: second ENTRY computation 'f' (the first is 'e')");
}

TEST(HloParserErrors, TwoRoots) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter(0)
  ROOT q = f32[2] parameter(1)
}
)hlo"),
            "bad.hlo:3:3: error: second ROOT in computation 'e'");
}

TEST(HloParserErrors, EmptyComputation) {
  EXPECT_EQ(errorLines("ENTRY e {}\n"), (std::vector<std::string>{
                                            "bad.hlo:1:10: error: computation 'e' has no instructions",
                                            "ENTRY e {}",
                                            "         ^",
                                        }));
}

TEST(HloParserErrors, MissingComputationBraceAtEndOfInput) {
  // Reported right after the last token, not on the empty line after it.
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter(0)

)hlo"),
            (std::vector<std::string>{
                "bad.hlo:2:31: error: unexpected end of input: computation 'e' is missing '}'",
                "  ROOT p = f32[2] parameter(0)",
                "                              ^",
            }));
}

TEST(HloParserErrors, MissingComputationBraceBeforeNextComputation) {
  EXPECT_EQ(firstErrorLine(R"hlo(neg {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)

ENTRY e {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            "bad.hlo:5:1: error: computation 'neg' is missing '}' before the next computation");
}

TEST(HloParserErrors, BadComputationSignature) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e (p: f32[2] -> f32[2] {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            "bad.hlo:1:20: error: expected ')' to close the computation signature, found '-'");
}

TEST(HloParserErrors, MissingModuleName) {
  // `HloModule` alone on its line must not take the next line's `ENTRY` for the module name.
  EXPECT_EQ(errorLines(R"hlo(HloModule
ENTRY e {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:1:10: error: expected a module name after 'HloModule', found end of line",
                "HloModule",
                "         ^",
            }));
}

TEST(HloParserErrors, ModuleNameIsNotAName) {
  EXPECT_EQ(firstErrorLine("HloModule , entry_computation_layout={()->f32[]}\n"),
            "bad.hlo:1:11: error: expected a module name after 'HloModule', found ','");
}

TEST(HloParserErrors, NoComputations) {
  EXPECT_EQ(firstErrorLine("HloModule m\n\n"), "bad.hlo:1:12: error: no computations in module");
}

TEST(HloParserErrors, EntryWithoutComputation) {
  EXPECT_EQ(firstErrorLine("HloModule m\nENTRY\n"), "bad.hlo:2:6: error: expected a computation after 'ENTRY'");
}

TEST(HloParserErrors, GarbageAtTopLevel) {
  EXPECT_EQ(errorLines(R"hlo(HloModule m
!!! e {
  ROOT p = f32[2] parameter(0)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:2:1: error: expected a computation name or 'ENTRY', found '!'",
                "!!! e {",
                "^",
            }));
}

TEST(HloParserErrors, StrayClosingBraceAtTopLevel) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter(0)
}
}
)hlo"),
            "bad.hlo:4:1: error: expected a computation name or 'ENTRY', found '}'");
}

// ---- Instructions ------------------------------------------------------------------------------------

TEST(HloParserErrors, MissingEqualsAfterName) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p f32[2] parameter(0)
}
)hlo"),
            "bad.hlo:2:10: error: expected '=' after instruction name 'p', found 'f32'");
}

TEST(HloParserErrors, MissingParenAfterOpcode) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[2] parameter 0
}
)hlo"),
            "bad.hlo:2:29: error: expected '(' after opcode 'parameter', found '0'");
}

TEST(HloParserErrors, MissingOpcode) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2]
}
)hlo"),
            "bad.hlo:3:18: error: expected an opcode after the shape, found '}'");
}

TEST(HloParserErrors, MissingParenAfterOperands) {
  // The ')' belongs after `p` on line 3; the '}' that was found instead is on the next line.
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:3:27: error: expected ')' after the operand list, found '}'",
                "  ROOT n = f32[2] negate(p",
                "                          ^",
            }));
}

TEST(HloParserErrors, EmptyOperandAfterComma) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] add(p, )
}
)hlo"),
            "bad.hlo:3:26: error: expected an operand name, found ')'");
}

TEST(HloParserErrors, ParameterWithoutNumber) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[] parameter()
}
)hlo"),
            "bad.hlo:2:28: error: expected a parameter number, e.g. parameter(0), found ')'");
}

TEST(HloParserErrors, NegativeParameterNumber) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT p = f32[] parameter(-1)
}
)hlo"),
            "bad.hlo:2:28: error: negative parameter number -1");
}

// ---- Constants ---------------------------------------------------------------------------------------

TEST(HloParserErrors, ConstantWithTooFewValues) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT c = f32[3] constant({1, 2})
}
)hlo"),
            "bad.hlo:2:28: error: constant of shape f32[3] needs 3 value(s), found 2");
}

TEST(HloParserErrors, ConstantWithTooFewNestingLevels) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT c = f32[2,2] constant({1, 2})
}
)hlo"),
            "bad.hlo:2:31: error: expected '{' to open dimension 1 of the f32[2,2] constant, found '1'");
}

TEST(HloParserErrors, InvalidFloatConstant) {
  EXPECT_EQ(errorLines(R"hlo(ENTRY e {
  ROOT c = f32[] constant(abc)
}
)hlo"),
            (std::vector<std::string>{
                "bad.hlo:2:27: error: invalid f32 value 'abc'",
                "  ROOT c = f32[] constant(abc)",
                "                          ^",
            }));
}

TEST(HloParserErrors, IntegerConstantOutOfRange) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT c = s32[] constant(99999999999999999999)
}
)hlo"),
            "bad.hlo:2:27: error: invalid s32 value '99999999999999999999'");
}

TEST(HloParserErrors, InvalidPredConstant) {
  EXPECT_EQ(firstErrorLine(R"hlo(ENTRY e {
  ROOT c = pred[] constant(yes)
}
)hlo"),
            "bad.hlo:2:28: error: invalid pred value 'yes' (expected true or false)");
}

// ---- Formatting of the quoted line -------------------------------------------------------------------

TEST(HloParserErrors, CaretKeepsTabsOfTheLine) {
  EXPECT_EQ(errorLines("ENTRY e {\n\tp = f32[2] parameter(0)\n\tROOT r = f32[2]\tnegate(q)\n}\n"),
            (std::vector<std::string>{
                "bad.hlo:3:25: error: unknown operand 'q' in computation 'e'",
                "\tROOT r = f32[2]\tnegate(q)",
                "\t               \t       ^",
            }));
}

TEST(HloParserErrors, CrLfLineEndings) {
  EXPECT_EQ(errorLines("ENTRY e {\r\n  p = f32[2] parameter(0)\r\n  ROOT r = f32[2] negate(q)\r\n}\r\n"),
            (std::vector<std::string>{
                "bad.hlo:3:26: error: unknown operand 'q' in computation 'e'",
                "  ROOT r = f32[2] negate(q)",
                "                         ^",
            }));
}

TEST(HloParserErrors, FileNameIsTheOneGiven) {
  StatusOr<std::unique_ptr<HloModule>> module =
      parseHloModule("ENTRY e {\n  ROOT p = f32[2] parameter(0)\n", "dir/model.hlo");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.message().substr(0, module.message().find('\n')),
            "dir/model.hlo:2:31: error: unexpected end of input: computation 'e' is missing '}'");
}

// ---- Resource limits and impossible shapes (issue 8) ------------------------------------------------

TEST(HloParserErrors, TupleShapeNestedTooDeeply) {
  std::string text = "ENTRY e {\n  ROOT p = " + std::string(100000, '(') + "f32[]" + std::string(100000, ')') +
                     " parameter(0)\n}\n";
  EXPECT_EQ(firstErrorLine(text), "bad.hlo:2:269: error: tuple shape nested deeper than 256 levels");
}

TEST(HloParserErrors, TupleShapeAtTheNestingLimitParses) {
  std::string text = "ENTRY e {\n  ROOT p = " + std::string(200, '(') + "f32[]" + std::string(200, ')') +
                     " parameter(0)\n}\n";
  EXPECT_TRUE(parseHloModule(text, "ok.hlo").ok());
}

TEST(HloParserErrors, ElementCountOverflow) {
  EXPECT_EQ(firstErrorLine("ENTRY e {\n  ROOT p = f32[4294967296,4294967296,4] parameter(0)\n}\n"),
            "bad.hlo:2:12: error: shape f32[4294967296,4294967296,4] has more than 2^63 elements");
}

// The 2^60-byte limit holds for one-byte types too (s8[2^63-1] parsed, and `compile` reported a negative peak).
TEST(HloParserErrors, ByteSizeLimitCountsOneByteTypes) {
  EXPECT_EQ(firstErrorLine("ENTRY e {\n  ROOT p = s8[9223372036854775807] parameter(0)\n}\n"),
            "bad.hlo:2:12: error: shape s8[9223372036854775807] has more than 2^60 bytes");
  EXPECT_EQ(firstErrorLine("ENTRY e {\n  ROOT p = pred[2305843009213693952] parameter(0)\n}\n"),
            "bad.hlo:2:12: error: shape pred[2305843009213693952] has more than 2^60 bytes");
  // A zero dimension holds nothing: the other sizes cannot overflow it.
  EXPECT_TRUE(parseHloModule("ENTRY e {\n  ROOT p = f32[0,4294967296,4294967296] parameter(0)\n}\n", "ok.hlo").ok());
}

// A cycle through calls of any length is refused where it closes (self-calls were; a -> b -> a was not, and walked
// every pass and the evaluator into endless recursion).
TEST(HloParserErrors, CallCycleThroughSeveralComputations) {
  EXPECT_EQ(firstErrorLine(R"hlo(a {
  x = f32[2] parameter(0)
  ROOT c = f32[2] call(x), to_apply=b
}

b {
  y = f32[2] parameter(0)
  ROOT d = f32[2] call(y), to_apply=a
}

ENTRY e {
  p = f32[2] parameter(0)
  ROOT r = f32[2] call(p), to_apply=a
}
)hlo"),
            "bad.hlo:8:37: error: call cycle: 'a' calls 'b' calls 'a' again (through 'to_apply'); a computation may "
            "not reach itself through calls");
}

// An opcode we do not know is kept by its spelling, but a million-character "opcode" is refused with its start,
// not printed whole into every listing and message.
TEST(HloParserErrors, OpcodeLongerThanAnyIsRefusedAndShortened) {
  const std::string text = "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] " + std::string(1000000, 'x') +
                           "(p)\n}\n";
  const std::string line = firstErrorLine(text);
  EXPECT_EQ(line.rfind("bad.hlo:3:19: error: expected an opcode, found 'xxxx", 0), 0u) << line.substr(0, 200);
  EXPECT_NE(line.find("(1000000 characters)"), std::string::npos) << line.substr(0, 200);
  EXPECT_LT(line.size(), 200u);
  EXPECT_TRUE(parseHloModule("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] new-op(p)\n}\n", "ok.hlo").ok());
}

TEST(HloParserErrors, LayoutThatIsNotAPermutation) {
  EXPECT_EQ(firstErrorLine("ENTRY e {\n  ROOT p = f32[2,3]{5,0} parameter(0)\n}\n"),
            "bad.hlo:2:20: error: layout {5,0} is not a permutation of the dimensions 0..1");
  EXPECT_EQ(firstErrorLine("ENTRY e {\n  ROOT p = f32[2,3]{1,1} parameter(0)\n}\n"),
            "bad.hlo:2:20: error: layout {1,1} is not a permutation of the dimensions 0..1");
}

TEST(HloParserErrors, IntegerConstantOutOfRangeOfItsType) {
  EXPECT_EQ(firstErrorLine("ENTRY e {\n  ROOT c = s8[] constant(128)\n}\n"),
            "bad.hlo:2:26: error: s8 value 128 is out of range [-128, 127]");
  EXPECT_EQ(firstErrorLine("ENTRY e {\n  ROOT c = u8[2] constant({0, -1})\n}\n"),
            "bad.hlo:2:31: error: u8 value -1 is out of range [0, 255]");
  EXPECT_TRUE(parseHloModule("ENTRY e {\n  ROOT c = s8[2] constant({-128, 127})\n}\n", "ok.hlo").ok());
}

// ---- Shape-less instructions ----------------------------------------------------------------------------

TEST(HloParserErrors, ShapelessFormNamesWhatCannotBeInferred) {
  EXPECT_EQ(firstErrorLine("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  b = broadcast(x), dimensions={0}\n"
                           "  ROOT n = negate(b)\n}\n"),
            "bad.hlo:4:3: error: cannot infer the shape of 'b': broadcast needs its result shape written out (XLA "
            "cannot infer it either)");
  EXPECT_EQ(firstErrorLine("HloModule m\nENTRY e {\n  ROOT k = constant(1)\n}\n"),
            "bad.hlo:3:12: error: constant 'k' needs its shape: k = f32[...] constant(...)");
  EXPECT_EQ(firstErrorLine("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  a = add(b, x)\n"
                           "  ROOT b = add(a, x)\n}\n"),
            "bad.hlo:4:3: error: cannot infer the shape of 'a': it depends on itself or on an instruction whose shape "
            "cannot be inferred");
  EXPECT_EQ(firstErrorLine("HloModule m\nENTRY e {\n  x = f32[4,2] parameter(0)\n  y = bf16[2,3] parameter(1)\n"
                           "  ROOT d = dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"),
            "bad.hlo:5:8: error: cannot infer the shape of 'd': dot needs its result type written out when its "
            "operands' types differ");
  EXPECT_EQ(firstErrorLine("HloModule m\nENTRY e {\n  x = f32[4,2] parameter(0)\n"
                           "  ROOT t = transpose(x), dimensions={0}\n}\n"),
            "bad.hlo:4:8: error: cannot infer the shape of 't': transpose needs a permutation of its rank");
}

}  // namespace
}  // namespace fusionscope::core
