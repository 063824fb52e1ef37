"""Where the benchmarks find ../shared/data: `$TFSUBWORD_SHARED_DATA`, else `shared/data` in the nearest
folder above this one that has it (as the tests do)."""

import os
import pathlib


def shared_data():
    if "TFSUBWORD_SHARED_DATA" in os.environ:
        return pathlib.Path(os.environ["TFSUBWORD_SHARED_DATA"])
    for directory in pathlib.Path(__file__).resolve().parents:
        if (directory / "shared" / "data").is_dir():
            return directory / "shared" / "data"
    return pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
