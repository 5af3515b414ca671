#pragma once

#include "core/ir/literal.h"
#include "core/ir/shape.h"
#include "core/text/attribute_text.h"
#include "core/text/text_cursor.h"

namespace fusionscope::core {

// Reads the value inside `constant(...)` for a constant of `shape`, leaving the cursor before the closing ')':
// a bare value for scalars, nested braces (depth = rank) for arrays, `(re, im)` for complex elements, `{...}`
// for values XLA elided, and the verbatim text for tuple constants. Checks the value count against the shape.
// On failure says where and why, in the same words as the parser's other errors.
AttributeResult readLiteral(TextCursor& cursor, const Shape& shape, Literal& out);

}  // namespace fusionscope::core
