// What counts as a kernel (KernelClassifier) for each kind of event FusionScope reads: Kineto/CUPTI and our own
// runners' `cat: kernel`, XLA's thunk events on the host (XLA:CPU, TF's tf.function with jit_compile), XLA's kernels
// on a device plane, and a real JAX profile fused and unfused.
#include "profiler/trace/kernel_events.h"

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/compare/trace_compare.h"
#include "profiler/compare/trace_stats.h"
#include "profiler/trace/chrome_json_import.h"
#include "tests/profiler/trace_testing.h"
#include "tests/common/source_paths.h"

namespace fusionscope::profiler {
namespace {

namespace fs = std::filesystem;

const fs::path kXlaData = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "mnist_step";

using fusionscope::testing::importOrDie;

// Names of the events the classifier calls kernels, in event order.
std::vector<std::string> kernelNames(const Trace& trace) {
  const KernelClassifier kernels(trace);
  std::vector<std::string> names;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (kernels.isKernel(i)) names.emplace_back(trace.events[i].name);
  }
  EXPECT_EQ(kernels.kernelCount(), static_cast<int64_t>(names.size()));
  return names;
}

TEST(KernelEventsTest, KinetoKernelsAreKernelsAndCopiesAreDeviceWork) {
  Trace trace = importOrDie(R"([
    {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":10},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2},
    {"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":3,"dur":4,"args":{"correlation":5}},
    {"ph":"X","cat":"Kernel","name":"loop_fusion","pid":0,"tid":7,"ts":8,"dur":1},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":8,"ts":9,"dur":1},
    {"ph":"X","cat":"gpu_memset","name":"Memset","pid":0,"tid":8,"ts":11,"dur":1},
    {"ph":"X","cat":"kernels","name":"not quite","pid":0,"tid":7,"ts":12,"dur":1},
    {"ph":"i","cat":"kernel","name":"instant","pid":0,"tid":7,"ts":13,"s":"t"}])");
  EXPECT_EQ(kernelNames(trace), (std::vector<std::string>{"add_kernel", "loop_fusion"}));
  const KernelClassifier kernels(trace);
  EXPECT_FALSE(kernels.isDeviceWork(0));
  EXPECT_FALSE(kernels.isDeviceWork(1));
  EXPECT_TRUE(kernels.isDeviceWork(2));
  EXPECT_TRUE(kernels.isDeviceWork(4));
  EXPECT_FALSE(kernels.isKernel(4));
  EXPECT_TRUE(kernels.isDeviceWork(5));
  EXPECT_FALSE(kernels.isDeviceWork(6));
  EXPECT_FALSE(kernels.isDeviceWork(7));
}

// As `fusionscope-cli run --trace` and fusionscope-gpurun write their kernels.
TEST(KernelEventsTest, OwnRunnerKernels) {
  Trace trace = importOrDie(R"([
    {"ph":"X","cat":"kernel","name":"fusion.2","pid":0,"tid":0,"ts":0,"dur":3,
     "args":{"kind":"kLoop","bytes read":64,"bytes written":32,"elements":8}},
    {"ph":"X","cat":"kernel","name":"kernel_entry_0","pid":0,"tid":1,"ts":5,"dur":2,
     "args":{"correlation":7,"hlo_op":"fusion.3","kind":"kLoop"}},
    {"ph":"X","cat":"cuda_driver","name":"cuLaunchKernel","pid":1,"tid":9,"ts":4,"dur":1,"args":{"correlation":7}}])");
  EXPECT_EQ(kernelNames(trace), (std::vector<std::string>{"fusion.2", "kernel_entry_0"}));
  EXPECT_EQ(hloOp(trace.events[1]), "fusion.3");
  EXPECT_EQ(hloOp(trace.events[0]), "");
}

