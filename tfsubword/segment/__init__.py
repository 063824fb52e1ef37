"""Segment: words -> pieces, in the graph, for every distinct word of a batch at once.

`trie` (longest matches), `wordpiece` (greedy longest-match-first), `viterbi` and `viterbi_exact`
(the unigram model's best path, to SentencePiece's last bit), `bpe` (merges by rank).
"""
