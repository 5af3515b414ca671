#!/usr/bin/env python3
"""An unmodified JAX program for scripts/gpu-check's "JAX trace" check: a jitted softmax-regression training step
on random data, ten steps; numpy arrays go to the device (host-to-device copies) and the loss comes back each step
(device-to-host copies). It knows nothing of the collector."""
import jax
import jax.numpy as jnp
import numpy as np


def loss_fn(w, b, x, y):
    logits = x @ w + b
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


@jax.jit
def step(w, b, x, y):
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b, x, y)
    return w - 0.5 * gw, b - 0.5 * gb, loss


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 512)]
    w, b = jnp.zeros((784, 10)), jnp.zeros((10,))
    print("devices:", jax.devices())
    for i in range(10):
        w, b, loss = step(w, b, x, y)
        print("step %d loss %.4f" % (i, float(loss)))


if __name__ == "__main__":
    main()
