"""Darts-clone double arrays, the trie format of SentencePiece's character maps: built and read. No TensorFlow.

A double array is a list of uint32 units; unit 0 is the root. The node at position `p` keeps its
children in the 256-unit block around `base = p ^ offset(units[p])`: the child reached by byte `c`
sits at `base ^ c` and carries `c` as its label (bits 0-7). When a key ends at the node, its has-leaf
bit (8) is set and the unit at `base` itself is a leaf: bit 31 set, so that its label matches no
byte, and the key's value in bits 0-30. Offsets are stored in bits 10-30 (or, with bit 9 set, shifted
left by 8 bits). Searches do not check bounds, so an array is a whole number of blocks and every unit
no node uses carries a label that no traversal reaching it asks for.
"""

import numpy as np

_BLOCK = 256
_HAS_LEAF, _LEAF = 1 << 8, 1 << 31
_MAX_OFFSET = 1 << 21  # larger offsets need their low 8 bits clear; `build` never makes one
_SEARCH_WINDOW = 16 * _BLOCK  # a new children block is looked for only among the last units


def offset(unit):
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def label(unit):
    return unit & (_LEAF | 0xFF)


def build(pairs):
    """The units (a uint32 array) of a double array holding `pairs`, `(key, value)` with non-empty
    `bytes` keys without NUL bytes and int values in [0, 2**31). Equal subtrees are stored once."""
    pairs = sorted(pairs)
    if not pairs:
        raise ValueError("A double array needs at least one key.")
    nodes, root = _minimal_automaton(pairs)
    array = _Array()
    array.place(nodes, root)
    return array.finish()


def items(units):
    """Every `(key bytes, value)` of a double array (`units`: int64 array), breadth first over all 255 labels."""
    size = len(units)
    labels = np.arange(1, 256, dtype=np.int64)
    positions = np.array([offset(units[0])], np.int64)  # the root is unit 0; its children hang off its offset
    prefixes = np.zeros((1, 0), np.uint8)
    found = []
    while len(positions):
        if prefixes.shape[1] > 1024:
            raise ValueError("the double array is too deep")
        next_positions, next_prefixes = [], []
        for block in range(0, len(positions), 4096):  # bounded memory: 4096 nodes x 255 labels at a time
            children = positions[block : block + 4096, None] ^ labels[None, :]
            inside = children < size
            child_units = np.where(inside, units[np.minimum(children, size - 1)], -1)
            parents, columns = np.nonzero(inside & (label(child_units) == labels[None, :]))
            child_units = child_units[parents, columns]
            moved = children[parents, columns] ^ offset(child_units)
            grown = np.concatenate([prefixes[block + parents], labels[columns, None].astype(np.uint8)], axis=1)
            leaves = np.nonzero((child_units >> 8) & 1)[0]
            if len(leaves):  # labels are never 0, so each key reads back whole as a NUL-padded string
                keys = np.ascontiguousarray(grown[leaves]).view(f"S{grown.shape[1]}").ravel().tolist()
                found.extend(zip(keys, (units[moved[leaves]] & (_LEAF - 1)).tolist()))
            next_positions.append(moved)
            next_prefixes.append(grown)
        positions = np.concatenate(next_positions)
        prefixes = np.concatenate(next_prefixes)
    return found


def _minimal_automaton(sorted_items):
    """The trie of the keys with equal subtrees merged, built key by key from sorted, distinct keys.

    Returns `(nodes, root)`: `nodes[i]` is `(value or None, ((byte, child index), ...))`. Only the
    nodes along the previous key are still open; once a key leaves them, they cannot change and are
    replaced by the equal node already stored, if any.
    """
    nodes, index_of = [], {}

    def close(node):
        signature = (node[0], tuple(node[1]))
        if signature not in index_of:
            index_of[signature] = len(nodes)
            nodes.append(signature)
        return index_of[signature]

    def close_deeper_than(depth, key):
        while len(path) > depth + 1:
            node = path.pop()
            path[-1][1].append((key[len(path) - 1], close(node)))

    path, previous = [[None, []]], b""
    for key, value in sorted_items:
        if not key or 0 in key:
            raise ValueError(f"Keys must be non-empty and hold no NUL byte. Received: {key!r}.")
        if not 0 <= value < _LEAF:
            raise ValueError(f"Values must be in [0, 2**31). Received: {value!r} for key {key!r}.")
        common = 0
        while common < min(len(key), len(previous)) and key[common] == previous[common]:
            common += 1
        if common == len(key):
            raise ValueError(f"Keys must be distinct and sorted. Received {key!r} after {previous!r}.")
        close_deeper_than(common, previous)
        path.extend([None, []] for _ in key[common:])
        path[-1][0] = value
        previous = key
    close_deeper_than(0, previous)
    return nodes, close(path[0])


class _Array:
    """Units being placed: which are taken, and which positions are some node's children base."""

    def __init__(self):
        self.units = [0] * _BLOCK
        self.taken = bytearray(_BLOCK)
        self.is_base = bytearray(_BLOCK)
        self.bases_in_block = [0]
        self.taken[0] = 1  # the root
        self._mark_base(0)  # a base of 0 would let the root's own unit answer byte 0

    def place(self, nodes, root):
        base_of = {}
        pending = [(0, root)]  # (position of a unit, the node it stands for)
        while pending:
            position, node = pending.pop()
            value, children = nodes[node]
            if node not in base_of:  # a shared node's children are placed once, then pointed to again
                labels = ([0] if value is not None else []) + [byte for byte, _ in children]
                base = base_of[node] = self._free_base(labels)
                for byte in labels:
                    self.taken[base ^ byte] = 1
                if value is not None:
                    self.units[base] = _LEAF | value
                for byte, child in children:
                    self.units[base ^ byte] = byte
                    pending.append((base ^ byte, child))
            relative = position ^ base_of[node]
            if relative >= _MAX_OFFSET:
                raise ValueError("Too many keys for a double array: an offset does not fit in 21 bits.")
            self.units[position] |= relative << 10 | (_HAS_LEAF if value is not None else 0)

    def finish(self):
        """Give each unused unit the label its block's spare base would ask for: nothing asks for it."""
        for start in range(0, len(self.units), _BLOCK):
            spare = start + self.is_base.index(0, start, start + _BLOCK)
            for position in range(start, start + _BLOCK):
                if not self.taken[position]:
                    self.units[position] = (position ^ spare) & 0xFF
        return np.array(self.units, dtype="<u4")

    def _free_base(self, labels):
        """The first base, among the last units, whose unit for each label is free. Each block keeps one
        position that is no base, for `finish`."""
        first, others = labels[0], labels[1:]
        position = self.taken.find(0, max(0, len(self.taken) - _SEARCH_WINDOW))
        while True:
            if position < 0:
                position = len(self.taken)
                self._grow()
            base = position ^ first
            if (
                not self.is_base[base]
                and self.bases_in_block[base // _BLOCK] < _BLOCK - 1
                and not any(self.taken[base ^ byte] for byte in others)
            ):
                self._mark_base(base)
                return base
            position = self.taken.find(0, position + 1)

    def _mark_base(self, base):
        self.is_base[base] = 1
        self.bases_in_block[base // _BLOCK] += 1

    def _grow(self):
        self.units.extend([0] * _BLOCK)
        self.taken.extend(bytes(_BLOCK))
        self.is_base.extend(bytes(_BLOCK))
        self.bases_in_block.append(0)