// XLA:CPU as jax.profiler writes it: thunks carry args hlo_op/hlo_module and no category, on the host process's
// Eigen and PjRt client threads; the python thread's events and the executor's own events are not kernels.
TEST(KernelEventsTest, XlaCpuThunksOnHostThreadsAreKernels) {
  Trace trace = importOrDie(R"json({"displayTimeUnit":"ns","traceEvents":[
    {"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}},
    {"ph":"M","pid":701,"tid":11,"name":"thread_name","args":{"name":"tf_XLAEigen/-3132899922504712300"}},
    {"ph":"M","pid":701,"tid":12,"name":"thread_name","args":{"name":"tf_XLAPjRtCpuClient/-7581529188450326584"}},
    {"ph":"M","pid":701,"tid":13,"name":"thread_name","args":{"name":"python"}},
    {"ph":"X","pid":701,"tid":13,"ts":1,"dur":50,"name":"PjitFunction(step)"},
    {"ph":"X","pid":701,"tid":12,"ts":2,"dur":40,"name":"ThunkExecutor::Execute (wait for completion)",
     "args":{"_src":"cpu_client.cc","device_ordinal":"0","run_id":"-1"}},
    {"ph":"X","pid":701,"tid":12,"ts":3,"dur":6.289,"name":"ynn_fusion",
     "args":{"_src":"thunk_executor.cc","device_ordinal":"0","hlo_module":"jit_step","hlo_op":"ynn_fusion","run_id":"-1"}},
    {"ph":"X","pid":701,"tid":11,"ts":10,"dur":2,"name":"multiply_subtract_fusion.1",
     "args":{"hlo_module":"jit_step","hlo_op":"multiply_subtract_fusion.1"}},
    {"ph":"X","pid":701,"tid":12,"ts":20,"dur":3,"name":"jit_step","args":{"hlo_module":"jit_step"}},
    {"ph":"X","pid":701,"tid":12,"ts":30,"dur":3,"name":"empty op","args":{"hlo_op":""}},
    {}]})json");
  EXPECT_EQ(kernelNames(trace), (std::vector<std::string>{"ynn_fusion", "multiply_subtract_fusion.1"}));
  EXPECT_EQ(hloModule(trace.events[2]), "jit_step");
  EXPECT_EQ(hloOp(trace.events[3]), "multiply_subtract_fusion.1");
  EXPECT_EQ(hloModule(trace.events[0]), "");
  EXPECT_EQ(trace.stats.skippedTotal(), 0);
}

// TF's tf.function(jit_compile=True) on the CPU: XLA's thunks on the caller's thread and TF's Eigen pool; TF's
// device naming (/job:localhost/.../device:CPU:0) is the host too.
TEST(KernelEventsTest, TfXlaThunksAndTfDeviceCpuNaming) {
  Trace trace = importOrDie(R"({"traceEvents":[
    {"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}},
    {"ph":"M","pid":701,"tid":1,"name":"thread_name","args":{"name":"tf_numa_-1_Eigen/-8798324776464471194"}},
    {"ph":"M","pid":702,"name":"process_name","args":{"name":"/job:localhost/replica:0/task:0/device:CPU:0"}},
    {"ph":"X","pid":701,"tid":1,"ts":1,"dur":100,"name":"MatMul.4",
     "args":{"device_ordinal":"-1","hlo_module":"a_inference_train_step_74","hlo_op":"MatMul.4","run_id":"-1"}},
    {"ph":"X","pid":702,"tid":5,"ts":200,"dur":7,"name":"multiply_reduce_fusion",
     "args":{"hlo_module":"a_inference_train_step_74","hlo_op":"multiply_reduce_fusion"}},
    {"ph":"X","pid":702,"tid":5,"ts":300,"dur":7,"name":"MatMul","args":{"long_name":"gradients/MatMul"}}]})");
  EXPECT_EQ(kernelNames(trace), (std::vector<std::string>{"MatMul.4", "multiply_reduce_fusion"}));
}

