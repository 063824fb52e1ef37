"""Tries in the TensorFlow graph: longest matches from every position of a batch of words at once.

A set of strings becomes a trie whose transitions live in one hash table, keyed by
`node * 0x110000 + code point`. Matching is done in two vectorized steps over a whole batch of words:

1. `Trie.longest_matches`: from every position at once, walk the trie along the text and keep the
   longest string of the set that starts there. It takes as many steps as the longest walk (at most
   the longest string of the set), whatever the number or length of the words.
2. `greedy_path`: follow the chain "position -> end of its longest match" from each word start by
   pointer doubling, in log2(longest word) steps.

WordPiece is step 1 with a root per position (word start or continuation) and step 2 with "no match"
meaning failure. A string-rewrite map (a longest-match normalizer) is the same with "no match" meaning
"copy one character".

`CharacterArray` holds a `Trie` as three arrays read with gathers only (a double array over the
keys' characters numbered densely), for walks compiled with XLA, which takes no hash tables.

`DoubleArray` walks SentencePiece's own trie format (a Darts-clone double array over UTF-8 bytes) with
gathers: a character map of 200,000 rules stays the few hundred kilobytes its `.model` file holds.
"""

import types

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables

_CODE_POINTS = 0x110000
# Read in place of a character to end every walk: node * _CODE_POINTS + this is a negative key.
_NO_CHARACTER = np.int64(-(2**62))
# `pack_key`: values are int32, so below 2**31: a key's length shifted by this, plus its value, orders keys by length.
VALUE_BITS = np.int64(31)
# Walks take this many steps between checks that some walk is alive.
_CHUNK = 4
# `matches_by_end` walks from every position, dead walks too, for keys of up to this many characters:
# most walks are still alive there, and slices of the text are cheaper than gathers of the live ones.
_DENSE_STEPS = 3


