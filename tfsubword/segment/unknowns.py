"""Unknown pieces as SentencePiece gives them: a character no piece covers is an unknown piece of its
own while segmenting; then consecutive unknown pieces of a row become one, or, in a model with byte
fallback, each becomes the byte pieces of its character's UTF-8. Hugging Face's `Unigram` with byte
fallback (`fused_as_bytes`) differs only where the unknown token is written in the text.
"""

import tensorflow as tf

from tfsubword import graph_ops as ops


def finish(ids, splits, code_points, piece_chars, unknown_id, byte_ids):
    """Pieces of rows (`splits`) with unknown ones one per character, over the rows' code points, ->
    the same as SentencePiece gives them: consecutive unknown pieces merged into one, or with byte
    fallback (`byte_ids` not None) each replaced by the byte pieces of its character's UTF-8.
    `piece_chars`: the characters each id covers."""
    if byte_ids is None:
        return merge_unknowns(ids, splits, unknown_id)
    # The pieces cover their rows in order: a running sum of their lengths says where each starts.
    characters = ops.take(code_points, tf.cumsum(ops.take(piece_chars, ids), exclusive=True))
    ids, piece_splits, _, _ = unknowns_as_bytes(ids, characters, unknown_id, byte_ids)
    return ids, ops.take(piece_splits, splits)


def fused_as_bytes(ids, splits, code_points, piece_chars, unknown_id, unknown_as, unknown_text, byte_ids):
    """Hugging Face's `Unigram` with byte fallback, on pieces of words (`splits`) over their code points:
    a run of unknown pieces (`unknown_id`, one per character) and pieces `unknown_as` read in the text
    (whose text is `unknown_text`) becomes the byte pieces of its UTF-8, except that a piece
    `unknown_as` alone stays itself (its text is a piece). Every byte piece must be in `byte_ids`."""
    size = tf.size(ids, out_type=tf.int64)
    characters = ops.take(code_points, tf.cumsum(ops.take(piece_chars, ids), exclusive=True))
    unknown = (ids == unknown_id) | (ids == unknown_as)
    row_starts = tf.scatter_nd(splits[:-1, None], tf.ones_like(splits[:-1], tf.int32), size[None] + 1)[:-1] > 0
    after_unknown = tf.concat([[False], unknown[:-1]], axis=0) & ~row_starts
    before_unknown = tf.concat([unknown[1:] & ~row_starts[1:], [False]], axis=0)
    # The written unknown token within a run: one unknown piece per character of its text.
    spelled = (ids == unknown_as) & (after_unknown | before_unknown)
    text = tf.constant([ord(char) for char in unknown_text], tf.int32)
    count = tf.reduce_sum(tf.cast(spelled, tf.int64))
    spelled_text = tf.tile(text, count[None])
    replacement = tf.stack([tf.fill(tf.shape(spelled_text), unknown_id), spelled_text], 1)
    replacement_splits = tf.range(count + 1) * len(unknown_text)
    table, spelled_splits = ops.substitute_rows(
        tf.stack([ids, characters], 1), spelled, replacement, replacement_splits
    )
    ids, piece_splits, _, _ = unknowns_as_bytes(table[:, 0], table[:, 1], unknown_id, byte_ids)
    return ids, ops.take(piece_splits, ops.take(spelled_splits, splits))


def merge_unknowns(ids, splits, unknown_id):
    """Consecutive unknown pieces of a row become one. Most texts have no unknown piece: then
    the two dozen ops of the merge do not run."""

    def merge():
        merged = merged_unknowns(ids, splits, unknown_id)
        return ops.take(ids, ops.indices_where(~merged)), less_dropped(splits, ops.indices_where(merged))

    return ops.rare_cond(tf.reduce_any(ids == unknown_id), merge, lambda: (ids, splits))


def merged_unknowns(ids, splits, unknown_id):
    """Whether each piece is an unknown one after another of its row (`splits`: row splits, int64),
    which goes when consecutive unknown pieces become one."""
    size = tf.size(ids, out_type=tf.int64)
    unknown = ids == unknown_id
    # Mark where rows start (a start repeats for an empty row; a last one can be `size`).
    row_starts = tf.scatter_nd(splits[:-1, None], tf.ones_like(splits[:-1], tf.int32), size[None] + 1)[:-1] > 0
    return unknown & tf.concat([[False], unknown], axis=0)[:size] & ~row_starts


def less_dropped(splits, dropped):
    """Row `splits` (int64) with the values at the sorted positions `dropped` (int64) taken out."""
    return splits - ops.search_sorted(dropped, splits, out_type=tf.int64)


def unknowns_as_bytes(ids, characters, unknown_id, byte_ids):
    """SentencePiece's byte fallback: each unknown piece becomes the byte pieces of the UTF-8 of
    its character (`characters`: the first character of each piece, int32). Returns the new ids,
    the splits (int64) grouping them by old piece, and for each new piece its old piece and whether
    it is the last of them."""
    unknown = ids == unknown_id
    lengths = tf.where(unknown, 1 + sum(tf.cast(characters >= bound, tf.int32) for bound in (0x80, 0x800, 0x10000)), 1)
    piece_splits = tf.concat([[0], tf.cumsum(tf.cast(lengths, tf.int64))], axis=0)
    old = ops.row_ids(piece_splits)
    index = tf.cast(tf.range(piece_splits[-1]) - ops.take(piece_splits, old), tf.int32)  # of the byte in its character
    length, character = ops.take(lengths, old), ops.take(characters, old)
    bits = tf.bitwise.right_shift(character, 6 * (length - 1 - index))
    # A lead byte marks the length (none for one byte); the others hold 6 bits each after 0b10.
    lead_marks = tf.constant([0, 0, 0xC0, 0xE0, 0xF0], tf.int32)
    byte = tf.where(index == 0, ops.take(lead_marks, length) | bits, 0x80 | (bits & 0x3F))
    from_unknown = ops.take(unknown, old)
    # Elsewhere `byte` is a whole code point, perhaps past the table: read entry 0 there instead.
    new_ids = tf.where(from_unknown, ops.take(byte_ids, tf.where(from_unknown, byte, 0)), ops.take(ids, old))
    return new_ids, piece_splits, old, index == length - 1
