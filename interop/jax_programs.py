"""Small real JAX programs for FusionScope's interop corpus.

Each program is a function returning (jitted_fn, args). run_program.py runs one of them in a fresh process
(XLA_FLAGS must be set before jax is imported) so XLA writes its per-pass dumps and a profile.
"""
import jax
import jax.numpy as jnp


def _key(i):
    return jax.random.PRNGKey(i)


def mlp_train():
    """Two-layer MLP, one SGD step (forward, backward, update)."""
    def loss(params, x, y):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x @ w1 + b1)
        logits = h @ w2 + b2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return [p - 0.01 * g for p, g in zip(params, grads)]

    params = [jax.random.normal(_key(0), (64, 128)) * 0.1, jnp.zeros(128),
              jax.random.normal(_key(1), (128, 10)) * 0.1, jnp.zeros(10)]
    x = jax.random.normal(_key(2), (32, 64))
    y = jax.nn.one_hot(jnp.arange(32) % 10, 10)
    return jax.jit(step), (params, x, y)


def attention():
    """Scaled dot-product attention over [batch, heads, seq, dim]."""
    def attn(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)

    shape = (2, 4, 64, 32)
    return jax.jit(attn), tuple(jax.random.normal(_key(i), shape) for i in range(3))


def layernorm_gelu():
    """LayerNorm followed by GELU (tanh approximation), as in a transformer MLP block."""
    def f(x, g, b):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        y = (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b
        return jax.nn.gelu(y, approximate=True)

    return jax.jit(f), (jax.random.normal(_key(0), (256, 256)), jnp.ones(256), jnp.zeros(256))


def conv_pool():
    """A small conv net: conv, bias, relu, max pool, conv, relu, average pool, dense."""
    def f(x, k1, k2, w):
        dn = ("NHWC", "HWIO", "NHWC")
        y = jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn)
        y = jax.nn.relu(y + 0.1)
        y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = jax.nn.relu(jax.lax.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=dn))
        y = jnp.mean(y, axis=(1, 2))
        return y @ w

    return jax.jit(f), (jax.random.normal(_key(0), (4, 16, 16, 3)), jax.random.normal(_key(1), (3, 3, 3, 8)),
                        jax.random.normal(_key(2), (3, 3, 8, 16)), jax.random.normal(_key(3), (16, 10)))


def loops():
    """fori_loop and while_loop: ten damped updates, then iterate until the norm is small."""
    def f(x):
        x = jax.lax.fori_loop(0, 10, lambda i, v: jnp.tanh(v * 0.9 + 0.01 * i), x)
        return jax.lax.while_loop(lambda v: jnp.sum(v * v) > 1.0, lambda v: v * 0.5, x)

    return jax.jit(f), (jax.random.normal(_key(0), (128,)),)


def scan_rnn():
    """A tanh RNN over 16 time steps with lax.scan."""
    def f(wx, wh, xs, h0):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h
        h, hs = jax.lax.scan(cell, h0, xs)
        return h, jnp.sum(hs)

    return jax.jit(f), (jax.random.normal(_key(0), (32, 64)) * 0.1, jax.random.normal(_key(1), (64, 64)) * 0.1,
                        jax.random.normal(_key(2), (16, 8, 32)), jnp.zeros((8, 64)))


def mnist_step():
    """MNIST softmax regression, one SGD step on a batch of 100."""
    def loss(w, b, x, y):
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(x @ w + b) * y, axis=1))

    def step(w, b, x, y):
        gw, gb = jax.grad(loss, argnums=(0, 1))(w, b, x, y)
        return w - 0.5 * gw, b - 0.5 * gb

    x = jax.random.uniform(_key(0), (100, 784))
    y = jax.nn.one_hot(jnp.arange(100) % 10, 10)
    return jax.jit(step), (jnp.zeros((784, 10)), jnp.zeros(10), x, y)


def dropout_mlp():
    """Two-layer MLP with dropout on the hidden layer; the mask comes from jax.random's `rbg` generator, which
    is XLA's rng-bit-generator (the key is passed as its u32[4] data)."""
    def f(key_data, x, w1, w2):
        key = jax.random.wrap_key_data(key_data, impl="rbg")
        h = jax.nn.relu(x @ w1)
        keep = jax.random.bernoulli(key, 0.9, h.shape)
        h = jnp.where(keep, h / 0.9, 0.0)
        return h @ w2

    key_data = jax.random.key_data(jax.random.key(42, impl="rbg"))
    return jax.jit(f), (key_data, jax.random.normal(_key(0), (64, 256)), jax.random.normal(_key(1), (256, 512)) * 0.05,
                        jax.random.normal(_key(2), (512, 10)) * 0.05)


PROGRAMS = {f.__name__: f for f in (mlp_train, attention, layernorm_gelu, conv_pool, loops, scan_rnn, mnist_step,
                                     dropout_mlp)}
