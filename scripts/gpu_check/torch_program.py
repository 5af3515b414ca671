#!/usr/bin/env python3
"""PyTorch workloads for scripts/gpu-check; an ordinary CUDA program that knows nothing of the collector.

  torch_program.py                  a few training steps of a small MLP: host-to-device and device-to-host copies,
                                    kernels, runtime API calls (the "PyTorch trace" check)
  torch_program.py --launches N     N one-kernel in-place adds on a small tensor, timed between synchronisations
                                    after a warm-up (the collector-overhead loop); prints {"launches", "seconds"}
  torch_program.py --train-steps N  N timed training steps of a wider MLP (4096x1024 batch): the overhead on a
                                    realistic launch mix; prints {"steps", "seconds"}
  torch_program.py --copy-bandwidth device-to-device copy of 256 MiB, 20 times, timed with CUDA events; prints
                                    {"copy_gb_per_s"} counting read + write bytes, as the kernels' figures do
"""
import argparse
import json
import time

import torch


def train():
    torch.manual_seed(0)
    device = torch.device("cuda")
    x = torch.randn(512, 784).to(device)  # host-to-device copies
    y = torch.randint(0, 10, (512,)).to(device)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print("step %d loss %.4f" % (step, loss.item()))  # device-to-host copy


def launches(n):
    x = torch.zeros(1024, device="cuda")
    for _ in range(200):
        x.add_(1.0)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    assert float(x[0]) == 200 + n
    print(json.dumps({"launches": n, "seconds": seconds}))


def train_steps(n):
    """A realistic launch mix: n timed training steps of a wider MLP (kernels of tens of microseconds)."""
    torch.manual_seed(0)
    device = torch.device("cuda")
    x = torch.randn(4096, 1024, device=device)
    y = torch.randint(0, 10, (4096,), device=device)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.GELU(), torch.nn.LayerNorm(2048),
                                torch.nn.Linear(2048, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    print(json.dumps({"steps": n, "seconds": time.perf_counter() - start}))


def copy_bandwidth():
    nbytes = 256 << 20
    a = torch.ones(nbytes // 4, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 20
    begin.record()
    for _ in range(reps):
        b.copy_(a)
    end.record()
    torch.cuda.synchronize()
    seconds = begin.elapsed_time(end) / 1e3
    print(json.dumps({"bytes_per_copy": 2 * nbytes, "reps": reps, "seconds": seconds,
                      "copy_gb_per_s": 2 * nbytes * reps / seconds / 1e9, "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--launches", type=int)
    p.add_argument("--train-steps", type=int)
    p.add_argument("--copy-bandwidth", action="store_true")
    a = p.parse_args()
    if a.launches:
        launches(a.launches)
    elif a.train_steps:
        train_steps(a.train_steps)
    elif a.copy_bandwidth:
        copy_bandwidth()
    else:
        train()
