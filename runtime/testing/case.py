"""`WorkflowTestCase`: a Django test case with a `WorkflowEnvironment` per test (`self.env`)."""

from __future__ import annotations

from django.test import TransactionTestCase

from runtime.testing.environment import WorkflowEnvironment


class WorkflowTestCase(TransactionTestCase):
    """Each test gets `self.env`, a fresh time-skipping `WorkflowEnvironment`. A transaction
    test case: the checkpoint writer commits on a connection of its own, which a test inside
    one open transaction would not see."""

    time_skipping = True

    def setUp(self) -> None:
        super().setUp()
        self.env = WorkflowEnvironment(time_skipping=self.time_skipping)
        self.env.__enter__()
        self.addCleanup(self.env.__exit__, None, None, None)