// A while thunk's event encloses its body's thunks on the same thread: the body ops are the kernels, the while is
// control flow (counting it would count the body's time twice). Overlap without enclosure is not nesting.
TEST(KernelEventsTest, EnclosingXlaOpIsControlFlowNotAKernel) {
  Trace trace = importOrDie(R"([
    {"ph":"X","pid":1,"tid":1,"ts":122.161,"dur":13.711,"name":"while.1","args":{"hlo_op":"while.1"}},
    {"ph":"X","pid":1,"tid":1,"ts":122.642,"dur":0.341,"name":"copy.2","args":{"hlo_op":"copy.2"}},
    {"ph":"X","pid":1,"tid":1,"ts":123.093,"dur":0.691,"name":"add_tanh_fusion","args":{"hlo_op":"add_tanh_fusion"}},
    {"ph":"X","pid":1,"tid":1,"ts":135.5,"dur":0.372,"name":"wrapped_add","args":{"hlo_op":"wrapped_add"}},
    {"ph":"X","pid":1,"tid":2,"ts":123,"dur":1,"name":"other_thread","args":{"hlo_op":"negate.1"}},
    {"ph":"X","pid":1,"tid":3,"ts":0,"dur":10,"name":"a","args":{"hlo_op":"a"}},
    {"ph":"X","pid":1,"tid":3,"ts":5,"dur":10,"name":"b","args":{"hlo_op":"b"}},
    {"ph":"X","pid":1,"tid":3,"ts":20,"dur":5,"name":"c","args":{"hlo_op":"c"}},
    {"ph":"X","pid":1,"tid":3,"ts":20,"dur":0,"name":"zero","args":{"hlo_op":"zero"}}])");
  EXPECT_EQ(kernelNames(trace), (std::vector<std::string>{"copy.2", "add_tanh_fusion", "wrapped_add", "other_thread",
                                                          "a", "b", "c", "zero"}));
}

// XLA on a GPU as xprof converts it: kernels on the device plane's stream lines carry hlo_op; the same op on the
// derived "XLA Ops" line and the host-side thunk with hlo_op repeat them and are not kernels.
TEST(KernelEventsTest, XlaGpuDeviceKernelsWinOverHostThunksAndDerivedLines) {
  Trace trace = importOrDie(R"json({"traceEvents":[
    {"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},
    {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"Stream #14(Compute)"}},
    {"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"XLA Ops"}},
    {"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"XLA Modules"}},
    {"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}},
    {"ph":"X","pid":701,"tid":9,"ts":1,"dur":3,"name":"loop_add_fusion","args":{"hlo_op":"loop_add_fusion","hlo_module":"jit_f"}},
    {"ph":"X","pid":1,"tid":1,"ts":5,"dur":2,"name":"loop_add_fusion",
     "args":{"correlation_id":"3","hlo_op":"loop_add_fusion","hlo_module":"jit_f","kernel_details":"regs:16"}},
    {"ph":"X","pid":1,"tid":2,"ts":5,"dur":2,"name":"loop_add_fusion","args":{"hlo_op":"loop_add_fusion"}},
    {"ph":"X","pid":1,"tid":3,"ts":5,"dur":2,"name":"jit_f","args":{"hlo_module":"jit_f"}},
    {"ph":"X","pid":1,"tid":1,"ts":8,"dur":1,"name":"MemcpyD2H","args":{"memcpy_details":"kind:DtoH"}}]})json");
  EXPECT_EQ(kernelNames(trace), (std::vector<std::string>{"loop_add_fusion"}));
  EXPECT_TRUE(KernelClassifier(trace).isKernel(1));
}

TEST(KernelEventsTest, ArgStringReadsOnlyTopLevelStrings) {
  EXPECT_EQ(argString(R"({"hlo_op":"fusion.3","kind":"kLoop"})", "hlo_op"), "fusion.3");
  EXPECT_EQ(argString(R"({ "hlo_op" :  "mul.4" })", "hlo_op"), "mul.4");
  EXPECT_EQ(argString(R"({"hlo_op":"a\"b","n":"\\"})", "hlo_op"), "a\"b");
  EXPECT_EQ(argString(R"({"x":{"hlo_op":"inner"},"hlo_op":"outer.1"})", "hlo_op"), "outer.1");
  EXPECT_EQ(argString(R"({"x":{"hlo_op":"inner"}})", "hlo_op"), std::nullopt);
  EXPECT_EQ(argString(R"({"k":"hlo_op","m":1})", "hlo_op"), std::nullopt);
  EXPECT_EQ(argString(R"({"hlo_op":7})", "hlo_op"), std::nullopt);
  EXPECT_EQ(argString("", "hlo_op"), std::nullopt);
  EXPECT_EQ(argString("not json \"hlo_op\"", "hlo_op"), std::nullopt);
  TraceEvent event;
  event.args = R"({"instruction":"add.1"})";
  EXPECT_EQ(hloOp(event), "add.1");
  event.args = R"({"hlo_op":"fusion.1","instruction":"add.1","hlo_module":"m"})";
  EXPECT_EQ(hloOp(event), "fusion.1");
  EXPECT_EQ(hloModule(event), "m");
}

