"""BPE-dropout: merging words with sampled merges skipped, by the two rules the references follow.

`sentencepiece_dropout`: SentencePiece's (`alpha` of a BPE model): the best pair comes up, is skipped
with probability `dropout` and stays unmerged until one of its symbols changes. `queue_dropout`:
Hugging Face's (`BPE(dropout=...)`): a queue of candidate merges whose skipped entries come back.
Both take a `bpe.Merges` table (`table`) and return what `Merges.merge` returns.
"""

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.segment import bpe


def sentencepiece_dropout(table, symbols, rows, number_of_words, dropout, seed):
    """`Merges.merge` with SentencePiece's BPE-dropout: each time a word's leftmost pair of lowest rank
    comes up it is skipped with probability `dropout` (and stays unmerged until one of its two
    symbols changes); each word draws on its own, from `seed` (int32 `[2]`)."""
    finished = [
        tf.TensorArray(tf.int64, size=1, dynamic_size=True, infer_shape=False, element_shape=[None]).write(
            0, tf.zeros([0], tf.int64)
        )
        for _ in range(2)
    ]

    def step(symbols, rows, skipped, finished, step):
        count = tf.size(symbols, out_type=tf.int64)
        found = table.lookup(symbols[:-1], symbols[1:])
        mergeable = (found >= 0) & (rows[:-1] == rows[1:]) & ~skipped[:-1]
        no_pair = tf.int64.max
        key = tf.where(mergeable, bpe.rank_of(found) * count + tf.range(count - 1), no_pair)
        best = ops.take(tf.math.unsorted_segment_min(key, rows[:-1], number_of_words), rows)
        chosen = mergeable & (key == best[:-1])
        drawn = tf.random.stateless_uniform(
            [number_of_words], tf.random.experimental.stateless_fold_in(seed, step), dtype=tf.float32
        )
        skip = chosen & (ops.take(drawn, rows[:-1]) < dropout)
        merges = tf.concat([chosen & ~skip, [False]], axis=0)
        merged_ids = tf.concat([bpe.made_by(found), [0]], axis=0)
        merged = tf.where(merges, merged_ids, symbols)
        # A skipped pair stays skipped; the pairs around a new symbol are new.
        skipped = (skipped | tf.concat([skip, [False]], axis=0)) & ~merges
        skipped &= ~tf.concat([merges[1:], [False]], axis=0)
        done = best == no_pair
        going = ops.indices_where(~(tf.concat([[False], merges[:-1]], axis=0) | done))
        done = ops.indices_where(done)
        finished = [part.write(step, ops.take(t, done)) for part, t in zip(finished, (merged, rows))]
        return (*(ops.take(t, going) for t in (merged, rows, skipped)), finished, step + 1)

    vector = tf.TensorShape([None])
    _, _, _, finished, _ = tf.while_loop(
        lambda symbols, *_: tf.size(symbols) > 0,
        step,
        (symbols, rows, tf.zeros_like(symbols, tf.bool), finished, tf.constant(1)),
        shape_invariants=(vector, vector, vector, [None, None], tf.TensorShape([])),
    )
    return table.gathered(*(part.concat() for part in finished), number_of_words)