class Trie(tf.Module):
    """The strings `keys` (Python str), each with an int32 value, as an in-graph trie.

    Node 0 is the root. `node(prefix)` gives the node reached by a prefix, to start walks from.
    """

    def __init__(self, keys, values, name=None):
        super().__init__(name=name)
        children = {}
        node_values = [-1]
        for key, value in zip(keys, values):
            node = 0
            for char in key:
                edge = (node, ord(char))
                child = children.get(edge)
                if child is None:
                    child = children[edge] = len(node_values)
                    node_values.append(-1)
                node = child
            node_values[node] = value
        self._node_value_list = tuple(node_values)
        self._children = types.MappingProxyType(children)  # a dict attribute would be wrapped entry by entry
        edges = np.array(list(children.keys()), dtype=np.int64).reshape(-1, 2)
        self._transitions = tables.hash_table(
            edges[:, 0] * _CODE_POINTS + edges[:, 1], list(children.values()), -1, tf.int64, tf.int32
        )
        # The value of each node, indexed by node + 1, so that "no node" (-1) reads -1.
        self._node_values = tables.constant([-1] + node_values, tf.int32)

    def node(self, prefix):
        """The node reached from the root by `prefix`, or -1 if no key starts with it."""
        node = 0
        for char in prefix:
            node = self._children.get((node, ord(char)), -1)
            if node < 0:
                return -1
        return node

    def longest_matches(self, code_points, start_nodes, limits):
        """The longest key starting at each position.

        Args:
            code_points: int32 `[n]`, the text (all words concatenated).
            start_nodes: int32 `[n]`, the node to walk from at each position; -1 to skip the position.
            limits: int32 `[n]`, the exclusive end of the word each position belongs to; walks stop
                there. Positions of one word share their limit.

        Returns:
            `(ends, values)`, int32 `[n]`: the exclusive end and the value of the longest key that
            starts at each position, or -1 and -1 where none does.
        """
        return longest_of(*self.matches(code_points, start_nodes, limits), tf.size(code_points))

    def matches(self, code_points, start_nodes, limits):
        """Every key starting at each position, as `longest_matches` walks: their origins (int64) and
        their `pack_key`s, in no particular order."""
        size = tf.size(code_points)
        positions = tf.range(size)
        chars = tf.cast(code_points, tf.int64)
        # The character a walk reads after each position: the next one within the word, else one
        # that no transition takes. Walks then carry no position or limit, only their origin.
        following = tf.where(limits > positions + 1, tf.concat([chars[1:], [_NO_CHARACTER]], axis=0), _NO_CHARACTER)
        origins = ops.indices_where((start_nodes >= 0) & (limits > positions))

        def step(length, origins, node, reading):
            """Walks that have read `length` characters read one more: the keys they end (origins and
            `pack_key`s), and the walks still alive."""
            child = self._transitions.lookup(tf.cast(node, tf.int64) * _CODE_POINTS + reading)
            value = ops.take(self._node_values, child + 1)
            accepted = ops.indices_where(value >= 0)
            length_after = tf.cast(length + 1, tf.int64)
            found = (ops.take(origins, accepted), pack_key(length_after, ops.take(value, accepted)))
            alive = ops.indices_where(child >= 0)
            origins = ops.take(origins, alive)
            return found, (origins, ops.take(child, alive), ops.take(following, origins + length_after - 1))

        # Each loop iteration takes `_CHUNK` steps: an iteration's plumbing costs more than a step's
        # ops, and steps past the walks' end run on empty tensors. Seeded with an empty block:
        # concatenating a TensorArray with no elements fails.
        found_at, found = (
            tf.TensorArray(tf.int64, size=1, dynamic_size=True, infer_shape=False, element_shape=[None]).write(
                0, tf.zeros([0], tf.int64)
            )
            for _ in range(2)
        )

        def chunk(chunks, origins, node, reading, found_at, found):
            walks, keys = (origins, node, reading), []
            for taken in range(_CHUNK):
                ended, walks = step(chunks * _CHUNK + taken, *walks)
                keys.append(ended)
            keys_at, keys = (tf.concat(part, axis=0) for part in zip(*keys))
            return (chunks + 1, *walks, found_at.write(chunks + 1, keys_at), found.write(chunks + 1, keys))

        *_, found_at, found = tf.while_loop(
            lambda chunks, origins, *_: tf.size(origins) > 0,
            chunk,
            (tf.constant(0), origins, ops.take(start_nodes, origins), ops.take(chars, origins), found_at, found),
        )
        return found_at.concat(), found.concat()

    def matches_by_end(self, code_points, word_starts, width, cells, weights=None, single_missing=None):
        """Every key at every position, each in the table cell chosen by its end and its length.

        Args:
            code_points: int32 `[n]`, the text (all words concatenated).
            word_starts: bool `[n]`, whether each position starts a word (keys do not cross into
                the next word).
            width: a Python int: keys longer than this are not looked for.
            cells: `(base, stride, size)`: the key of k characters that ends at position e goes to
                cell `base[e] - k * stride[e]` of a flat table of `size` cells (int64 `[n]`, `[n]` and
                a scalar). The caller picks the layout; the cells of the keys that can occur must be
                distinct and within the table.
            weights: optional 1-D tensor indexed by value + 1; its first element is the weight
                of the cells where no key is. (Built once by the caller: concatenating it here
                would copy it on every call.)
            single_missing: the value of the cells of one-character keys where no key is.

        Returns:
            int32 `[size]`: the value of each cell's key, -1 where no key is (values are
            non-negative). With `weights`, also `weights[that value + 1]` in the same layout.
        """
        base, stride, table_size = (tf.cast(x, tf.int64) for x in cells)
        size = tf.size(code_points, out_type=tf.int64)
        chars = tf.cast(code_points, tf.int64)
        # One-character keys: straight from the root's transitions.
        first = self._transitions.lookup(chars)
        single = ops.take(self._node_values, first + 1)
        if single_missing is not None:
            single = tf.where(single >= 0, single, single_missing)
            found, values = [base - stride], [single]
        else:
            ends = ops.indices_where(single >= 0)
            found, values = [ops.take(base - stride, ends)], [ops.take(single, ends)]
        # Walks go on into the next character unless it starts another word (or is past the end):
        # there the key is negative, so no transition matches. The loop is unrolled (width is
        # small): a step with no walk left costs little, a loop iteration much more.
        following = tf.concat(
            [tf.where(word_starts, _NO_CHARACTER, chars), tf.fill([_DENSE_STEPS], _NO_CHARACTER)], axis=0
        )
        # Each key found is kept as its cell, found at once from its end and its length k (where
        # an end and a length packed into one number cost a division and two gathers per key).

        # Step k reads the k-th character of every live walk, at `position`. Steps come in chunks;
        # the next chunk runs only if some walk is still alive, which on short texts skips most
        # of the (unrolled) steps.
        def steps(first_step, position, node):
            keys, key_values = [], []
            for k in range(first_step, min(first_step + _CHUNK, width + 1)):
                child = self._transitions.lookup(tf.cast(node, tf.int64) * _CODE_POINTS + ops.take(following, position))
                value = ops.take(self._node_values, child + 1)
                accepted = ops.indices_where(value >= 0)
                ends = ops.take(position, accepted)
                keys.append(ops.take(base, ends) - k * ops.take(stride, ends))
                key_values.append(ops.take(value, accepted))
                live = ops.indices_where(child >= 0)
                position, node = ops.take(position, live) + 1, ops.take(child, live)
            if first_step + _CHUNK <= width:
                more = tf.cond(
                    tf.size(position) > 0,
                    lambda: steps(first_step + _CHUNK, position, node),
                    lambda: (tf.zeros([0], tf.int64), tf.zeros([0], tf.int32)),
                )
                keys.append(more[0])
                key_values.append(more[1])
            return tf.concat(keys, axis=0), tf.concat(key_values, axis=0)

        if width >= 2:
            # The first steps walk from every position, dead walks too (their node is -1, so their
            # key is negative): most walks are still alive there, and the characters they read are
            # a slice of the text, where live walks need a gather of theirs and a gather of their
            # state to drop the dead.
            node, keys, key_values = first, [], []
            dense = min(width, _DENSE_STEPS)
            for k in range(2, dense + 1):
                node = self._transitions.lookup(
                    tf.cast(node, tf.int64) * _CODE_POINTS + following[k - 1 : k - 1 + size]
                )
                value = ops.take(self._node_values, node + 1)
                accepted = ops.indices_where(value >= 0)
                # The cells of keys of k characters, by their first position (a key ends in the text).
                keys.append(ops.take((base - k * stride)[k - 1 :], accepted))
                key_values.append(ops.take(value, accepted))
            if dense < width:
                live = ops.indices_where(node >= 0)
                more = steps(dense + 1, live + dense, ops.take(node, live))
                keys.append(more[0])
                key_values.append(more[1])
            found.extend(keys)
            values.extend(key_values)
        found, values = tf.concat(found, axis=0), tf.concat(values, axis=0)
        # Each cell holds one key at most, so a sum places the values (plus one: 0 is "no key").
        # One integer table and a gather: cheaper than a second segment op on the weights.
        ids_plus_one = tf.math.unsorted_segment_sum(values + 1, found, table_size)
        if weights is None:
            return ids_plus_one - 1
        return ids_plus_one - 1, ops.take(weights, ids_plus_one)


