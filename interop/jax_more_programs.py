"""More JAX programs for the interop corpus, of kinds jax_programs.py lacks (issue 38's list): decoding with a KV
cache and top-p sampling, a mixture of experts, int8 inference, batch-norm training, an LSTM, a VAE, dilated audio
convolutions, depthwise-separable convolutions, an embedding bag, a bf16 transformer block with RoPE and AdamW,
Gaussian-process regression (Cholesky), dense linear algebra (QR, LU, a symmetric eigensolver, the SVD), signal
processing through the FFT (a spectrogram, FFT convolution, a 2-D spectral filter), the modes of linear dynamical
systems (the general eigensolver, complex arithmetic), complex baseband signal processing (complex convolution,
cumulative sums, scatter, sort and eigenvalues) and FP8 inference (float8 dots accumulating in f32).

Each program is a function returning (jitted_fn, args), as in jax_programs.py (which lists these in PROGRAMS).
Sizes are a unit test's: the evaluator checks every module in seconds.
"""
import jax
import jax.numpy as jnp


def _key(i):
    return jax.random.PRNGKey(100 + i)


def kv_decode_sample():
    """Eight steps of greedy-free decoding: one attention layer over a KV cache written with dynamic_update_slice
    in a fori_loop, then top-p (nucleus) sampling of the next token (sort, cumsum, a mask, jax.random.categorical)."""
    vocab, dim, steps = 64, 32, 8

    def decode(emb, wq, wk, wv, wo, key, token):
        k_cache = jnp.zeros((steps, dim))
        v_cache = jnp.zeros((steps, dim))
        tokens = jnp.zeros((steps,), jnp.int32)

        def body(t, state):
            k_cache, v_cache, tokens, token, key = state
            x = emb[token]
            q, k, v = x @ wq, x @ wk, x @ wv
            k_cache = jax.lax.dynamic_update_slice(k_cache, k[None], (t, 0))
            v_cache = jax.lax.dynamic_update_slice(v_cache, v[None], (t, 0))
            scores = k_cache @ q / jnp.sqrt(dim)
            scores = jnp.where(jnp.arange(steps) <= t, scores, -1e9)
            h = jax.nn.softmax(scores) @ v_cache
            logits = (h @ wo) @ emb.T
            order = jnp.argsort(-logits)
            probs = jax.nn.softmax(logits[order])
            keep = jnp.cumsum(probs) - probs < 0.9
            masked = jnp.where(keep, jnp.log(probs), -jnp.inf)
            key, sub = jax.random.split(key)
            token = order[jax.random.categorical(sub, masked)].astype(jnp.int32)
            tokens = tokens.at[t].set(token)
            return k_cache, v_cache, tokens, token, key

        state = jax.lax.fori_loop(0, steps, body, (k_cache, v_cache, tokens, token, key))
        return state[2]

    ks = jax.random.split(_key(0), 5)
    emb = jax.random.normal(ks[0], (vocab, dim)) * 0.3
    ws = [jax.random.normal(ks[i], (dim, dim)) * 0.2 for i in range(1, 5)]
    return jax.jit(decode), (emb, *ws, jax.random.PRNGKey(7), jnp.int32(3))


def moe_layer():
    """A mixture-of-experts layer: a router's softmax, top-2 experts per token (lax.top_k), the gates renormalised,
    tokens dispatched to four expert MLPs through one-hot combine weights (einsum), and a load-balancing loss."""
    tokens, dim, hidden, experts = 32, 32, 64, 4

    def moe(x, router, w1, w2):
        probs = jax.nn.softmax(x @ router, axis=-1)
        gates, index = jax.lax.top_k(probs, 2)
        gates = gates / jnp.sum(gates, axis=-1, keepdims=True)
        combine = jnp.sum(jax.nn.one_hot(index, experts) * gates[..., None], axis=1)  # [tokens, experts]
        h = jax.nn.gelu(jnp.einsum("td,edh->teh", x, w1))
        y = jnp.einsum("teh,ehd->ted", h, w2)
        out = jnp.einsum("ted,te->td", y, combine)
        load = jnp.mean(jax.nn.one_hot(index[:, 0], experts), axis=0)
        balance = experts * jnp.sum(load * jnp.mean(probs, axis=0))
        return out, balance

    ks = jax.random.split(_key(1), 4)
    return jax.jit(moe), (jax.random.normal(ks[0], (tokens, dim)), jax.random.normal(ks[1], (dim, experts)) * 0.3,
                          jax.random.normal(ks[2], (experts, dim, hidden)) * 0.2,
                          jax.random.normal(ks[3], (experts, hidden, dim)) * 0.2)