def queue_dropout(table, symbols, rows, number_of_words, dropout, seed, origins=None, first_skip=None):
    """`Merges.merge` with Hugging Face's BPE-dropout, each word on its own (its `BPE(dropout=...)`).

    Hugging Face keeps a word's candidate merges in a priority queue (lowest rank, then leftmost).
    Each pop draws: with probability `dropout` the entry is set aside; otherwise the entries set
    aside go back into the queue, and the popped one merges if it still describes its pair (an
    entry whose pair changed since it was pushed is stale and only spent). A merge pushes the new
    pairs on either side. The word is done when the queue is empty, entries set aside or not.
    Stale entries draw and bring the set-aside ones back as live ones do, so they are kept here
    too: a step pops one entry of every word. Symbols stay in place, merged ones marked dead, with
    links to the live neighbours. Draws come from `seed` (int32 `[2]`) and the step. With
    `origins` (int64, one per symbol), also the origin of each token's first symbol. With
    `first_skip` (int64, one per word, or -1), a word's first `first_skip` pops of entries that
    merge are kept and the next such pop set aside, whatever the draws (see `bpe.BytePairEncoding.sample`)."""
    count = tf.size(symbols, out_type=tf.int64)
    index = tf.range(count)
    # (Sliced: an empty word list has no pair, and no `[False]` either.)
    inside = tf.concat([rows[:-1] == rows[1:], [False]], axis=0)[:count]
    next_unit = tf.where(inside, index + 1, -1)
    previous_unit = tf.where(tf.concat([[False], inside], axis=0)[:count], index - 1, -1)
    found = table.lookup(symbols[:-1], symbols[1:])
    first = ops.indices_where((found >= 0) & inside[:-1])
    entries = (bpe.rank_of(ops.take(found, first)), first, bpe.made_by(ops.take(found, first)))
    origins = index if origins is None else origins
    finished = [
        tf.TensorArray(tf.int64, size=1, dynamic_size=True, infer_shape=False, element_shape=[None]).write(
            0, tf.zeros([0], tf.int64)
        )
        for _ in range(3)
    ]
    no_key = tf.int64.max

    def step(units, word_of, fixed, entries, aside, finished, step):
        symbols, alive, next_unit, previous_unit, rows, origins = units
        first_skip, live_pops = fixed
        ranks, positions, made = entries
        count, words = tf.size(symbols, out_type=tf.int64), tf.size(word_of, out_type=tf.int64)
        number = tf.range(tf.size(ranks, out_type=tf.int64))
        entry_rows = ops.take(rows, positions)
        key = tf.where(aside, no_key, ranks * count + positions)
        top = tf.math.unsorted_segment_min(key, entry_rows, words)
        popped = tf.math.unsorted_segment_min(
            tf.where(key == ops.take(top, entry_rows), number, no_key), entry_rows, words
        )
        has = top != no_key
        drawn = tf.random.stateless_uniform(
            [words], tf.random.experimental.stateless_fold_in(seed, step), dtype=tf.float32
        )
        # The popped entry: is its pair still there? (Gathers read a value past the end where a word
        # pops nothing.)
        entry = tf.minimum(popped, tf.size(ranks, out_type=tf.int64))
        at = tf.where(has, ops.take(tf.concat([positions, [0]], axis=0), entry), count)
        right = ops.take(tf.concat([next_unit, [-1]], axis=0), at)
        padded = tf.concat([symbols, [0]], axis=0)
        pair = table.lookup(ops.take(padded, at), ops.take(padded, tf.maximum(right, 0)))
        wanted = ops.take(tf.concat([made, [-1]], axis=0), entry)
        live = ops.take(tf.concat([alive, [False]], axis=0), at)
        merging = has & live & (right >= 0) & (pair >= 0) & (bpe.made_by(pair) == wanted)
        fixed_pop = merging & (live_pops <= first_skip)
        kept = has & tf.where(fixed_pop, live_pops < first_skip, ~(drawn < dropout))
        live_pops += tf.cast(merging, tf.int64)
        merges = kept & merging
        is_popped = number == ops.take(popped, entry_rows)
        entry_kept = ops.take(kept, entry_rows)
        aside = (aside & ~entry_kept) | (is_popped & ~entry_kept)
        left, right = tf.boolean_mask(at, merges), tf.boolean_mask(right, merges)
        new = tf.boolean_mask(wanted, merges)
        after = ops.take(next_unit, right)
        before = ops.take(previous_unit, left)
        symbols = tf.tensor_scatter_nd_update(symbols, left[:, None], new)
        alive = tf.tensor_scatter_nd_update(alive, right[:, None], tf.zeros_like(right, tf.bool))
        next_unit = tf.tensor_scatter_nd_update(next_unit, left[:, None], after)
        linked = ops.indices_where(after >= 0)
        previous_unit = tf.tensor_scatter_nd_update(
            previous_unit, ops.take(after, linked)[:, None], ops.take(left, linked)
        )
        # The new pairs on either side of each merged symbol.
        with_before = table.lookup(ops.take(symbols, tf.maximum(before, 0)), new)
        with_after = table.lookup(new, ops.take(symbols, tf.maximum(after, 0)))
        pushed_before = ops.indices_where((before >= 0) & (with_before >= 0))
        pushed_after = ops.indices_where((after >= 0) & (with_after >= 0))
        spent = is_popped & entry_kept
        stay = ops.indices_where(~spent & ops.take(has, entry_rows))
        new_found = tf.concat([ops.take(with_before, pushed_before), ops.take(with_after, pushed_after)], axis=0)
        ranks = tf.concat([ops.take(ranks, stay), bpe.rank_of(new_found)], axis=0)
        positions = tf.concat(
            [ops.take(positions, stay), ops.take(before, pushed_before), ops.take(left, pushed_after)], axis=0
        )
        made = tf.concat([ops.take(made, stay), bpe.made_by(new_found)], axis=0)
        aside = tf.concat([ops.take(aside, stay), tf.zeros_like(new_found, tf.bool)], axis=0)
        # Words whose queue is empty leave: their live symbols are written out.
        done = ~has
        unit_done = ops.take(done, rows)
        out = ops.indices_where(unit_done & alive)
        originals = ops.take(word_of, rows)
        finished = [part.write(step, ops.take(t, out)) for part, t in zip(finished, (symbols, originals, origins))]
        going = ops.indices_where(~unit_done)
        renumbered = tf.cumsum(tf.cast(~unit_done, tf.int64)) - 1
        word_renumbered = tf.cumsum(tf.cast(~done, tf.int64)) - 1

        def moved(links):
            return tf.where(links >= 0, ops.take(renumbered, tf.maximum(links, 0)), -1)

        units = (
            ops.take(symbols, going),
            ops.take(alive, going),
            moved(ops.take(next_unit, going)),
            moved(ops.take(previous_unit, going)),
            ops.take(word_renumbered, ops.take(rows, going)),
            ops.take(origins, going),
        )
        entries = (ranks, ops.take(renumbered, positions), made)
        going_words = ops.indices_where(~done)
        fixed = (ops.take(first_skip, going_words), ops.take(live_pops, going_words))
        return units, ops.take(word_of, going_words), fixed, entries, aside, finished, step + 1

    vector = tf.TensorShape([None])
    units = (symbols, tf.ones_like(symbols, tf.bool), next_unit, previous_unit, rows, origins)
    words = tf.range(number_of_words)
    first_skip = tf.fill([number_of_words], tf.constant(-1, tf.int64)) if first_skip is None else first_skip
    fixed = (first_skip, tf.zeros_like(first_skip))
    *_, finished, _ = tf.while_loop(
        lambda units, word_of, *_: tf.size(word_of) > 0,
        step,
        (units, words, fixed, entries, tf.zeros_like(entries[0], tf.bool), finished, tf.constant(1)),
        shape_invariants=((vector,) * 6, vector, (vector,) * 2, (vector,) * 3, vector, [None] * 3, tf.TensorShape([])),
    )
    symbols, rows, origins = (part.concat() for part in finished)
    return table.gathered(symbols, rows, number_of_words, [origins])
