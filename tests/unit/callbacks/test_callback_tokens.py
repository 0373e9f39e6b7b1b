"""Callback tokens: derived from the step, named by their run, the earlier form still found."""

from __future__ import annotations

import base64
import uuid

from hypothesis import given
from hypothesis import strategies as st

from runtime.core.callbacks import derive_token, recover_token, token_digest, token_run
from tests.support.callback_tokens import earlier_form

SECRET, OLD_SECRET = b"current key", b"dropped key"


@given(st.uuids(), st.uuids())
def test_token_run_is_the_run_the_token_was_derived_for(run_id: uuid.UUID, sid: uuid.UUID) -> None:
    token = derive_token(SECRET, run_id, sid)
    assert token_run(token) == run_id
    assert len(token) <= 96 and base64.urlsafe_b64decode(token[22:] + "=")  # URL-safe text


def test_token_run_of_a_token_of_the_earlier_form_is_none() -> None:
    assert token_run(earlier_form(SECRET, uuid.uuid4())) is None
    assert token_run("not a token") is None


def test_recover_token_finds_either_form_with_any_key() -> None:
    run_id, sid = uuid.uuid4(), uuid.uuid4()
    secrets = [SECRET, OLD_SECRET]
    current = derive_token(SECRET, run_id, sid)
    assert recover_token(secrets, run_id, sid, token_digest(current)) == current
    earlier = earlier_form(OLD_SECRET, sid)
    assert recover_token(secrets, run_id, sid, token_digest(earlier)) == earlier
    assert recover_token([SECRET], run_id, sid, token_digest(earlier)) is None


def test_a_token_differs_by_step_and_by_key() -> None:
    run_id, sid = uuid.uuid4(), uuid.uuid4()
    token = derive_token(SECRET, run_id, sid)
    assert token != derive_token(SECRET, run_id, uuid.uuid4())
    assert token[22:] != derive_token(OLD_SECRET, run_id, sid)[22:]
