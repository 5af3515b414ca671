#include "bench/trace_generator.h"

#include <array>
#include <charconv>
#include <string_view>

#include "bench/bench_support.h"

namespace fusionscope::bench {
namespace {

void appendInt(std::string& out, int64_t value) {
  char buffer[24];
  out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

// Nanoseconds as Kineto's microseconds with three decimals ("1700000000123.456").
void appendMicros(std::string& out, int64_t ns) {
  appendInt(out, ns / 1000);
  int64_t frac = ns % 1000;
  char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                    static_cast<char>('0' + frac % 10)};
  out.append(digits, 4);
}

constexpr std::array<std::string_view, 8> kCpuOps = {"aten::linear",  "aten::addmm", "aten::layer_norm", "aten::gelu",
                                                     "aten::softmax", "aten::add_",  "aten::mul",        "aten::copy_"};

constexpr std::array<std::string_view, 8> kKernels = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >"
    "(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
    "ampere_sgemm_128x64_tn",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, "
    "float const*, float const*, float*, float*, float*)",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_"
    "128x128_32x3_nn_align4::Params)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous "
    "namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >"
    "(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, "
    "at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})",
    "Memcpy DtoD (Device -> Device)",
    "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
    "5x_cublas"};

constexpr int kHostPid = 4242;
constexpr int kHostThreads = 4;
constexpr int kDevices = 2;
constexpr int kStreams = 3;

}  // namespace

