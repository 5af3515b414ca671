"""Small real JAX programs for FusionScope's interop corpus.

Each program is a function returning (jitted_fn, args). run_program.py runs one of them in a fresh process
(XLA_FLAGS must be set before jax is imported) so XLA writes its per-pass dumps and a profile.
"""
import jax
import jax.numpy as jnp

import jax_more_programs


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


def mobilenet_v2_small_train():
    """One SGD step of a MobileNetV2-style classifier at a test's size (batch 2, 32x32x3 images): a strided 3x3 stem,
    inverted residual blocks (1x1 expand, depthwise 3x3 as a grouped convolution, 1x1 project, residual add),
    training-mode batch norm, ReLU6 as clip, global average pool, dense, softmax cross-entropy. The ops of the
    corpus's torch_xla MobileNetV2 training step (~1e11 scalar operations, 79 GB of values to interpret) at a size
    the evaluator checks in a unit test (tests/data/corpus/jax_mobilenet_v2_small_train.hlo)."""
    dn = ("NHWC", "HWIO", "NHWC")

    def bn(x, gamma, beta):
        mean = jnp.mean(x, axis=(0, 1, 2))
        var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2))
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta

    def conv(x, k, stride=1, groups=1):
        return jax.lax.conv_general_dilated(x, k, (stride, stride), "SAME", dimension_numbers=dn,
                                            feature_group_count=groups)

    def relu6(x):
        return jnp.clip(x, 0.0, 6.0)

    # (input channels, expansion, output channels, stride) of each inverted residual block.
    blocks = [(8, 1, 8, 1), (8, 4, 12, 2), (12, 4, 12, 1), (12, 4, 16, 2)]

    def init():
        keys = iter(jax.random.split(_key(0), 64))
        p = {"stem": jax.random.normal(next(keys), (3, 3, 3, 8)) * 0.2, "stem_bn": (jnp.ones(8), jnp.zeros(8))}
        for i, (cin, e, cout, _) in enumerate(blocks):
            hidden = cin * e
            p[f"b{i}"] = {
                "expand": jax.random.normal(next(keys), (1, 1, cin, hidden)) * 0.2,
                "bn1": (jnp.ones(hidden), jnp.zeros(hidden)),
                "dw": jax.random.normal(next(keys), (3, 3, 1, hidden)) * 0.2,
                "bn2": (jnp.ones(hidden), jnp.zeros(hidden)),
                "project": jax.random.normal(next(keys), (1, 1, hidden, cout)) * 0.2,
                "bn3": (jnp.ones(cout), jnp.zeros(cout)),
            }
        p["head"] = jax.random.normal(next(keys), (16, 10)) * 0.2
        p["head_b"] = jnp.zeros(10)
        return p

    def forward(p, x):
        y = relu6(bn(conv(x, p["stem"], 2), *p["stem_bn"]))
        for i, (cin, e, cout, stride) in enumerate(blocks):
            b = p[f"b{i}"]
            h = relu6(bn(conv(y, b["expand"]), *b["bn1"])) if e != 1 else y
            h = relu6(bn(conv(h, b["dw"], stride, groups=h.shape[-1]), *b["bn2"]))
            h = bn(conv(h, b["project"]), *b["bn3"])
            y = y + h if stride == 1 and cin == cout else h
        return jnp.mean(y, axis=(1, 2)) @ p["head"] + p["head_b"]

    def loss(p, x, labels):
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(forward(p, x)) * labels, axis=-1))

    def step(p, x, labels):
        grads = jax.grad(loss)(p, x, labels)
        return jax.tree_util.tree_map(lambda a, g: a - 0.05 * g, p, grads)

    x = jax.random.normal(_key(1), (2, 32, 32, 3))
    labels = jax.nn.one_hot(jnp.array([3, 7]), 10)
    return jax.jit(step), (init(), x, labels)


PROGRAMS = {f.__name__: f for f in (mlp_train, attention, layernorm_gelu, conv_pool, loops, scan_rnn, mnist_step,
                                     dropout_mlp, mobilenet_v2_small_train, *jax_more_programs.PROGRAMS)}