def int8_inference():
    """Quantized MLP inference: activations quantized per row to int8, int8 x int8 -> int32 matmuls
    (preferred_element_type), dequantized with the per-row and per-column scales, ReLU, a second layer, argmax."""
    def quantize(x):
        scale = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / 127.0 + 1e-8
        return jnp.clip(jnp.round(x / scale), -127, 127).astype(jnp.int8), scale

    def layer(x, wq, wscale):
        xq, xscale = quantize(x)
        acc = jax.lax.dot(xq, wq, preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * xscale * wscale

    def infer(x, w1q, s1, w2q, s2):
        h = jax.nn.relu(layer(x, w1q, s1))
        logits = layer(h, w2q, s2)
        return jnp.argmax(logits, axis=-1), logits

    ks = jax.random.split(_key(2), 3)
    w1 = jax.random.normal(ks[0], (128, 256))
    w2 = jax.random.normal(ks[1], (256, 16))
    def wquant(w):
        s = jnp.max(jnp.abs(w), axis=0, keepdims=True) / 127.0
        return jnp.round(w / s).astype(jnp.int8), s
    w1q, s1 = wquant(w1)
    w2q, s2 = wquant(w2)
    return jax.jit(infer), (jax.random.normal(ks[2], (32, 128)), w1q, s1, w2q, s2)


def resnet_bn_train():
    """One SGD step of a two-block residual CNN with training-mode batch norm (batch statistics, running averages
    updated and returned), as ResNets train."""
    dn = ("NHWC", "HWIO", "NHWC")

    def bn(x, gamma, beta, running):
        mean = jnp.mean(x, axis=(0, 1, 2))
        var = jnp.var(x, axis=(0, 1, 2))
        y = (x - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta
        return y, (0.9 * running[0] + 0.1 * mean, 0.9 * running[1] + 0.1 * var)

    def conv(x, k):
        return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=dn)

    def loss(p, stats, x, labels):
        y = conv(x, p["stem"])
        new_stats = []
        for i in range(2):
            h, s1 = bn(conv(y, p[f"k{i}a"]), *p[f"bn{i}a"], stats[2 * i])
            h = jax.nn.relu(h)
            h, s2 = bn(conv(h, p[f"k{i}b"]), *p[f"bn{i}b"], stats[2 * i + 1])
            y = jax.nn.relu(y + h)
            new_stats += [s1, s2]
        logits = jnp.mean(y, axis=(1, 2)) @ p["head"]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * labels, axis=-1)), new_stats

    def step(p, stats, x, labels):
        grads, new_stats = jax.grad(loss, has_aux=True)(p, stats, x, labels)
        return jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, grads), new_stats

    ks = iter(jax.random.split(_key(3), 16))
    c = 8
    p = {"stem": jax.random.normal(next(ks), (3, 3, 3, c)) * 0.3, "head": jax.random.normal(next(ks), (c, 10)) * 0.3}
    for i in range(2):
        for part in "ab":
            p[f"k{i}{part}"] = jax.random.normal(next(ks), (3, 3, c, c)) * 0.2
            p[f"bn{i}{part}"] = (jnp.ones(c), jnp.zeros(c))
    stats = [(jnp.zeros(c), jnp.ones(c)) for _ in range(4)]
    x = jax.random.normal(next(ks), (4, 12, 12, 3))
    labels = jax.nn.one_hot(jnp.arange(4) % 10, 10)
    return jax.jit(step), (p, stats, x, labels)


