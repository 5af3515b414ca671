#pragma once

#include "core/base/status.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

class HloInstruction;

// The result shape XLA's shape inference gives `instruction` from its operands' shapes, its attributes and the
// computations it calls (which must already have shapes): what the parser fills in for the shape-less form XLA's
// own tests use (`ROOT add = add(lhs, rhs)`). Elementwise ops, compare, select, clamp, tuple, get-tuple-element,
// transpose, reverse, slice, concatenate, pad, dot, reduce (variadic too), reduce-window, sort, map, call, fusion,
// while, conditional, dynamic-slice and -update-slice, scatter, copies and collectives. Ops whose result cannot be
// derived (parameter, constant, broadcast, reshape, convert, iota, custom-call, ...) and operands that contradict
// each other fail with what is missing or wrong. No layout: the result is row-major, as an unannotated shape.
StatusOr<Shape> inferShape(const HloInstruction& instruction);

}  // namespace fusionscope::core