class CharacterArray(tf.Module):
    """A `Trie`'s nodes as a double array over its characters, read with gathers only.

    The keys' characters are numbered 1, 2, ... (`characters` maps code points to them, 0 for any
    other). Node n's child by character c is `base[n] + c` if `check` there is n; `value` is each
    node's value (-1 where none). Node 0 is the root; `node(prefix)` as in `Trie`.
    """

    def __init__(self, trie, name=None):
        super().__init__(name=name)
        alphabet, base, check, value, self._slots = _double_array(dict(trie._children), trie._node_value_list)
        self._trie = trie
        self.base, self.check, self.value = (tables.constant(array, tf.int32) for array in (base, check, value))
        page_values = np.zeros(_CODE_POINTS, np.int32)
        page_values[np.array(list(alphabet), np.int64)] = list(alphabet.values())
        self._characters = tables.CodePointTable(page_values, tf.int32)

    def node(self, prefix):
        """The unit of the node reached from the root by `prefix`, or -1 if no key starts with it."""
        node = self._trie.node(prefix)
        return -1 if node < 0 else int(self._slots[node])

    def characters(self, code_points):
        """Each code point's number among the keys' characters (int32), 0 for characters of no key."""
        return self._characters.lookup(code_points)


def _double_array(children, node_values):
    """`CharacterArray`'s arrays from a trie's edges `{(node, code point): child}` and node values:
    (the characters' numbers `{code point: number}`, base, check, value as int32 arrays, each node's
    unit). Nodes are placed breadth first, each node's children at the first base where all fit."""
    alphabet = {cp: number + 1 for number, cp in enumerate(sorted({cp for _, cp in children}))}
    kids = {}
    for (node, cp), child in children.items():
        kids.setdefault(node, []).append((alphabet[cp], child))
    used, onward = bytearray(1), [1]  # `onward`: from a used unit toward the next free one (path halving)
    base, check, value = [0], [0], [node_values[0]]

    def next_free(unit):
        while unit < len(used) and used[unit]:
            ahead = onward[unit]
            if ahead < len(used) and used[ahead]:
                onward[unit] = onward[ahead]
            unit = ahead
        return unit

    def make_room(size):
        grown = size - len(used)
        if grown > 0:
            used.extend(bytes(grown))
            onward.extend(range(len(onward) + 1, size + 1))
            base.extend([0] * grown)
            check.extend([-1] * grown)
            value.extend([-1] * grown)

    slots = [0] * len(node_values)
    used[0] = 1
    order = [0]
    for node in order:  # grows as it goes: breadth first
        pairs = sorted(kids.get(node, ()))
        if not pairs:
            continue
        first, last = pairs[0][0], pairs[-1][0]
        place = next_free(first + 1)
        make_room(place + last - first + 1)
        while any(used[place + number - first] for number, _ in pairs[1:]):
            place = next_free(place + 1)
            make_room(place + last - first + 1)
        unit = slots[node]
        base[unit] = place - first
        for number, child in pairs:
            at = base[unit] + number
            used[at], check[at], value[at], slots[child] = 1, unit, node_values[child], at
            order.append(child)
    # Every child a walk asks for (base + any number) lies within the arrays.
    make_room(max(base) + len(alphabet) + 1)
    arrays = [np.array(array, np.int32) for array in (base, check, value)]
    return alphabet, *arrays, np.array(slots, np.int64)