def lstm_scan():
    """An LSTM over 12 time steps (lax.scan; the four gates from one fused matmul, sigmoid and tanh), a linear read-out
    of the last state and a mean-squared-error loss."""
    def lstm(w, u, b, wo, xs, target):
        hidden = u.shape[0]

        def cell(carry, x):
            h, c = carry
            z = x @ w + h @ u + b
            i, f, g, o = jnp.split(z, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        batch = xs.shape[1]
        (h, _), _ = jax.lax.scan(cell, (jnp.zeros((batch, hidden)), jnp.zeros((batch, hidden))), xs)
        y = h @ wo
        return jnp.mean(jnp.square(y - target))

    ks = jax.random.split(_key(4), 5)
    hid = 32
    return jax.jit(lstm), (jax.random.normal(ks[0], (16, 4 * hid)) * 0.2, jax.random.normal(ks[1], (hid, 4 * hid)) * 0.2,
                           jnp.zeros(4 * hid), jax.random.normal(ks[2], (hid, 4)) * 0.2,
                           jax.random.normal(ks[3], (12, 8, 16)), jax.random.normal(ks[4], (8, 4)))


def vae_step():
    """One training step of a small VAE: an encoder to mean and log-variance, the reparameterisation trick with
    jax.random.normal, a sigmoid decoder, binary cross-entropy plus the KL term, gradients and an SGD update."""
    def loss(p, key, x):
        h = jnp.tanh(x @ p["e1"])
        mu, logvar = h @ p["mu"], h @ p["lv"]
        z = mu + jnp.exp(0.5 * logvar) * jax.random.normal(key, mu.shape)
        logits = jnp.tanh(z @ p["d1"]) @ p["d2"]
        bce = jnp.sum(jnp.maximum(logits, 0) - logits * x + jnp.log1p(jnp.exp(-jnp.abs(logits))), axis=-1)
        kl = -0.5 * jnp.sum(1 + logvar - mu**2 - jnp.exp(logvar), axis=-1)
        return jnp.mean(bce + kl)

    def step(p, key, x):
        value, grads = jax.value_and_grad(loss)(p, key, x)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), value

    ks = jax.random.split(_key(5), 6)
    p = {"e1": jax.random.normal(ks[0], (64, 48)) * 0.2, "mu": jax.random.normal(ks[1], (48, 8)) * 0.2,
         "lv": jax.random.normal(ks[2], (48, 8)) * 0.2, "d1": jax.random.normal(ks[3], (8, 48)) * 0.2,
         "d2": jax.random.normal(ks[4], (48, 64)) * 0.2}
    x = (jax.random.uniform(ks[5], (16, 64)) > 0.5).astype(jnp.float32)
    return jax.jit(step), (p, jax.random.PRNGKey(11), x)


def audio_dilated_conv():
    """WaveNet-style 1-D audio stack: causal convolutions with dilation 1, 2, 4, 8 (rhs_dilation), gated tanh x
    sigmoid activations, residual and skip connections, a 1x1 output convolution."""
    dn = ("NWC", "WIO", "NWC")

    def net(x, filters, gates, res, out):
        skip = 0.0
        for i, d in enumerate((1, 2, 4, 8)):
            padded = jnp.pad(x, ((0, 0), (d, 0), (0, 0)))
            f = jax.lax.conv_general_dilated(padded, filters[i], (1,), "VALID", rhs_dilation=(d,), dimension_numbers=dn)
            g = jax.lax.conv_general_dilated(padded, gates[i], (1,), "VALID", rhs_dilation=(d,), dimension_numbers=dn)
            h = jnp.tanh(f) * jax.nn.sigmoid(g)
            r = jax.lax.conv_general_dilated(h, res[i], (1,), "VALID", dimension_numbers=dn)
            x = x + r
            skip = skip + h
        return jax.lax.conv_general_dilated(jax.nn.relu(skip), out, (1,), "VALID", dimension_numbers=dn)

    ch = 16
    ks = jax.random.split(_key(6), 5)
    return jax.jit(net), (jax.random.normal(ks[0], (2, 256, ch)), jax.random.normal(ks[1], (4, 2, ch, ch)) * 0.2,
                          jax.random.normal(ks[2], (4, 2, ch, ch)) * 0.2,
                          jax.random.normal(ks[3], (4, 1, ch, ch)) * 0.2, jax.random.normal(ks[4], (1, ch, 8)) * 0.2)


