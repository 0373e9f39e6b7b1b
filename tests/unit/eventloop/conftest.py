"""Worker loops made by a test are closed after it, whatever happened."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runtime.eventloop import WorkerLoop

LoopFactory = Callable[..., WorkerLoop]


@pytest.fixture
def new_loop() -> Iterator[LoopFactory]:
    made: list[WorkerLoop] = []

    def make(**options: Any) -> WorkerLoop:
        options.setdefault("concurrency", 100)
        options.setdefault("lag_warning", 0.0)
        made.append(WorkerLoop(**options))
        return made[-1]

    yield make
    for loop in made:
        loop.close()
