"""Files wherever TensorFlow reaches them: local paths, and `gs://`, `s3://`, `hdfs://`, `ram://` ...

A path with a scheme (`scheme://...`) goes through `tf.io.gfile`, imported only then, so reading a
local vocabulary needs no TensorFlow. Writes are atomic: a temporary file beside the target, renamed
over it once complete, so a reader sees the old file or the whole new one, never a part.
"""

import os
import tempfile
import uuid


def is_remote(path):
    """Whether `path` names a file system of TensorFlow's (it has a scheme) rather than a local path."""
    return "://" in os.fspath(path)


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def is_file(path):
    if is_remote(path):
        gfile = _gfile()
        return gfile.exists(path) and not gfile.isdir(path)
    return os.path.isfile(path)


def read_bytes(path, argument="path"):
    """The bytes of the file at `path`. Raises `ValueError` naming `argument` when it is not a readable file."""
    if not is_file(path):
        raise ValueError(f"`{argument}` names a path that is not a file: {os.fspath(path)!r}.")
    try:
        if not is_remote(path):
            with open(path, "rb") as file:
                return file.read()
        with _gfile().GFile(path, "rb") as file:
            return file.read()
    except Exception as error:  # OSError, or one of tf.errors' for a remote file
        raise ValueError(f"Cannot read {os.fspath(path)!r}: {error}.") from None


def size(path):
    """The size of the file at `path`, in bytes."""
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def join(directory, name):
    directory = os.fspath(directory)
    if is_remote(directory):
        return directory.rstrip("/") + "/" + name
    return os.path.join(directory, name)


def make_directory(path):
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def write_atomically(path, data):
    """Write `data` (bytes) to `path` so that readers see the old file or the whole new one."""
    if is_remote(path):
        gfile = _gfile()
        temporary = f"{os.fspath(path)}.tfsubword-{uuid.uuid4().hex}"
        try:
            with gfile.GFile(temporary, "wb") as file:
                file.write(data)
            gfile.rename(temporary, path, overwrite=True)
        except BaseException:
            if gfile.exists(temporary):
                gfile.remove(temporary)
            raise
        return
    directory = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=".tfsubword-", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