// Kernel -> instruction: the hlo_op (or instruction) arg when there is one, else the name; lookups compare names
// normalised ("fusion.3" is "fusion_3"), and an event with the arg matches by the arg only.
TEST(KernelEventsTest, InstructionIndexMapsKernelsToInstructions) {
  const Trace trace = importOrDie(R"([
{"ph":"X","cat":"kernel","name":"kernel_entry_0","pid":0,"tid":1,"ts":0,"dur":1,"args":{"hlo_op":"fusion.3"}},
{"ph":"X","cat":"kernel","name":"fusion_3","pid":0,"tid":1,"ts":2,"dur":1},
{"ph":"X","cat":"kernel","name":"fusion_3","pid":0,"tid":1,"ts":4,"dur":1,"args":{"instruction":"add.1"}},
{"ph":"X","cat":"kernel","name":"bad_args","pid":0,"tid":1,"ts":6,"dur":1,"args":{"hlo_op":7}},
{"ph":"i","name":"fusion.3","pid":0,"tid":1,"ts":8,"s":"t"}])");
  const InstructionIndex index(trace);
  EXPECT_EQ(index.instructionOf(trace, 0), "fusion.3");
  EXPECT_EQ(index.instructionOf(trace, 1), "fusion_3");
  EXPECT_EQ(index.instructionOf(trace, 2), "add.1");
  EXPECT_EQ(index.instructionOf(trace, 3), "bad_args");
  EXPECT_EQ(index.eventsOfInstruction(trace, "fusion.3"), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(index.eventsOfInstruction(trace, "add-1"), (std::vector<uint32_t>{2}));
  EXPECT_EQ(eventsNamed(trace, "fusion.3"), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(normalizeKernelName("a.b-c_d"), "a_b_c_d");
}

// The real thing: JAX 0.10 on the CPU, the MNIST softmax step run 5 times unfused (--xla_disable_hlo_passes=fusion)
// and fused, in both forms jax.profiler writes (Perfetto JSON and the xplane-converted trace). Counts taken with a
// python json script (events whose args have hlo_op; mnist_step has no control flow), not with this code.
TEST(KernelEventsTest, RealJaxProfilesHaveKernels) {
  struct Case {
    const char* file;
    int64_t kernels;
    size_t distinct;
  };
  for (const Case& c : {Case{"perfetto-unfused.json.gz", 125, 25}, Case{"perfetto-fused.json.gz", 45, 9},
                        Case{"profile-unfused.json.gz", 125, 25}, Case{"profile-fused.json.gz", 45, 9}}) {
    SCOPED_TRACE(c.file);
    StatusOr<Trace> trace = importChromeTrace((kXlaData / c.file).string());
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_EQ(trace->stats.skippedTotal(), 0);
    EXPECT_EQ(trace->stats.emptyObjects, 1);
    TraceStats stats = computeStats(*trace);
    EXPECT_EQ(stats.kernelCount, c.kernels);
    EXPECT_TRUE(stats.kernelsOnly);
    EXPECT_EQ(stats.names.size(), c.distinct);
    EXPECT_GT(stats.kernelTimeNs, 0);
    EXPECT_EQ(stats.categoryNs.at("(xla op)"), stats.kernelTimeNs);
  }
}

}  // namespace
}  // namespace fusionscope::profiler