def depthwise_separable():
    """Depthwise-separable convolutions as mobile networks use them (inference): a 3x3 depthwise convolution
    (feature_group_count = channels), batch-norm folded to scale and shift, ReLU6, a 1x1 pointwise convolution, twice,
    then global average pooling and a softmax classifier."""
    dn = ("NHWC", "HWIO", "NHWC")

    def net(x, dw1, pw1, dw2, pw2, scale, shift, head):
        y = x
        for dw, pw in ((dw1, pw1), (dw2, pw2)):
            c = y.shape[-1]
            y = jax.lax.conv_general_dilated(y, dw, (1, 1), "SAME", dimension_numbers=dn, feature_group_count=c)
            y = jnp.clip(y * scale[:c] + shift[:c], 0.0, 6.0)
            y = jax.nn.relu(jax.lax.conv_general_dilated(y, pw, (1, 1), "SAME", dimension_numbers=dn))
        return jax.nn.softmax(jnp.mean(y, axis=(1, 2)) @ head)

    ks = jax.random.split(_key(7), 8)
    return jax.jit(net), (jax.random.normal(ks[0], (2, 16, 16, 8)), jax.random.normal(ks[1], (3, 3, 1, 8)) * 0.3,
                          jax.random.normal(ks[2], (1, 1, 8, 16)) * 0.3, jax.random.normal(ks[3], (3, 3, 1, 16)) * 0.3,
                          jax.random.normal(ks[4], (1, 1, 16, 16)) * 0.3, jnp.ones(16), jnp.zeros(16),
                          jax.random.normal(ks[5], (16, 10)) * 0.3)


def embedding_bag():
    """Bags of token ids looked up in an embedding table (gather), summed per bag with jax.ops.segment_sum
    (a scatter-add), mean-normalised by the bag sizes, and a linear layer with a sigmoid."""
    bags = 8

    def f(table, ids, segments, w):
        vectors = table[ids]
        sums = jax.ops.segment_sum(vectors, segments, num_segments=bags)
        counts = jax.ops.segment_sum(jnp.ones_like(ids, jnp.float32), segments, num_segments=bags)
        return jax.nn.sigmoid((sums / jnp.maximum(counts, 1.0)[:, None]) @ w)

    ks = jax.random.split(_key(8), 3)
    ids = jax.random.randint(ks[0], (64,), 0, 200)
    segments = jnp.sort(jax.random.randint(ks[1], (64,), 0, bags))
    return jax.jit(f), (jax.random.normal(ks[2], (200, 32)) * 0.3, ids, segments, jnp.ones((32, 1)) * 0.1)


