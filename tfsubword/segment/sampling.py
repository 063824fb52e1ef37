"""Sampled segmentations of a unigram model (subword regularization), as SentencePiece samples them.

`nbest_size=-1`: forward filtering, backward sampling. The forward pass sums, in the log domain, the
weights `exp(alpha * score)` of every path up to each position; walking back from a row's end, the piece
that ends at a position is drawn with probability proportional to its weight times the sum before it.
A path then comes with probability proportional to `exp(alpha * its score)`. Where every path passes
(a word start, a place no piece crosses), the draws on either side are independent: the forward pass
runs once per distinct part between such places, and each occurrence draws its own walk back, one
uniform number per character.

`nbest_size=k > 1`: the k best paths of each row (a Viterbi pass that keeps k scores per position), one
of them drawn with probability proportional to `exp(alpha * its score)` (a Gumbel maximum).
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops

# From this many occurrences, their walks back run in two halves at once.
_WALKS_IN_HALVES_FROM = 512
# `nbest_size` above this is refused, as SentencePiece refuses it.
MAX_NBEST_SIZE = 512
_NONE = -np.inf  # the log-weight of no path


class LatticeSampler(tf.Module):
    """Draws paths through rows of code points from `lattice` (`lattice.Lattice`), whose pieces score
    `path_scores` (one per id), scaled by `alpha`, among all paths (`nbest_size=-1`) or the
    `nbest_size` best. `cuts`: a function of (code points, row splits) -> bool, the places every
    path passes through (a row's start at least); None: row starts only.

    `scaled_prefixes`: Hugging Face's sampler (`Lattice::sample`), whose forward pass scales the sum
    of the paths before each piece by `alpha` too, `F(end) = logsumexp(alpha * (score + F(start)))`,
    while its walk back draws as SentencePiece's does, in proportion to `exp(F(start) + alpha *
    score)`. With alpha 1 the two agree; otherwise a path's chance is the product of those draws, and
    a row's draws depend on all of it (there are no cuts)."""

    def __init__(self, lattice, path_scores, alpha, nbest_size, cuts=None, scaled_prefixes=False, name=None):
        super().__init__(name=name)
        self.lattice = lattice
        self._prefix_scale = float(alpha) if scaled_prefixes else 1.0
        self.nbest_size = int(nbest_size)
        self.alpha = float(alpha)
        self._cuts = cuts
        path_scores = np.asarray(path_scores, np.float64)
        # Read at id + 1: first the cells without a piece. The n best rank paths by their scores.
        if self.nbest_size < 0:
            self._weights = tf.constant(np.concatenate([[_NONE], self.alpha * path_scores]), tf.float32)
        else:
            self._weights = tf.constant(np.concatenate([[_NONE], path_scores]), tf.float64)

    @tf.autograph.experimental.do_not_convert
    def __call__(self, code_points, splits, seed):
        """Rows of code points (int32, row splits int64) and a seed (int32 `[2]`) -> the pieces of
        one drawn path per row: (ids int32, row splits int64), unknown pieces one per character."""
        draw = self._draw_all if self.nbest_size < 0 else self._draw_nbest
        return ops.rare_cond(
            tf.size(code_points) > 0,
            lambda: draw(code_points, splits, seed),
            lambda: (tf.zeros([0], tf.int32), tf.zeros_like(splits)),
        )

    def _layout(self, code_points, splits):
        """Every piece at every position of the rows, in the cells of steps: step t (the t-th
        character of each row) has a block of [width, rows at least t long] cells, rows by decreasing
        length (the rows still running at step t are the first `active[t - 1]`); the piece of k
        characters that ends at the position of rank r is at row width - k, column r, so a block's
        rows run by increasing start. `record`: the (step, rank) of each position."""
        width = self.lattice.width
        rows, places = ops.row_ids_and_places(splits)
        lengths = splits[1:] - splits[:-1]
        n = tf.size(lengths, out_type=tf.int64)
        longest = tf.reduce_max(tf.concat([[0], lengths], axis=0))
        order = tf.argsort(lengths, direction="DESCENDING", stable=True)
        rank_of_row = tf.scatter_nd(order[:, None], tf.range(n), [n])
        counts = tf.math.bincount(lengths, minlength=longest + 1, maxlength=longest + 1, dtype=tf.int64)
        active = tf.cumsum(counts, reverse=True)[1:]
        step_offsets = tf.concat([[0], tf.cumsum(active)], axis=0)
        rank = ops.take(rank_of_row, rows)
        stride = ops.take(active, places)
        base = width * ops.take(step_offsets, places) + width * stride + rank
        table_size = width * step_offsets[-1]
        pieces, weights = self.lattice.trie.matches_by_end(
            code_points, places == 0, width, (base, stride, table_size), self._weights, self.lattice.unknown_id
        )
        return {
            "n": n,
            "places": places,
            "rows": rows,
            "steps": tf.cast(longest, tf.int32),
            "active": active,
            "step_offsets": step_offsets,
            "record": ops.take(step_offsets, places) + rank,
            "base": base,
            "stride": stride,
            "pieces": pieces,
            "weights": weights,
        }

    def _forward(self, layout, extra, step, state, outputs):
        """Runs `step(t, block of weights [width, active, *extra], recent)` over the steps of `layout`:
        `recent[j]` (`[width, *extra, rows]`) holds the state of the paths covering each row up to step
        t - width + j (j = 0 .. width - 1), `state` the one of a row's start. `step` returns the state
        at step t (`[*extra, active]`) and `outputs` values, each written by record."""
        width, n, steps = self.lattice.width, layout["n"], layout["steps"]
        active, offsets = layout["active"], layout["step_offsets"]
        none = tf.fill([width - 1, *extra, n], tf.constant(_NONE, state.dtype))
        start = tf.concat([none, tf.tile(state[None, ..., None], [1] + [1] * len(extra) + [n])], axis=0)

        def body(t, recent, *arrays):
            columns = active[t - 1]
            cells = width * tf.slice(active, [t - 1], [1])
            block = tf.reshape(tf.slice(layout["weights"], width * offsets[t - 1 : t], cells), [width, -1])
            newest, values = step(recent[..., :columns], block)
            recent = tf.concat([recent[1:, ..., :columns], newest[None]], axis=0)
            recent.set_shape([width, *extra, None])
            return (t + 1, recent, *(array.write(t - 1, value) for array, value in zip(arrays, values)))

        arrays = [tf.TensorArray(dtype, size=steps, infer_shape=False, element_shape=[None]) for dtype in outputs]
        _, _, *arrays = tf.while_loop(
            lambda t, *_: t <= steps,
            body,
            (tf.constant(1, tf.int32), start, *arrays),
            shape_invariants=(tf.TensorShape([]), tf.TensorShape([width, *extra, None]), *[None] * len(arrays)),
        )
        return [
            tf.cond(steps > 0, array.concat, lambda dtype=dtype: tf.zeros([0], dtype))
            for array, dtype in zip(arrays, outputs)
        ]

    def _draw_all(self, code_points, splits, seed):
        size = tf.size(code_points, out_type=tf.int64)
        # The parts between the places every path passes, each distinct one filtered once.
        cuts = self._cuts(code_points, splits) if self._cuts else ops.row_ids_and_places(splits)[1] == 0
        part_bounds = tf.concat([ops.indices_where(cuts), [size]], axis=0)
        _, occurrence = tf.unique(ops.encode_utf8(code_points, part_bounds), out_idx=tf.int64)
        n_distinct = tf.reduce_max(occurrence) + 1
        first = tf.math.unsorted_segment_min(tf.range(tf.size(occurrence, out_type=tf.int64)), occurrence, n_distinct)
        distinct_values, distinct_splits = ops.gather_rows(code_points, part_bounds, first)
        ids, part_splits, _ = self.draw_occurrences(distinct_values, distinct_splits, occurrence, seed)
        return ids, ops.take(part_splits, ops.search_sorted(part_bounds, splits, out_type=tf.int64))

    @tf.autograph.experimental.do_not_convert
    def draw_occurrences(self, values, splits, occurrence, seed):
        """Draws among all paths (`nbest_size=-1`) through occurrences of rows every path passes
        between (words, parts of words): the rows' code points (`values`, row `splits`), the row of each
        occurrence (int64), a seed -> (ids int32, row splits int64 by occurrence, the code points of the
        occurrences in turn), unknown pieces one per character."""
        return ops.rare_cond(
            tf.size(occurrence) > 0,
            lambda: self._draw_occurrences(values, splits, occurrence, seed),
            lambda: (tf.zeros([0], tf.int32), tf.zeros([1], tf.int64), tf.zeros([0], tf.int32)),
        )

    def _draw_occurrences(self, distinct_values, distinct_splits, occurrence, seed):
        width = self.lattice.width
        layout = self._layout(distinct_values, distinct_splits)

        def step(recent, block):
            totals = recent + block  # [width, active]: each piece ending here, after the paths before it
            newest = tf.reduce_logsumexp(totals, axis=0)
            # The chance of each piece given that a path reaches here, cumulated over the block's rows.
            cumulative = tf.cumsum(tf.exp(totals - newest), axis=0)
            if self._prefix_scale != 1.0:
                newest = tf.reduce_logsumexp(self._prefix_scale * recent + block, axis=0)
            return newest, [tf.reshape(tf.transpose(cumulative), [-1])]

        (cumulative,) = self._forward(layout, [], step, tf.constant(0.0), [tf.float32])
        cumulative = tf.reshape(cumulative, [-1, width])
        # The walks back of many occurrences in two halves at once: loops of small ops, on one thread each.
        ids, splits = ops.ragged_in_halves(
            lambda occurrence, seed: self._walk_back(layout, cumulative, distinct_splits, occurrence, seed),
            occurrence,
            _WALKS_IN_HALVES_FROM,
            seed,
        )
        return ids, splits, ops.gather_rows(distinct_values, distinct_splits, occurrence)[0]

    def _walk_back(self, layout, cumulative, distinct_splits, occurrence, seed):
        """`_draw_occurrences`' draws of the occurrences `occurrence` (ids, row splits), from the
        cumulated chances of the pieces at each place of the distinct rows (`cumulative`)."""
        width = self.lattice.width
        # Each occurrence walks back from its end, a piece a step: `end` is the place in its row of
        # the last character of the piece to draw, `first` where its characters start among all the
        # occurrences' (each character has its uniform number), `start` where its row starts.
        lengths = ops.take(distinct_splits[1:] - distinct_splits[:-1], occurrence)
        occurrence_splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
        uniform = tf.random.stateless_uniform(occurrence_splits[-1:], seed)
        walking = ops.indices_where(lengths > 0)
        state = [
            ops.take(t, walking) for t in (occurrence_splits[:-1], lengths - 1, ops.take(distinct_splits, occurrence))
        ]

        def walk(i, first, end, start, *drawn):
            at = start + end
            chances = tf.gather(cumulative, ops.take(layout["record"], at))
            row = tf.reduce_sum(tf.cast(chances <= ops.take(uniform, first + end)[:, None], tf.int64), axis=1)
            # (Rounding can leave the last sum below 1: the one-character piece, always there, takes the rest.)
            length = width - tf.minimum(row, width - 1)
            drawn = [array.write(i, value) for array, value in zip(drawn, (first + end, at, length))]
            going = ops.indices_where(end >= length)
            return (i + 1, *(tf.reshape(ops.take(t, going), [-1]) for t in (first, end - length, start)), *drawn)

        arrays = [
            tf.TensorArray(tf.int64, size=0, dynamic_size=True, infer_shape=False, element_shape=[None])
            for _ in range(3)
        ]
        _, _, _, _, *drawn = tf.while_loop(
            lambda i, first, *_: tf.size(first) > 0,
            walk,
            (tf.constant(0, tf.int32), *state, *arrays),
            shape_invariants=(tf.TensorShape([]), *[tf.TensorShape([None])] * 3, None, None, None),
        )
        ends, at, length = (array.concat() for array in drawn)
        # In the order of the text: each piece's place among the occurrences' characters says it.
        slot = tf.scatter_nd(ends[:, None], tf.range(1, tf.size(ends, out_type=tf.int64) + 1), occurrence_splits[-1:])
        order = ops.take(slot, ops.indices_where(slot > 0)) - 1
        ends, at, length = (ops.take(t, order) for t in (ends, at, length))
        end_occurrences = ops.search_sorted(occurrence_splits, ends, side="right", out_type=tf.int64) - 1
        number = tf.size(occurrence, out_type=tf.int64)
        return _pieces(layout, at, length), ops.splits_from_row_ids(end_occurrences, number)

    def _draw_nbest(self, code_points, splits, seed):
        k = self.nbest_size
        width = self.lattice.width
        layout = self._layout(code_points, splits)

        def step(recent, block):
            # Each candidate: a piece (a row of the block) after one of the k best paths before it.
            columns = tf.shape(recent, out_type=tf.int64)[-1]
            totals = tf.reshape(recent + block[:, None], [width * k, columns])
            best, pick = tf.math.top_k(tf.transpose(totals), k, sorted=True)  # [active, k]
            return tf.transpose(best), [tf.reshape(pick, [-1]), tf.reshape(best, [-1])]

        start = tf.concat([[0.0], tf.fill([k - 1], tf.constant(_NONE, tf.float64))], axis=0)
        picks, bests = self._forward(layout, [k], step, start, [tf.int32, tf.float64])
        n = layout["n"]
        lengths = splits[1:] - splits[:-1]
        row_ends = splits[1:] - 1
        # The k best of each row, at its end: one drawn in proportion to exp(alpha * score).
        at_end = ops.take(layout["record"], tf.maximum(row_ends, 0))[:, None] * k + tf.range(k, dtype=tf.int64)
        finals = tf.reshape(ops.take(bests, tf.reshape(at_end, [-1])), [n, k])
        scaled = tf.where(tf.math.is_finite(finals), self.alpha * finals, _NONE)
        uniform = tf.random.stateless_uniform(
            [n, k], seed, minval=np.finfo(np.float64).tiny, maxval=1.0, dtype=tf.float64
        )
        chosen = tf.argmax(scaled - tf.math.log(-tf.math.log(uniform)), axis=1, output_type=tf.int64)

        # Walk back the chosen path of each row: `picks[record * k + r]` says how the r-th best path
        # to a position ends, as `piece row * k + the rank of the path before it`.
        def walk(i, position, rank, ends, end_lengths):
            going = position >= 0
            at = tf.maximum(position, 0)
            pick = tf.cast(ops.take(picks, ops.take(layout["record"], at) * k + rank), tf.int64)
            length = width - pick // k
            ends = ends.write(i, tf.boolean_mask(position, going))
            end_lengths = end_lengths.write(i, tf.boolean_mask(length, going))
            position = tf.where(going & (length <= ops.take(layout["places"], at)), position - length, -1)
            return i + 1, position, pick % k, ends, end_lengths

        def array():
            return tf.TensorArray(tf.int64, size=0, dynamic_size=True, infer_shape=False, element_shape=[None])

        _, _, _, ends, end_lengths = tf.while_loop(
            lambda i, position, *_: tf.reduce_any(position >= 0),
            walk,
            (tf.constant(0, tf.int32), tf.where(lengths > 0, row_ends, -1), chosen, array(), array()),
        )
        ends, end_lengths = ends.concat(), end_lengths.concat()
        order = tf.argsort(ends)
        ends, end_lengths = ops.take(ends, order), ops.take(end_lengths, order)
        return _pieces(layout, ends, end_lengths), ops.splits_from_row_ids(ops.take(layout["rows"], ends), n)


def _pieces(layout, ends, lengths):
    """The ids of the pieces of `lengths` characters that end at the positions `ends` of `layout`."""
    return ops.take(layout["pieces"], ops.take(layout["base"], ends) - lengths * ops.take(layout["stride"], ends))
