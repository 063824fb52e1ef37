"""What a loop step costs in TensorFlow's executor and compiled by XLA, by the shape of its body.

    python benchmarks/xla_loops.py [--lanes 8 64 1024] [--steps 200] [--rounds 7]

A segmentation loop (a longest-match walk, a Viterbi pass) takes one step per character, for many
words at once (lanes). Each body runs `--steps` steps of a `tf.while_loop` over int32 vectors of
`lanes` elements; the cost of a step is the time of that loop less the time of the same loop with
no step, per step, as the minimum over rounds (the machine is shared).

Bodies (each loop returns its state and what it wrote, so nothing is dead code):
- one gather: 8 state vectors, each updated from one gather and its own old value;
- walk: the body of a greedy longest-match walk over a double-array trie, as issue 60's compiled
  WordPiece prototype had it (benchmarks/RESULTS.md): a character gathered at each lane's position,
  the trie row of the child it leads to (gathered from that), the next word's row, 8 state vectors
  computed from the shared conditions, and the pieces found written with one scatter;
- walk, state packed: the same with the state as one `[lanes, 8]` tensor built by one stack.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

TABLE = 1 << 16
CELLS = tf.constant(np.random.default_rng(0).integers(0, 1 << 20, TABLE, dtype=np.int32))
TRIE = tf.constant(np.random.default_rng(1).integers(0, TABLE, (2 * TABLE, 3), dtype=np.int32))
WORDS = tf.constant(np.random.default_rng(2).integers(0, TABLE, (TABLE, 4), dtype=np.int32))


def one_gather(state, found):
    reads = tf.gather(CELLS, (state[0] * 7 + 1) & (TABLE - 1))
    return [tf.where(reads > (f << 16), value + reads, value - 1) for f, value in enumerate(state)], found


def walk(state, found):
    index, position, limit, node, base, piece, best_end, best_id = state
    cell = tf.gather(CELLS, position & (TABLE - 1))
    child = (base + tf.bitwise.right_shift(cell, 6)) & (2 * TABLE - 1)
    row = tf.gather(TRIE, child)
    word = tf.gather(WORDS, (index + 1) & (TABLE - 1))
    moved = row[:, 1] > node
    matched = moved & (row[:, 2] > TABLE // 2)
    skipped = (cell & 7) == 3
    stopped = ~moved & ~skipped
    emitted = stopped & (best_end >= 0)
    done = stopped & (best_end < 0)
    width = tf.bitwise.right_shift(cell, 3) & 7
    best_end = tf.where(matched, position + width, best_end)
    at = tf.where(emitted, piece & (TABLE - 1), TABLE)
    found = tf.tensor_scatter_nd_update(found, at[:, None], tf.where(emitted, best_id, -1))
    state = [
        tf.where(done, index + 8, index),
        tf.where(done, word[:, 0], tf.where(emitted, best_end, tf.where(moved | skipped, position + width, position))),
        tf.where(done, word[:, 1], limit),
        tf.where(done, word[:, 2], tf.where(moved, child, node)),
        tf.where(done, word[:, 3], tf.where(moved, row[:, 0], base)),
        tf.where(stopped, -1, tf.where(piece < 0, position, piece)),
        tf.where(stopped, -1, best_end),
        tf.where(stopped, -1, tf.where(matched, row[:, 2], best_id)),
    ]
    return state, found


def packed(step):
    def body(state, found):
        columns, found = step(tf.unstack(state[0], num=8, axis=1), found)
        return [tf.stack(columns, axis=1)], found

    return body


BODIES = {"one gather": (one_gather, False), "walk": (walk, False), "walk, state packed": (packed(walk), True)}


def loop(step, lanes, is_packed, jit_compile):
    def run(steps):
        state = [tf.range(lanes) * (f + 1) for f in range(8)]
        state = [tf.stack(state, axis=1)] if is_packed else state
        found = tf.fill([TABLE + 1], -1)

        def body(i, state, found):
            state, found = step(state, found)
            return i + 1, state, found

        _, state, found = tf.while_loop(lambda i, *_: i < steps, body, (0, state, found))
        return state, found

    return tf.function(run, jit_compile=jit_compile)


def per_step(function, steps, rounds):
    """Microseconds per step: the loop of `steps` steps less the loop of none, minimum over rounds."""
    times = {}
    for count in (0, steps):
        argument = tf.constant(count)
        function(argument)
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            function(argument)
            best = min(best, time.perf_counter() - start)
        times[count] = best
    return (times[steps] - times[0]) / steps * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, nargs="+", default=[8, 64, 1024])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    arguments = parser.parse_args()
    print(f"TensorFlow {tf.__version__}; microseconds per loop step\n")
    print("| body | lanes | executor | XLA |")
    print("|---|---:|---:|---:|")
    for name, (step, is_packed) in BODIES.items():
        for lanes in arguments.lanes:
            cells = [
                per_step(loop(step, lanes, is_packed, jit_compile), arguments.steps, arguments.rounds)
                for jit_compile in (False, True)
            ]
            print(f"| {name} | {lanes} | {cells[0]:.2f} | {cells[1]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
