"""A minimal progress bar on standard error (no dependency), for long trainer steps."""

import sys
import time


class Progress:
    """`with Progress("merging", total=30000) as bar: bar.update(n)`; silent when `enabled` is False.

    Redraws at most ten times a second; `total=None` shows a running count instead of a bar.
    """

    def __init__(self, label, total=None, enabled=True, unit="", stream=None):
        self.label, self.total, self.enabled, self.unit = label, total, enabled, unit
        self.stream = stream or sys.stderr
        self.value = 0
        self.start = self.last_draw = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, value):
        self.value = value
        now = time.monotonic()
        if self.enabled and now - self.last_draw >= 0.1:
            self.last_draw = now
            self._draw()

    def close(self):
        if self.enabled:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False

    def _draw(self):
        elapsed = time.monotonic() - self.start
        if self.total:
            done = min(self.value / self.total, 1.0)
            bar = "#" * int(done * 30)
            text = f"{self.label} [{bar:<30}] {self.value:,}/{self.total:,}{self.unit} {elapsed:.1f}s"
        else:
            text = f"{self.label} {self.value:,}{self.unit} {elapsed:.1f}s"
        self.stream.write("\r" + text)
        self.stream.flush()
