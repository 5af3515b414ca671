#!/usr/bin/env python3
"""Writes the small synthetic 10-class "digit-like" dataset in samples/mnist_softmax/data/.

Every class has a fixed prototype: a few thick strokes (some shared with other classes) and a blob,
drawn on a 28x28 canvas from a seeded random generator. A sample is its class prototype with each stroke
end point jittered, shifted by up to +-2 pixels, scaled by a random intensity, plus sparse per-pixel
noise and a faint distractor stroke, clipped to 0..255. A linear softmax classifier has to learn which
pixels matter (the shifts and the jitter blur the prototypes into each other), so accuracy after 10 SGD
steps is clearly below the accuracy after 1000.

The files use the MNIST names and the IDX format (gzip-compressed), so real MNIST files can replace
them. Only the standard library is used; the output is deterministic (fixed seed, gzip mtime 0:
the same bytes again with the same zlib).

    python3 samples/mnist_softmax/make_dataset.py [--out DIR] [--train N] [--test N] [--seed S]
"""

import argparse
import gzip
import math
import os
import random
import struct

SIZE = 28
CLASSES = 10
# Tuned so that softmax regression (batch 100, learning rate 0.5, W and b start at zero) is near 60% test
# accuracy after 10 steps and above 92% after 1000, for this seed and for others.
SHARED_STROKES = 8  # strokes in the pool the classes draw from
SHARED_PER_CLASS = 3  # pool strokes in each prototype
OWN_STROKES = 2  # strokes only this class has
JITTER = 2.75  # per-sample displacement of every stroke end point, pixels
NOISE = 0.1  # fraction of pixels that get uniform noise


def segment_distance(px, py, ax, ay, bx, by):
    """Distance from point p to the segment a-b."""
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / length2))
    cx, cy = ax + t * dx, ay + t * dy
    return math.hypot(px - cx, py - cy)


def random_stroke(rng):
    x, y = rng.uniform(6, 22), rng.uniform(5, 23)
    angle, length = rng.uniform(0, 2 * math.pi), rng.uniform(6, 12)
    nx = min(23.0, max(5.0, x + length * math.cos(angle)))
    ny = min(23.0, max(4.0, y + length * math.sin(angle)))
    return (x, y, nx, ny, rng.uniform(1.2, 2.0))


def make_prototypes(rng):
    """Class prototypes: each is a list of strokes (x0, y0, x1, y1, width) and one blob (x, y, radius).

    Strokes come partly from a pool shared by all classes, so classes overlap the way digits do
    (a 7 and a 1 share a bar) and the classifier has to weigh the strokes that differ."""
    pool = [random_stroke(rng) for _ in range(SHARED_STROKES)]
    prototypes = []
    for _ in range(CLASSES):
        strokes = rng.sample(pool, SHARED_PER_CLASS) + [random_stroke(rng) for _ in range(OWN_STROKES)]
        blob = (rng.uniform(8, 20), rng.uniform(8, 20), rng.uniform(1.5, 3.0))
        prototypes.append((strokes, blob))
    return prototypes


def render(strokes, blob, intensity):
    """Anti-aliased rendering of strokes and blob into a flat list of SIZE*SIZE floats in [0, 1]."""
    img = [0.0] * (SIZE * SIZE)

    def paint(distance, x_lo, x_hi, y_lo, y_hi):
        # Only the primitive's bounding box: the pure-Python loop is the generator's whole cost.
        for y in range(max(0, int(y_lo) - 2), min(SIZE, int(y_hi) + 3)):
            for x in range(max(0, int(x_lo) - 2), min(SIZE, int(x_hi) + 3)):
                d = distance(x + 0.5, y + 0.5)
                if d < 1.0:
                    i = y * SIZE + x
                    img[i] = max(img[i], intensity * min(1.0, 1.0 - d))

    for x0, y0, x1, y1, w in strokes:
        paint(lambda px, py: segment_distance(px, py, x0, y0, x1, y1) - w, min(x0, x1) - w, max(x0, x1) + w,
              min(y0, y1) - w, max(y0, y1) + w)
    bx, by, r = blob
    paint(lambda px, py: math.hypot(px - bx, py - by) - r, bx - r, bx + r, by - r, by + r)
    return img


def make_sample(rng, prototype):
    strokes, blob = prototype
    shift_x, shift_y = rng.randint(-2, 2), rng.randint(-2, 2)
    moved = []
    for x0, y0, x1, y1, w in strokes:
        moved.append((x0 + shift_x + rng.uniform(-JITTER, JITTER), y0 + shift_y + rng.uniform(-JITTER, JITTER),
                      x1 + shift_x + rng.uniform(-JITTER, JITTER), y1 + shift_y + rng.uniform(-JITTER, JITTER),
                      w * rng.uniform(0.8, 1.2)))
    # A short faint stroke anywhere: clutter that belongs to no class.
    cx, cy = rng.uniform(4, 24), rng.uniform(4, 24)
    angle = rng.uniform(0, math.pi)
    moved.append((cx, cy, cx + 6 * math.cos(angle), cy + 6 * math.sin(angle), 0.8))
    moved_blob = (blob[0] + shift_x, blob[1] + shift_y, blob[2] * rng.uniform(0.7, 1.3))
    img = render(moved, moved_blob, rng.uniform(0.55, 1.0))
    pixels = bytearray(SIZE * SIZE)
    for i, v in enumerate(img):
        # Sparse noise: most background stays 0 (so the files compress like MNIST), one pixel in ten is hit.
        if rng.random() < NOISE:
            v += rng.uniform(-0.5, 0.5)
        pixels[i] = max(0, min(255, int(round(v * 255))))
    return bytes(pixels)


def make_split(rng, prototypes, count):
    images, labels = [], bytearray()
    for i in range(count):
        # Balanced classes in a shuffled order, so consecutive batches mix the classes.
        labels.append(i % CLASSES)
    rng.shuffle(labels)
    for label in labels:
        images.append(make_sample(rng, prototypes[label]))
    return b"".join(images), bytes(labels)


def idx_bytes(type_code, dims, data):
    header = struct.pack(">BBBB", 0, 0, type_code, len(dims)) + b"".join(struct.pack(">i", d) for d in dims)
    return header + data


def write_gz(path, content):
    with open(path, "wb") as f:
        f.write(gzip.compress(content, compresslevel=9, mtime=0))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
    parser.add_argument("--train", type=int, default=6000)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20240611)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    prototypes = make_prototypes(rng)
    os.makedirs(args.out, exist_ok=True)
    for prefix, count in (("train", args.train), ("t10k", args.test)):
        images, labels = make_split(rng, prototypes, count)
        write_gz(os.path.join(args.out, f"{prefix}-images-idx3-ubyte.gz"), idx_bytes(0x08, [count, SIZE, SIZE], images))
        write_gz(os.path.join(args.out, f"{prefix}-labels-idx1-ubyte.gz"), idx_bytes(0x08, [count], labels))
        print(f"{prefix}: {count} images")


if __name__ == "__main__":
    main()
