"""Encoding beyond one machine: a `tf.data` service (a dispatcher and two workers, in this process, on
the loopback interface) runs a pipeline that maps `WordPieceLayer` and `UnigramLayer`, and its ids
equal the local pipeline's. The workers run the mapped function's graph, core ops only.
"""

import pytest
import tensorflow as tf

from tests.conftest import SHARED_DATA, nonempty_lines
from tfsubword import UnigramLayer, WordPieceLayer, train_unigram, train_wordpiece


@pytest.fixture(scope="module")
def layers(tmp_path_factory):
    path = SHARED_DATA / "botchan.txt"
    if not path.is_file():
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    vocabulary = train_wordpiece(files=[str(path)], vocab_size=2000, show_progress=False)
    pieces = train_unigram(files=[str(path)], vocab_size=1000, show_progress=False)
    return WordPieceLayer(vocabulary), UnigramLayer(pieces), nonempty_lines(path)[:600]


def encoded(dataset):
    """{index: (WordPiece ids, Unigram ids)} of a dataset of (index, ragged ids, ragged ids) batches."""
    result = {}
    for indices, wordpiece, unigram in dataset:
        for index, first, second in zip(indices.numpy(), wordpiece.to_list(), unigram.to_list()):
            result[int(index)] = (first, second)
    return result


@pytest.mark.full
def test_a_data_service_with_two_workers_gives_the_local_ids(layers):
    wordpiece, unigram, lines = layers
    dataset = (
        tf.data.Dataset.from_tensor_slices((tf.range(len(lines)), tf.constant(lines)))
        .batch(32)
        .map(lambda index, text: (index, wordpiece(text), unigram(text)), num_parallel_calls=tf.data.AUTOTUNE)
    )
    local = encoded(dataset)
    dispatcher = tf.data.experimental.service.DispatchServer(tf.data.experimental.service.DispatcherConfig(port=0))
    address = dispatcher.target.split("://")[1]
    workers = [
        tf.data.experimental.service.WorkerServer(
            tf.data.experimental.service.WorkerConfig(dispatcher_address=address, worker_address="localhost:%port%")
        )
        for _ in range(2)
    ]
    try:
        distributed = dataset.apply(
            tf.data.experimental.service.distribute(processing_mode="distributed_epoch", service=dispatcher.target)
        )
        remote = encoded(distributed)
    finally:
        for server in workers + [dispatcher]:
            server._stop()
    assert len(local) == len(lines)
    assert remote == local