def bf16_block_adamw():
    """One AdamW step of a bf16 transformer block: RMSNorm, rotary position embeddings (RoPE) on queries and keys,
    causal softmax attention, a SwiGLU MLP, all in bfloat16 with float32 optimizer state (m, v) updated by AdamW."""
    seq, dim, hidden = 16, 32, 64

    def rope(x):
        half = x.shape[-1] // 2
        freq = 1.0 / (10000 ** (jnp.arange(half) / half))
        angle = jnp.arange(x.shape[0])[:, None] * freq[None, :]
        cos, sin = jnp.cos(angle).astype(x.dtype), jnp.sin(angle).astype(x.dtype)
        a, b = x[:, :half], x[:, half:]
        return jnp.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)

    def rms(x, g):
        x32 = x.astype(jnp.float32)
        return (x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)).astype(x.dtype) * g

    def block(p, x):
        h = rms(x, p["g1"])
        q, k, v = rope(h @ p["wq"]), rope(h @ p["wk"]), h @ p["wv"]
        s = (q @ k.T).astype(jnp.float32) / jnp.sqrt(dim)
        s = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), s, -1e9)
        x = x + (jax.nn.softmax(s).astype(x.dtype) @ v) @ p["wo"]
        h = rms(x, p["g2"])
        return x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]

    def loss(p, x, y):
        return jnp.mean(jnp.square(block(p, x).astype(jnp.float32) - y))

    def step(p, m, v, x, y, t):
        grads = jax.grad(loss)(p, x, y)
        b1, b2, lr, wd = 0.9, 0.999, 1e-3, 0.01

        f32 = jnp.float32
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g.astype(f32), m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * jnp.square(g.astype(f32)), v, grads)

        def update(param, m, v):
            mhat, vhat = m / (1 - b1**t), v / (1 - b2**t)
            new = param.astype(f32) * (1 - lr * wd) - lr * mhat / (jnp.sqrt(vhat) + 1e-8)
            return new.astype(param.dtype)

        return jax.tree_util.tree_map(update, p, m, v), m, v

    ks = iter(jax.random.split(_key(9), 12))
    shapes = {"wq": (dim, dim), "wk": (dim, dim), "wv": (dim, dim), "wo": (dim, dim), "w1": (dim, hidden),
              "w3": (dim, hidden), "w2": (hidden, dim)}
    p = {name: (jax.random.normal(next(ks), s) * 0.2).astype(jnp.bfloat16) for name, s in shapes.items()}
    p["g1"] = jnp.ones(dim, jnp.bfloat16)
    p["g2"] = jnp.ones(dim, jnp.bfloat16)
    zeros = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, jnp.float32), p)
    x = jax.random.normal(next(ks), (seq, dim)).astype(jnp.bfloat16)
    y = jax.random.normal(next(ks), (seq, dim))
    return jax.jit(step), (p, zeros, zeros, x, y, jnp.float32(1.0))


def gp_regression():
    """Gaussian-process regression: an RBF kernel matrix, its Cholesky factor, the negative log marginal likelihood
    (triangular solves, log-determinant from the factor's diagonal) and its gradient in the log length scale and log
    noise, and the predictive mean and variance at test points. LAPACK on the CPU: potrf, trsm."""
    n, m, d = 48, 16, 3

    def rbf(a, b, log_scale):
        sq = jnp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
        return jnp.exp(-0.5 * sq / jnp.exp(2 * log_scale))

    def nll(theta, x, y):
        k = rbf(x, x, theta[0]) + (jnp.exp(theta[1]) + 1e-4) * jnp.eye(n)
        chol = jnp.linalg.cholesky(k)
        alpha = jax.scipy.linalg.cho_solve((chol, True), y)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol))) + 0.5 * n * jnp.log(2 * jnp.pi)

    def f(theta, x, y, xs):
        value, grad = jax.value_and_grad(nll)(theta, x, y)
        k = rbf(x, x, theta[0]) + (jnp.exp(theta[1]) + 1e-4) * jnp.eye(n)
        chol = jnp.linalg.cholesky(k)
        ks = rbf(x, xs, theta[0])
        mean = ks.T @ jax.scipy.linalg.cho_solve((chol, True), y)
        v = jax.scipy.linalg.solve_triangular(chol, ks, lower=True)
        var = 1.0 - jnp.sum(v * v, axis=0)
        return value, grad, mean, var

    ks = jax.random.split(_key(10), 3)
    x = jax.random.uniform(ks[0], (n, d)) * 4
    y = jnp.sin(x[:, 0]) + 0.5 * jnp.cos(x[:, 1]) + 0.1 * jax.random.normal(ks[1], (n,))
    xs = jax.random.uniform(ks[2], (m, d)) * 4
    return jax.jit(f), (jnp.array([0.0, -2.0]), x, y, xs)