GeneratedTrace generateKinetoTrace(int64_t events) {
  GeneratedTrace result;
  std::string& out = result.text;
  out.reserve(static_cast<size_t>(events) * 215 + 4096);
  SplitMix64 rng(0x5eed);
  auto begin = [&](char ph) {
    out += "{\"ph\":\"";
    out += ph;
    out += '"';
    ++result.events;
  };

  out +=
      "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", "
      "\"totalGlobalMem\": 85031714816, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}],\n"
      "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 1},\n\"traceEvents\": [\n";

  // Metadata: process and thread names and sort indices.
  auto metadata = [&](std::string_view name, int pid, int tid, std::string_view argKey, std::string_view text,
                      int64_t number) {
    begin('M');
    out += ",\"name\":\"";
    out += name;
    out += "\",\"pid\":";
    appendInt(out, pid);
    out += ",\"tid\":";
    appendInt(out, tid);
    out += ",\"ts\":0,\"args\":{\"";
    out += argKey;
    out += "\":";
    if (text.empty()) {
      appendInt(out, number);
    } else {
      out += '"';
      out += text;
      out += '"';
    }
    out += "}},\n";
    ++result.metadata;
  };
  metadata("process_name", kHostPid, 0, "name", "python3", 0);
  metadata("process_sort_index", kHostPid, 0, "sort_index", "", kHostPid);
  for (int t = 0; t < kHostThreads; ++t) {
    metadata("thread_name", kHostPid, kHostPid + t, "name", t == 0 ? "thread 4242 (python3)" : "thread (pt_autograd)",
             0);
    metadata("thread_sort_index", kHostPid, kHostPid + t, "sort_index", "", t);
  }
  for (int d = 0; d < kDevices; ++d) {
    metadata("process_name", d, 0, "name", "GPU", 0);
    metadata("process_sort_index", d, 0, "sort_index", "", 5000000 + d);
    for (int s = 0; s < kStreams; ++s) {
      metadata("thread_name", d, 7 + s, "name", "stream", 0);
      metadata("thread_sort_index", d, 7 + s, "sort_index", "", 7 + s);
    }
  }

  int64_t ts = 1'700'000'000'000'000;  // ns
  int64_t externalId = 1;
  int64_t correlation = 100;
  int64_t step = 0;
  while (result.events < events) {
    // One ProfilerStep slice and one instant per step of 40 kernel launches (5 events each).
    int64_t stepStart = ts;
    constexpr int kLaunches = 40;
    int hostTid = kHostPid + static_cast<int>(step % kHostThreads);
    begin('X');
    out += ",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#";
    appendInt(out, step);
    out += "\",\"pid\":";
    appendInt(out, kHostPid);
    out += ",\"tid\":";
    appendInt(out, hostTid);
    out += ",\"ts\":";
    appendMicros(out, stepStart);
    out += ",\"dur\":";
    appendMicros(out, kLaunches * 9000 + 1000);
    out += ",\"args\":{\"External id\":";
    appendInt(out, externalId++);
    out += ",\"Record function id\":0,\"Ev Idx\":";
    appendInt(out, result.events);
    out += "}},\n";
    ++result.complete;

    begin('i');
    out += ",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"pid\":";
    appendInt(out, kHostPid);
    out += ",\"tid\":";
    appendInt(out, hostTid);
    out += ",\"ts\":";
    appendMicros(out, stepStart + 10);
    out += ",\"args\":{\"Total Reserved\":";
    appendInt(out, 2'000'000'000 + rng.uniform(1'000'000'000));
    out += ",\"Total Allocated\":";
    appendInt(out, 1'000'000'000 + rng.uniform(1'000'000'000));
    out += ",\"Bytes\":";
    appendInt(out, 4096 * rng.uniform(10000));
    out += ",\"Addr\":";
    appendInt(out, 139'000'000'000'000 + rng.uniform(1'000'000'000));
    out += ",\"Device Type\":1,\"Device Id\":0}},\n";
    ++result.instants;

    ts += 500;
    for (int k = 0; k < kLaunches && result.events < events; ++k) {
      int64_t op = rng.uniform(kCpuOps.size());
      int64_t kernel = rng.uniform(kKernels.size());
      int64_t opDur = 6000 + rng.uniform(3000);
      int64_t ext = externalId++;
      int device = static_cast<int>(rng.uniform(kDevices));
      int stream = 7 + static_cast<int>(rng.uniform(kStreams));

      begin('X');
      out += ",\"cat\":\"cpu_op\",\"name\":\"";
      out += kCpuOps[op];
      out += "\",\"pid\":";
      appendInt(out, kHostPid);
      out += ",\"tid\":";
      appendInt(out, hostTid);
      out += ",\"ts\":";
      appendMicros(out, ts);
      out += ",\"dur\":";
      appendMicros(out, opDur);
      out += ",\"args\":{\"External id\":";
      appendInt(out, ext);
      out += ",\"Record function id\":0,\"Sequence number\":";
      appendInt(out, ext * 3);
      out += ",\"Fwd thread id\":0,\"Ev Idx\":";
      appendInt(out, result.events);
      out += "}},\n";
      ++result.complete;

      int64_t launchTs = ts + 1500 + rng.uniform(1000);
      begin('X');
      out += ",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":";
      appendInt(out, kHostPid);
      out += ",\"tid\":";
      appendInt(out, hostTid);
      out += ",\"ts\":";
      appendMicros(out, launchTs);
      out += ",\"dur\":";
      appendMicros(out, 3000 + rng.uniform(2000));
      out += ",\"args\":{\"External id\":";
      appendInt(out, ext);
      out += ",\"cbid\":211,\"correlation\":";
      appendInt(out, correlation);
      out += "}},\n";
      ++result.complete;

      begin('s');
      out += ",\"id\":";
      appendInt(out, correlation);
      out += ",\"pid\":";
      appendInt(out, kHostPid);
      out += ",\"tid\":";
      appendInt(out, hostTid);
      out += ",\"ts\":";
      appendMicros(out, launchTs);
      out += ",\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n";
      ++result.flows;

      int64_t kernelTs = launchTs + 4000 + rng.uniform(20000);
      int64_t grid = 1 + rng.uniform(4096);
      begin('X');
      out += ",\"cat\":\"kernel\",\"name\":\"";
      out += kKernels[kernel];
      out += "\",\"pid\":";
      appendInt(out, device);
      out += ",\"tid\":";
      appendInt(out, stream);
      out += ",\"ts\":";
      appendMicros(out, kernelTs);
      out += ",\"dur\":";
      appendMicros(out, 1000 + rng.uniform(50000));
      out += ",\"args\":{\"External id\":";
      appendInt(out, ext);
      out += ",\"queued\":0,\"device\":";
      appendInt(out, device);
      out += ",\"context\":1,\"stream\":";
      appendInt(out, stream);
      out += ",\"correlation\":";
      appendInt(out, correlation);
      out += ",\"registers per thread\":";
      appendInt(out, 16 + 8 * rng.uniform(16));
      out += ",\"shared memory\":";
      appendInt(out, 1024 * rng.uniform(64));
      out += ",\"blocks per SM\":";
      appendInt(out, grid / 132);
      out += ".";
      appendInt(out, 100 + rng.uniform(900));
      out += ",\"warps per SM\":";
      appendInt(out, grid / 33);
      out += ".";
      appendInt(out, 100 + rng.uniform(900));
      out += ",\"grid\":[";
      appendInt(out, grid);
      out += ",1,1],\"block\":[";
      appendInt(out, 128 << rng.uniform(3));
      out += ",1,1],\"est. achieved occupancy %\":";
      appendInt(out, rng.uniform(101));
      out += "}},\n";
      ++result.complete;

      begin('f');
      out += ",\"id\":";
      appendInt(out, correlation);
      out += ",\"pid\":";
      appendInt(out, device);
      out += ",\"tid\":";
      appendInt(out, stream);
      out += ",\"ts\":";
      appendMicros(out, kernelTs);
      out += ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},\n";
      ++result.flows;

      ++correlation;
      ts += opDur + 1000 + rng.uniform(1000);
    }
    ts = stepStart + kLaunches * 9000 + 2000 > ts ? stepStart + kLaunches * 9000 + 2000 : ts + 1000;
    ++step;
  }
  out.erase(out.size() - 2, 1);  // the last ",\n" becomes "\n"
  out +=
      "],\n\"traceName\": \"/tmp/fusionscope_bench/worker0.1700000000000.pt.trace.json\",\n"
      "\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": 1700000000000000000\n}\n";
  return result;
}

}  // namespace fusionscope::bench
