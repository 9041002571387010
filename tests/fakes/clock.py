"""Time that passes only when someone sleeps: bounded waits end after a fixed number of polls,
and no test waits on the wall clock. Implements :class:`clusterstack.clients.Clock`."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)


class FakeClock:
    """``start``: the wall time at monotonic 0. ``sleeps`` counts the calls of :meth:`sleep`."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self.start = start
        self.elapsed = 0.0
        self.sleeps = 0

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed)

    def monotonic(self) -> float:
        return self.elapsed

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.elapsed += seconds