def linear_algebra():
    """Dense linear algebra as data analysis writes it: least squares through a QR factorization, a batch of
    linear systems through LU (jnp.linalg.solve), and PCA through the symmetric eigensolver of a covariance matrix,
    projecting the data on its top components. LAPACK on the CPU: geqrf, orgqr, getrf, trsm, syevd."""
    rows, cols, k = 40, 8, 3

    def f(a, b, systems, rhs, data):
        q, r = jnp.linalg.qr(a)
        coef = jax.scipy.linalg.solve_triangular(r, q.T @ b, lower=False)
        residual = jnp.sum((a @ coef - b) ** 2)
        solved = jnp.linalg.solve(systems, rhs)
        centered = data - jnp.mean(data, axis=0)
        cov = centered.T @ centered / (data.shape[0] - 1)
        values, vectors = jnp.linalg.eigh(cov)
        top = vectors[:, -k:]
        return coef, residual, solved, values, centered @ top

    ks = jax.random.split(_key(11), 5)
    a = jax.random.normal(ks[0], (rows, cols))
    b = jax.random.normal(ks[1], (rows,))
    systems = jax.random.normal(ks[2], (4, 6, 6)) + 3 * jnp.eye(6)
    rhs = jax.random.normal(ks[3], (4, 6, 2))
    # Data with one strong direction, two weaker ones and noise: eigenvalues well apart.
    basis = jax.random.normal(ks[4], (3, cols))
    weights = jax.random.normal(_key(12), (64, 3)) * jnp.array([3.0, 1.5, 0.7])
    data = weights @ basis + 0.05 * jax.random.normal(_key(13), (64, cols))
    return jax.jit(f), (a, b, systems, rhs, data)


def low_rank_svd():
    """The SVD as signal processing and statistics use it: a batch of noisy rank-2 matrices denoised by keeping
    their top two singular pairs, the spectral norm of what was removed (jnp.linalg.norm(ord=2), singular values
    only), and a minimum-norm least-squares solve through the pseudo-inverse (jnp.linalg.pinv). LAPACK on the CPU:
    gesdd, with vectors and without."""
    m, n, rank = 12, 8, 2

    def f(batch, a, b):
        u, s, vt = jnp.linalg.svd(batch, full_matrices=False)
        approx = (u[..., :rank] * s[..., None, :rank]) @ vt[..., :rank, :]
        removed = jnp.linalg.norm(batch - approx, ord=2, axis=(-2, -1))
        x = jnp.linalg.pinv(a) @ b
        return approx, removed, x, s

    ks = jax.random.split(_key(14), 6)
    left = jax.random.normal(ks[0], (3, m, rank))
    right = jax.random.normal(ks[1], (3, rank, n))
    # Two strong directions with sizes well apart, then noise: the kept pairs are well conditioned.
    batch = left * jnp.array([4.0, 1.5]) @ right + 0.05 * jax.random.normal(ks[2], (3, m, n))
    a = jax.random.normal(ks[3], (16, 6)) + 0.5 * jax.random.normal(ks[4], (16, 1))
    b = jax.random.normal(ks[5], (16, 2))
    return jax.jit(f), (batch, a, b)