def pack_key(lengths, values):
    """Keys found, as one int64 each that orders them by length: their `lengths` (int64) and int32
    `values` (below 2**31)."""
    return tf.bitwise.left_shift(lengths, VALUE_BITS) + tf.cast(values, tf.int64)


def longest_of(origins, packed, size):
    """The longest key found from each of `size` positions, from the `origins` (int64) and the
    `pack_key`s of the keys found: `(ends, values)` as `Trie.longest_matches` returns them."""
    longest = tf.math.unsorted_segment_max(packed, origins, size)
    matched = longest > 0
    ends = tf.where(matched, tf.range(size) + tf.cast(tf.bitwise.right_shift(longest, VALUE_BITS), tf.int32), -1)
    return ends, tf.where(matched, tf.cast(tf.bitwise.bitwise_and(longest, 2**VALUE_BITS - 1), tf.int32), -1)


class DoubleArray(tf.Module):
    """A Darts-clone double array (see `tfsubword.files.darts`) for longest matches over UTF-8 bytes.

    Args:
        units: the array's uint32 units, as a `.model` file's character map holds them; every node a
            walk can reach must be within them (`sentencepiece_model.charsmap_arrays` checks this).
        values: the distinct values the keys hold, sorted: a match answers with its value's index here.
        longest: the longest key, in bytes.
    """

    def __init__(self, units, values, longest, name=None):
        super().__init__(name=name)
        self._units = tables.constant(np.asarray(units, np.uint32).view(np.int32), tf.int32)
        self._values = tables.constant(values, tf.int64)
        self._size = len(units)
        self.longest = int(longest)

    def longest_matches(self, data, starts, limits):
        """The longest key in `data` (int32 bytes) from each of the positions `starts` (int64 `[k]`), not
        reaching `limits` (int64 `[k]`, exclusive). Returns its length in bytes (int64 `[k]`, 0 where
        none) and its value's index (int64 `[k]`, -1 where none)."""
        k = tf.size(starts, out_type=tf.int64)

        def step(taken, walks, node, length, value):
            position = ops.take(starts, walks) + taken
            alive = ops.indices_where(position < ops.take(limits, walks))
            walks, node, position = (ops.take(t, alive) for t in (walks, node, position))
            byte = ops.take(data, position)
            child = tf.bitwise.bitwise_xor(tf.bitwise.bitwise_xor(node, _offset(self._unit(node))), byte)
            unit = self._unit(child)
            moved = ops.indices_where((child < self._size) & (tf.bitwise.bitwise_and(unit, _LABEL) == byte))
            walks, node, unit = (ops.take(t, moved) for t in (walks, child, unit))
            leaf = ops.indices_where(tf.bitwise.bitwise_and(unit, _HAS_LEAF) > 0)
            ended = ops.take(walks, leaf)[:, None]
            base = tf.bitwise.bitwise_xor(ops.take(node, leaf), _offset(ops.take(unit, leaf)))
            found = tf.cast(tf.bitwise.bitwise_and(self._unit(base), 0x7FFFFFFF), tf.int64)
            taken += 1
            length = tf.tensor_scatter_nd_update(length, ended, tf.fill(tf.shape(leaf), taken))
            value = tf.tensor_scatter_nd_update(value, ended, ops.search_sorted(self._values, found, out_type=tf.int64))
            return taken, walks, node, length, value

        _, _, _, length, value = tf.while_loop(
            lambda taken, walks, *_: (taken < self.longest) & (tf.size(walks) > 0),
            step,
            (
                tf.constant(0, tf.int64),
                tf.range(k),
                tf.zeros([k], tf.int32),
                tf.zeros([k], tf.int64),
                -tf.ones([k], tf.int64),
            ),
            shape_invariants=(tf.TensorShape([]), *[tf.TensorShape([None])] * 4),
        )
        return length, value

    def _unit(self, positions):
        """The units at `positions`, read in range (a walk out of range finds a label it does not ask for)."""
        return ops.take(self._units, tf.minimum(positions, self._size - 1))


