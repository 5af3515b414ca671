// JAX's LAPACK custom calls in the evaluator: the same LAPACK routines as compiled code, in f64 on row-major copies
// of the operands (core/linalg/linalg_call.h), the results rounded once to the program's type.
#include <cstring>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/linalg/linalg_call.h"

namespace fusionscope::core::eval {

StatusOr<Value> evalLinalg(const HloInstruction& inst, Operands operands) {
  StatusOr<linalg::Call> parsed = linalg::callOf(inst);
  if (!parsed.ok()) return parsed.status();
  linalg::Call call = std::move(*parsed);
  if (operands.size() != call.inputs.size()) {
    return Status::error(fmt::format("{}: {} operand(s), {} value(s)", inst.name(), call.inputs.size(), operands.size()));
  }
  // Every floating-point array in f64; the s32 ones (pivots, info) as they are.
  call.type = PrimitiveType::kF64;
  std::vector<std::vector<double>> floats;
  std::vector<std::vector<int32_t>> ints;
  std::vector<void*> buffers;
  floats.reserve(call.inputs.size() + call.outputs.size());
  ints.reserve(call.outputs.size());
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    FS_RETURN_IF_ERROR(expectArray(*operands[i], "a LAPACK operand"));
    std::span<const double> data = operands[i]->floatData();
    if (data.size() != static_cast<size_t>(operands[i]->elementCount())) {
      return Status::error(fmt::format("{}: operand {} is not floating-point", inst.name(), i));
    }
    floats.emplace_back(data.begin(), data.end());
    call.inputs[i].type = PrimitiveType::kF64;
    buffers.push_back(floats.back().data());
  }
  std::vector<Shape> shapes;
  if (inst.shape().isTuple()) {
    shapes = inst.shape().tupleElements();
  } else {
    shapes.push_back(inst.shape());
  }
  for (size_t i = 0; i < call.outputs.size(); ++i) {
    const int64_t count = shapes[i].elementCount();
    if (isFloatingPoint(shapes[i].elementType())) {
      floats.emplace_back(static_cast<size_t>(count), 0.0);
      call.outputs[i].type = PrimitiveType::kF64;
      buffers.push_back(floats.back().data());
    } else {
      ints.emplace_back(static_cast<size_t>(count), 0);
      buffers.push_back(ints.back().data());
    }
  }
  FS_RETURN_IF_ERROR(linalg::run(call, buffers.data(), 0, call.batch()));
  std::vector<Value> results;
  size_t nextFloat = call.inputs.size();
  size_t nextInt = 0;
  for (const Shape& shape : shapes) {
    if (isFloatingPoint(shape.elementType())) {
      results.push_back(Value::floats(shape, std::move(floats[nextFloat++])));
    } else {
      const std::vector<int32_t>& data = ints[nextInt++];
      results.push_back(Value::integers(shape, std::vector<int64_t>(data.begin(), data.end())));
    }
  }
  if (!inst.shape().isTuple()) return std::move(results[0]);
  return Value::tuple(std::move(results));
}

}  // namespace fusionscope::core::eval