def spectral():
    """Signal processing through the FFT as audio and imaging code writes it: a log-magnitude spectrogram of
    Hann-windowed frames (rfft) projected on a triangular filterbank, a long FIR filter applied by FFT convolution
    (rfft, a product, irfft), a 2-D low-pass filter of an image batch (fft2, a mask, ifft2) and each frame's
    dominant phase. XLA's fft op (RFFT, IRFFT, FFT, IFFT) and complex arithmetic on the CPU."""
    frames, length, bins, taps = 12, 128, 16, 33

    def f(signal, fir, images, filterbank):
        hop = length // 2
        idx = jnp.arange(frames)[:, None] * hop + jnp.arange(length)[None, :]
        window = 0.5 - 0.5 * jnp.cos(2 * jnp.pi * jnp.arange(length) / length)
        spectrum = jnp.fft.rfft(signal[idx] * window, axis=-1)
        power = jnp.real(spectrum) ** 2 + jnp.imag(spectrum) ** 2
        mel = jnp.log(power @ filterbank + 1e-6)
        n = signal.shape[0] + taps - 1
        size = 1 << (n - 1).bit_length()
        filtered = jnp.fft.irfft(jnp.fft.rfft(signal, size) * jnp.fft.rfft(fir, size), size)[:n]
        image_spectrum = jnp.fft.fft2(images)
        fy = jnp.abs(jnp.fft.fftfreq(images.shape[-2]))[:, None]
        fx = jnp.abs(jnp.fft.fftfreq(images.shape[-1]))[None, :]
        lowpass = jnp.real(jnp.fft.ifft2(image_spectrum * ((fy < 0.25) & (fx < 0.25))))
        peak = jnp.argmax(jnp.abs(spectrum), axis=-1)
        phase = jnp.angle(jnp.take_along_axis(spectrum, peak[:, None], axis=-1))[:, 0]
        return mel, filtered, lowpass, phase

    ks = jax.random.split(_key(15), 3)
    t = jnp.arange((frames + 1) * length // 2, dtype=jnp.float32)
    # Two tones and noise: peaks well above the rest, so the dominant bin is not a near tie.
    signal = jnp.sin(0.3 * t) + 0.5 * jnp.sin(1.1 * t) + 0.1 * jax.random.normal(ks[0], t.shape)
    fir = jax.random.normal(ks[1], (taps,)) / taps
    images = jax.random.normal(ks[2], (4, 16, 16))
    centers = jnp.linspace(0, length // 2, bins + 2)
    k = jnp.arange(length // 2 + 1)[:, None]
    width = centers[1] - centers[0]
    filterbank = jnp.maximum(0.0, 1.0 - jnp.abs(k - centers[None, 1:-1]) / width)
    return jax.jit(f), (signal, fir, images, filterbank)


def dynamics_modes():
    """Stability and modal analysis of linear dynamical systems as control and physics code computes it: a batch of
    system matrices' eigenvalues with left and right eigenvectors (lax.linalg.eig: LAPACK's geev; complex results),
    each system's spectral radius and slowest mode's damping ratio, and an initial state evolved through its modes,
    x(t) = Re(sum_k (u_k^H x0 / u_k^H v_k) exp(lambda_k t) v_k), at a few times."""
    systems, n = 4, 6

    def f(a, x0, times):
        w, vl, vr = jax.lax.linalg.eig(a, compute_left_eigenvectors=True, compute_right_eigenvectors=True)
        radius = jnp.max(jnp.abs(w), axis=-1)
        damping = -jnp.real(w) / jnp.abs(w)
        slowest = jnp.min(jnp.where(jnp.real(w) < 0, damping, jnp.inf), axis=-1)
        x = x0.astype(w.dtype)
        weights = jnp.einsum('bij,bi->bj', jnp.conj(vl), x) / jnp.einsum('bij,bij->bj', jnp.conj(vl), vr)
        growth = jnp.exp(w[:, None, :] * times[None, :, None])
        states = jnp.real(jnp.einsum('bij,btj->bti', vr, weights[:, None, :] * growth))
        return w, radius, slowest, states

    ks = jax.random.split(_key(16), 2)
    # Damped systems: a random matrix shifted left, so most modes decay and some oscillate.
    a = jax.random.normal(ks[0], (systems, n, n)) / jnp.sqrt(n) - 0.5 * jnp.eye(n)
    x0 = jax.random.normal(ks[1], (systems, n))
    times = jnp.array([0.0, 0.5, 1.0, 2.0])
    return jax.jit(f), (a, x0, times)


def complex_signal():
    """Complex baseband signal processing as radar and communications code writes it: a matched filter (jnp.convolve
    of complex arrays), each pulse's cumulative phase-corrected energy (jnp.cumsum of complex values: XLA CPU's
    reduce-window), returns binned by range (x.at[bins].add of complex samples: a scatter), the strongest returns
    (argsort by magnitude) and the samples sorted (jnp.sort of complex values: real parts, then imaginary ones), and a
    MIMO channel's eigenmodes (jnp.linalg.eig of a complex matrix: LAPACK's cgeev)."""
    pulses, samples, taps, ranges, antennas = 4, 96, 9, 12, 4

    def f(re, im, kernel_re, kernel_im, bins, channel_re, channel_im):
        x = jax.lax.complex(re, im)
        kernel = jax.lax.complex(kernel_re, kernel_im)
        matched = jax.vmap(lambda row: jnp.convolve(row, jnp.conj(kernel[::-1]), mode='same'))(x)
        phase = jnp.exp(-1j * jnp.angle(matched[:, :1]))
        energy = jnp.cumsum(matched * phase, axis=-1)
        binned = jnp.zeros((pulses, ranges), x.dtype).at[jnp.arange(pulses)[:, None], bins].add(matched)
        strongest = jnp.argsort(-jnp.abs(matched), axis=-1)[:, :5]
        ordered = jnp.sort(matched[:, ::8], axis=-1)
        channel = jax.lax.complex(channel_re, channel_im)
        modes, vectors = jnp.linalg.eig(channel)
        gains = jnp.sort(jnp.abs(modes), axis=-1)
        return energy, binned, strongest, ordered, gains, jnp.abs(vectors[..., 0])

    ks = jax.random.split(_key(17), 7)
    t = jnp.arange(samples, dtype=jnp.float32)
    chirp = 0.02 * t * t
    # A chirp echo per pulse at a different delay, in noise: a clear matched-filter peak.
    delays = jnp.array([10, 30, 50, 70])
    echo = jnp.where((t[None, :] >= delays[:, None]) & (t[None, :] < delays[:, None] + taps), 1.0, 0.0)
    re = echo * jnp.cos(chirp)[None, :] + 0.1 * jax.random.normal(ks[0], (pulses, samples))
    im = echo * jnp.sin(chirp)[None, :] + 0.1 * jax.random.normal(ks[1], (pulses, samples))
    kernel_re = jnp.cos(0.02 * jnp.arange(taps) ** 2)
    kernel_im = jnp.sin(0.02 * jnp.arange(taps) ** 2)
    bins = jax.random.randint(ks[2], (pulses, samples), 0, ranges)
    channel_re = jax.random.normal(ks[3], (2, antennas, antennas))
    channel_im = jax.random.normal(ks[4], (2, antennas, antennas))
    return jax.jit(f), (re, im, kernel_re, kernel_im, bins, channel_re, channel_im)


def fp8_inference():
    """An MLP's forward pass in FP8 as FP8 inference code writes it: activations and weights scaled per tensor by
    their largest magnitude and cast to float8_e4m3fn, dots of fp8 operands accumulating in f32
    (preferred_element_type), rescaling, GELU, the hidden state also kept in float8_e5m2 (the wider-range format
    gradients use), and a softmax over classes."""
    batch, features, hidden, classes = 16, 64, 128, 10
    e4m3_max, e5m2_max = 448.0, 57344.0

    def quantize(x, dtype, largest):
        scale = jnp.maximum(jnp.max(jnp.abs(x)), 1e-12) / largest
        return (x / scale).astype(dtype), scale

    def f(x, w1, w2):
        xq, xs = quantize(x, jnp.float8_e4m3fn, e4m3_max)
        w1q, w1s = quantize(w1, jnp.float8_e4m3fn, e4m3_max)
        h = jnp.dot(xq, w1q, preferred_element_type=jnp.float32) * (xs * w1s)
        h = jax.nn.gelu(h)
        hq, hs = quantize(h, jnp.float8_e4m3fn, e4m3_max)
        w2q, w2s = quantize(w2, jnp.float8_e4m3fn, e4m3_max)
        logits = jnp.dot(hq, w2q, preferred_element_type=jnp.float32) * (hs * w2s)
        h5, h5s = quantize(h, jnp.float8_e5m2, e5m2_max)
        return jax.nn.softmax(logits, axis=-1), h5.astype(jnp.float32) * h5s

    ks = jax.random.split(_key(18), 3)
    x = jax.random.normal(ks[0], (batch, features))
    w1 = jax.random.normal(ks[1], (features, hidden)) / jnp.sqrt(features)
    w2 = jax.random.normal(ks[2], (hidden, classes)) / jnp.sqrt(hidden)
    return jax.jit(f), (x, w1, w2)


PROGRAMS = [kv_decode_sample, moe_layer, int8_inference, resnet_bn_train, lstm_scan, vae_step, audio_dilated_conv,
            depthwise_separable, embedding_bag, bf16_block_adamw, gp_regression, linear_algebra, low_rank_svd, spectral,
            dynamics_modes, complex_signal, fp8_inference]