_HAS_LEAF = 1 << 8
# A unit's label: its byte, and bit 31, set in leaves (negative in int32), so that no byte matches a leaf.
_LABEL = np.int32(-(2**31) | 0xFF)


def _offset(units):
    """Where a node's children are, relative to it (int32 units of a double array)."""
    shift = tf.bitwise.right_shift(tf.bitwise.bitwise_and(units, 1 << 9), 6)
    return tf.bitwise.left_shift(tf.bitwise.right_shift(tf.bitwise.bitwise_and(units, 0x7FFFFFFF), 10), shift)


def greedy_path(jumps, starts, max_steps):
    """Positions visited by following `jumps` from each start.

    Args:
        jumps: int32 `[n]`, each position's successor: a later position, or `n` ("stop here") or
            `n + 1` ("fail here"); both end the path.
        starts: bool `[n]`, where paths begin.
        max_steps: an upper bound on the positions in one path: a Python int (the doubling rounds
            are unrolled) or a scalar tensor (they run in a loop).

    Returns:
        bool `[n]`: whether each position lies on a path.
    """
    size = tf.size(jumps)
    jumps = tf.concat([jumps, [size, size + 1]], axis=0)
    visited = tf.cast(tf.concat([starts, [False, False]], axis=0), tf.int32)

    # After round r, `visited` (0 or 1) holds the first 2**r positions of every path and `jumps` leaps
    # 2**r steps. A position is reached when some visited position jumps to it: a segment max over
    # all positions is three ops a round, where gathering the visited ones and scattering is a dozen.
    def double(visited, jumps):
        reached = tf.math.unsorted_segment_max(visited, jumps, size + 2)
        return tf.maximum(visited, reached), ops.take(jumps, jumps)

    if isinstance(max_steps, int):
        for _ in range(max(max_steps - 1, 0).bit_length()):
            visited, jumps = double(visited, jumps)
    else:
        max_steps = tf.cast(max_steps, tf.int64)
        _, visited, jumps = tf.while_loop(
            lambda reach, visited, jumps: reach < max_steps,
            lambda reach, visited, jumps: (reach * 2, *double(visited, jumps)),
            (tf.constant(1, tf.int64), visited, jumps),
        )
    return visited[:-2] > 0
