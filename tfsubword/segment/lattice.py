"""The lattice of a unigram model: its pieces and their scores, and the best path through rows of code
points, exactly as SentencePiece's encoder finds it.

For each position, the best score of a path ending there: the largest of (the score of a piece ending
there + the best score where it starts), the earliest start winning ties (SentencePiece visits
candidates by increasing start and replaces only on a strictly larger score). In single precision,
SentencePiece (0.2.3) also restarts its scores from 0 whenever the best score at the start it is about
to extend passes 100,000 in magnitude (in long lines: 10,000 pieces or so): that score is subtracted
from every score reached so far from there on, which changes how later sums round. The pass does the
same; the subtraction is exact (Sterbenz) as long as no path across a few pieces moves by more than
100,000: every score below 100,000 / (2 * longest piece) in magnitude, true of any trained model. In
double precision, with gaps, a pass also gives the lead of each chosen piece over the runner-up, which
`viterbi_exact` reads to find the words whose segmentation single-precision rounding could change.

Two passes give identical results: `best_paths`, a `tf.while_loop` over positions for any number of
rows, and `unrolled_paths`, a few ops per position for few short rows (a call of batch 1).
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables, trie

# SentencePiece's Viterbi restarts its scores from 0 beyond this magnitude.
RESET = 100000.0
# Viterbi paths are walked back one position per loop step over at least this many positions, in
# rows of at most this many or of at most 1/_STEPS_PER_POSITION of the positions (text without
# spaces at batch 1024, whose longest parts have a few hundred characters); otherwise by pointer doubling.
_WALK_BY_STEPS_FROM, _WALK_BY_STEPS_UP_TO, _STEPS_PER_POSITION = 4096, 256, 256


class Lattice(tf.Module):
    """The pieces `keys` (their ids `ids`) with their scores on a path (`path_scores`, one per id), and
    the best paths through rows of code points.

    A character that starts no one-character piece is the piece `unknown_id` of its own. With
    `strings`, the pieces are also kept as strings, for `unrolled_paths`.
    """

    def __init__(self, keys, ids, path_scores, unknown_id, max_piece_chars, strings=False, name=None):
        super().__init__(name=name)
        self.trie = trie.Trie(keys, ids)
        self.unknown_id = int(unknown_id)
        self.width = int(max_piece_chars)
        self.max_score_magnitude = float(np.max(np.abs(path_scores))) if len(path_scores) else 0.0
        # No score on a path in SentencePiece exceeds this in magnitude (past RESET, it restarts).
        self.largest_score = (RESET + self.max_score_magnitude) * (1 + 1e-6) + 1
        self.half_ulp = float(np.spacing(np.float32(self.largest_score))) / 2  # of any single-precision sum
        # Read at id + 1: first the score of no piece (the lowest finite value), for `matches_by_end`.
        self.scores = {
            dtype: tables.constant(np.concatenate([[dtype.min], path_scores]), dtype, shape=[len(path_scores) + 1])
            for dtype in (tf.float32, tf.float64)
        }
        if strings:
            self._ids = tables.hash_table([key.encode("utf-8") for key in keys], list(ids), -1, tf.string, tf.int32)
        self._traced = ops.Traced()

    # Graph code written for graph mode: autograph, when a caller's function has it, is kept out.
    @tf.autograph.experimental.do_not_convert
    def best_paths(self, code_points, splits, dtype, gaps=False, offsets=None, inline=False):
        """The best path through each row: the rows of its pieces (int64, in order) and those pieces;
        with `gaps`, also the best score of each row (rows must not be empty) and, at each piece's
        end, the lead of the chosen piece over the runner-up. `offsets`: the score each row's paths
        start from (0 by default). Each variant is traced once (see `graph_ops.Traced`), unless
        `inline`: passes meant to run at once must not be calls of one function, which run in turn."""
        if inline:
            return self._best_paths(code_points, splits, dtype, gaps, offsets)
        signature = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int64)]
        if offsets is None:
            return self._traced(
                ("paths", dtype, gaps),
                lambda *rows: self._best_paths(*rows, dtype, gaps),
                signature,
                code_points,
                splits,
            )
        signature.append(tf.TensorSpec([None], dtype))
        return self._traced(
            ("paths", dtype, gaps, "offsets"),
            lambda *rows_and_offsets: self._best_paths(*rows_and_offsets[:2], dtype, gaps, rows_and_offsets[2]),
            signature,
            code_points,
            splits,
            offsets,
        )

    def _best_paths(self, code_points, splits, dtype, gaps=False, offsets=None):
        width = self.width
        size = tf.size(code_points)
        n = tf.size(splits) - 1
        rows, steps = (tf.cast(x, tf.int32) for x in ops.row_ids_and_places(splits))  # steps: of each position, from 0
        row_lengths = tf.cast(splits[1:] - splits[:-1], tf.int32)
        order = tf.argsort(row_lengths, direction="DESCENDING", stable=True)
        longest = tf.reduce_max(tf.concat([[0], row_lengths], axis=0))
        sorted_lengths = ops.take(row_lengths, order)
        # The rows at least t long, for t = 1 .. longest.
        rows_of_length = tf.math.bincount(row_lengths, minlength=longest + 1, maxlength=longest + 1)
        active_per_step = tf.cumsum(rows_of_length, reverse=True)[1:]
        # Step t (position t - 1 of each row long enough) handles the records step_offsets[t - 1] +
        # the row's rank by length, so each step reads and writes slices.
        step_offsets = tf.concat([[0], tf.cumsum(active_per_step)], axis=0)
        rank = ops.take(tf.scatter_nd(order[:, None], tf.range(n), [n]), rows)
        record = ops.take(step_offsets, steps) + rank
        # The piece tables hold one block per step t: [reach, active] cells, where a piece of
        # `length` characters ending at the position of rank r is at row reach - length, column r.
        # Pieces ending at step t have at most reach = min(t, width) characters, so most blocks
        # of short words are narrower than `width` (a third of the cells, on English words).
        reach = tf.minimum(tf.range(1, longest + 1), width)
        block_ends = tf.cumsum(tf.cast(reach * active_per_step, tf.int64))
        block_starts = tf.concat([[0], block_ends], axis=0)
        base = ops.take(block_ends, steps) + tf.cast(rank, tf.int64)
        stride = tf.cast(ops.take(active_per_step, steps), tf.int64)
        # A character that starts no one-character piece is an unknown piece of its own.
        pieces, piece_scores = self.trie.matches_by_end(
            code_points,
            steps == 0,
            width,
            (base, stride, block_starts[-1]),
            self.scores[dtype],
            single_missing=self.unknown_id,
        )

        # `best` holds, per row (a column of it), the best scores of the `reach` positions before
        # the step's, the latest last; its row j pairs with the block's row j, so the candidates run
        # by increasing start, as SentencePiece visits them, and argmax keeps the first of the best.
        # The winner is kept as the length of its piece; with `gaps`, also its lead over the others.
        #
        # Each step's reach, active rows and whether the oldest row of `best` leaves (from step width).
        # The loop takes two steps per iteration, which halves the loop's own ops per step; an odd
        # number of steps gets one more, over no rows.
        steps_run = longest + longest % 2
        step_numbers = tf.range(1, steps_run + 1)
        plan = tf.stack(
            [
                tf.minimum(step_numbers, width),
                tf.concat([active_per_step, tf.zeros([longest % 2], tf.int32)], axis=0),
                tf.cast(step_numbers >= width, tf.int32),
            ],
            axis=1,
        )

        # In single precision, SentencePiece (0.2.3) moves its scores to a new origin whenever the
        # best score at the start it is about to extend exceeds RESET in magnitude: that score is
        # subtracted from it (which becomes 0) and from the scores already reached beyond it. Here
        # the pieces from earlier starts are added to their scores as they were, then moved by
        # `shift`, one per row of `best` (the subtraction is exact: see the module). That costs a
        # few ops per step, so a loop without it runs when no row can get that far.
        def run(resets):
            def step(t, best, winners, *extra):
                reach_t, active, leaving = tf.unstack(plan[t - 1], num=3)
                block = tf.reshape(
                    tf.slice(piece_scores, block_starts[t - 1 : t], tf.cast(reach_t * active, tf.int64)[None]),
                    [reach_t, active],
                )
                best = best[:, :active]  # `best` has reach_t rows
                if resets:
                    shift, *extra = extra
                    newest = best[-1]
                    offset = tf.where(tf.abs(newest) > RESET, newest, 0.0)
                    older = tf.range(reach_t)[:, None] < reach_t - 1
                    shift = tf.where(older, shift[:, :active] + offset, 0.0)
                    best = tf.concat([best[:-1], (newest - offset)[None, :]], axis=0)
                    totals = block + best - shift
                else:
                    totals = block + best
                winner = tf.argmax(totals, axis=0, output_type=tf.int32)
                top = tf.reduce_max(totals, axis=0)
                if gaps:
                    # A select, not `tf.one_hot(..., axis=0)`, which costs several times as much here.
                    others = tf.where(
                        tf.range(reach_t)[:, None] == winner[None, :], tf.constant(-np.inf, dtype), totals
                    )
                    extra = [extra[0].write(t - 1, top), extra[1].write(t - 1, top - tf.reduce_max(others, axis=0))]
                if resets:
                    extra = [tf.concat([shift[leaving:], tf.zeros([1, active], dtype)], axis=0)] + extra
                best = tf.concat([best[leaving:], top[None, :]], axis=0)
                return (t + 1, best, winners.write(t - 1, reach_t - winner), *extra)

            extra = ((tf.zeros([1, n], dtype),) if resets else ()) + (
                (array(dtype, steps_run), array(dtype, steps_run)) if gaps else ()
            )
            _, _, winners, *extra = tf.while_loop(
                lambda t, *_: t < steps_run,
                lambda *state: step(*step(*state)),
                (1, start, array(tf.int32, steps_run)) + extra,
                shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, None]), None)
                + ((tf.TensorShape([None, None]),) if resets else ())
                + ((None, None) if gaps else ()),
            )
            # Per record: the winner, and with `gaps` the best score and the lead over the runner-up.
            return (by_record(winners, tf.int32),) + (
                (by_record(extra[-2], dtype), by_record(extra[-1], dtype)) if gaps else ()
            )

        def array(dtype, size):
            return tf.TensorArray(dtype, size=size, infer_shape=False, element_shape=[None])

        def by_record(records, dtype):
            return tf.cond(longest > 0, records.concat, lambda: tf.zeros([0], dtype))

        start = tf.zeros([1, n], dtype) + (0 if offsets is None else ops.take(offsets, order)[None, :])
        if dtype == tf.float32:
            # Each sum can round up to half an ulp further.
            farthest = tf.cast(longest, tf.float32) * (self.max_score_magnitude + self.half_ulp) + tf.reduce_max(
                tf.abs(tf.concat([[0.0], start[0]], axis=0))
            )
            winners, *records = ops.rare_cond(farthest * (1 + 1e-5) + 1 > RESET, lambda: run(True), lambda: run(False))
        else:
            winners, *records = run(False)

        # Walk back from the end of each row, all rows at once, one position per step: `end` holds,
        # per row by rank, the step of the last character of the next piece to take.
        def back(t, end, taken):
            active = active_per_step[t - 1]
            take = end[:active] == t
            previous = t - tf.slice(winners, [step_offsets[t - 1]], [active])
            end = tf.concat([tf.where(take, previous, end[:active]), end[active:]], axis=0)
            return t - 1, end, taken.write(t - 1, take)

        def by_steps():
            _, _, taken = tf.while_loop(
                lambda t, *_: t > 0,
                back,
                (longest, sorted_lengths, array(tf.bool, longest)),
                shape_invariants=(tf.TensorShape([]), tf.TensorShape([None]), None),
            )
            return ops.take(by_record(taken, tf.bool), record)

        # Or by pointer doubling, in log2(longest row) rounds that each touch every position;
        # reversed, the walk moves forward, as `greedy_path` needs.
        def by_doubling():
            length = ops.take(winners, record)  # of the piece ending at each position
            # The piece before ends `length` back, unless this one starts its row (is `steps` + 1 long).
            back_reversed = tf.where(length > steps, size, size - 1 - tf.range(size) + length)
            row_ends = ops.take(tf.cast(splits[1:], tf.int32), ops.indices_where(row_lengths > 0)) - 1
            path_starts = tf.scatter_nd((size - 1 - row_ends)[:, None], tf.ones_like(row_ends, tf.bool), [size])
            return tf.reverse(trie.greedy_path(tf.reverse(back_reversed, [0]), path_starts, longest), [0])

        # Steps are cheap but one per position of the longest row: the better choice for many short rows.
        short = (longest <= _WALK_BY_STEPS_UP_TO) | (longest * _STEPS_PER_POSITION <= size)
        on_path = tf.cond((size >= _WALK_BY_STEPS_FROM) & short, by_steps, by_doubling)
        ends = ops.indices_where(on_path)
        end_lengths = tf.cast(ops.take(winners, ops.take(record, ends)), tf.int64)
        end_base, end_stride = ops.take(base, ends), ops.take(stride, ends)
        paths = {
            "rows": tf.cast(ops.take(rows, ends), tf.int64),
            "piece": ops.take(pieces, end_base - end_lengths * end_stride),
        }
        if gaps:
            paths["total"] = ops.take(records[0], ops.take(record, splits[1:] - 1))
            paths["gap"] = ops.take(records[1], ops.take(record, ends))
        return paths

    @tf.autograph.experimental.do_not_convert
    def unrolled_paths(self, code_points, splits, steps):
        """`_best_paths` in double precision with gaps, for few rows of at most `steps` characters,
        in far fewer ops than the loop runs, which is what a call costs at batch 1. Every substring
        that could be a piece is looked up in one table of the pieces as strings, and their scores
        fill a grid [steps, rows, width] whose column c holds the piece of `width - c` characters
        ending at that position: columns run by increasing start, as SentencePiece visits them,
        and argmax keeps the first of the best. The Viterbi pass is unrolled (three ops per
        position) and walked back with one gather per position. It adds the same numbers as the
        loop, in the same order, so its pieces, scores and gaps are the loop's to the bit. It runs on
        few rows: `tf.gather` is one op where `ops.take` (faster on long vectors) is two."""
        width = min(self.width, steps)
        lengths = splits[1:] - splits[:-1]
        n = tf.size(lengths, out_type=tf.int64)
        # Every (start, length) that fits in its row, by start, then length.
        row, start = ops.row_ids_and_places(splits)
        fits = tf.minimum(tf.gather(lengths, row) - start, width)
        pair = ops.indices_where(tf.reshape(tf.range(1, width + 1, dtype=tf.int64) <= fits[:, None], [-1]))
        at, length = pair // width, pair % width + 1
        row, start = tf.gather(row, at), tf.gather(start, at)
        # The rows as UTF-8 again (each invalid byte of the input is U+FFFD by now, as in the loop).
        words = ops.encode_utf8(code_points, splits)
        found = self._ids.lookup(tf.strings.substr(tf.gather(words, row), start, length, unit="UTF8_CHAR"))
        # A character that starts no one-character piece is an unknown piece of its own.
        found += tf.cast((found < 0) & (length == 1), tf.int32) * (self.unknown_id + 1)
        cell = ((start + length - 1) * n + row) * width + width - length
        # Cells without a piece get the lowest value, which `self.scores` gives no piece too.
        scores = tf.math.unsorted_segment_max(tf.gather(self.scores[tf.float64], found + 1), cell, steps * n * width)
        scores = tf.unstack(tf.reshape(scores, [steps, -1, width]), num=steps)

        nothing = tf.fill([n], tf.constant(-np.inf, tf.float64))  # before the row starts
        best = [nothing] * (width - 1) + [tf.zeros([n], tf.float64)]
        totals = []
        for position in range(steps):
            totals.append(tf.stack(best[position : position + width], axis=1) + scores[position])
            best.append(tf.reduce_max(totals[-1], axis=1))
        totals = tf.stack(totals)
        column = tf.argmax(totals, axis=2, output_type=tf.int32)
        # The runner-up: the best of the others, with the winner masked by a one-hot (cheaper here
        # than `tf.math.top_k` or a broadcast select).
        runner_up = tf.reduce_max(
            totals + tf.one_hot(column, width, on_value=-np.inf, off_value=0.0, dtype=tf.float64), axis=2
        )
        best = tf.stack(best[width:])
        gap = best - runner_up
        piece_lengths = tf.cast(width - tf.transpose(column), tf.int64)  # [rows, steps]

        # Walk back from each row's end, through nodes `row * (steps + 1) + characters covered`;
        # node 0 of a row leads to itself.
        nodes = tf.range(n) * (steps + 1)
        back = tf.concat([tf.zeros([n, 1], tf.int64), tf.range(1, steps + 1, dtype=tf.int64) - piece_lengths], axis=1)
        back = tf.reshape(back + nodes[:, None], [-1])
        node = nodes + lengths
        walked = []
        for _ in range(steps):
            walked.append(node)
            node = tf.gather(back, node)
        walked = tf.reshape(tf.stack(walked[::-1], axis=1), [-1])
        # The pieces of each row in order: the nodes walked through that are past the row's start.
        ends = tf.gather(walked, ops.indices_where(walked % (steps + 1) > 0))
        end_rows = ends // (steps + 1)
        end = ends - end_rows * (steps + 1) - 1  # the piece's last character in its row
        piece_length = tf.gather(tf.reshape(piece_lengths, [-1]), end_rows * steps + end)
        # The piece's pair: its start's first pair, plus its length - 1.
        first_pairs = tf.cumsum(fits, exclusive=True)
        piece = tf.gather(
            found, tf.gather(first_pairs, tf.gather(splits, end_rows) + end + 1 - piece_length) + piece_length - 1
        )
        # In the [steps, rows] grids: each piece's end, and each row's last character.
        return {
            "rows": end_rows,
            "piece": piece,
            "total": tf.gather(tf.reshape(best, [-1]), tf.maximum(lengths - 1, 0) * n + tf.range(n)),
            "gap": tf.gather(tf.reshape(gap, [-1]), end * n + end_rows),
        }
