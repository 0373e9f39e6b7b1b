"""The messaging subcommands of `manage.py fanfold`: send, signal.

fanfold send RUN TOPIC VALUE_JSON [--idempotency-key K]   a message to a run's mailbox
fanfold signal NAME PAYLOAD_JSON [--idempotency-key K]    emit a signal to the runs waiting
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from django.core.management.base import OutputWrapper

from runtime.access import cli_actor
from runtime.management.records import json_argument, write_json
from runtime.messaging.mailbox import send_message
from runtime.messaging.signals import emit


def add_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    """Add the messaging subcommands to `fanfold`'s subparsers; returns them."""
    send = sub.add_parser("send", help="send a message to a run's mailbox")
    send.add_argument("run")
    send.add_argument("topic")
    send.add_argument("value", metavar="VALUE_JSON", help="the message, a JSON value")
    signal = sub.add_parser("signal", help="emit a signal to every run waiting for it")
    signal.add_argument("name")
    signal.add_argument("payload", metavar="PAYLOAD_JSON", help="the payload, a JSON value")
    for each in (send, signal):
        each.add_argument("--idempotency-key", help="a repeat with this key is a no-op")
    return [send, signal]


def actions(stdout: OutputWrapper) -> dict[str, Callable[[dict[str, Any]], None]]:
    """The subcommands by name, writing to `stdout`."""

    def do_send(options: dict[str, Any]) -> None:
        value = json_argument(options["value"], "VALUE_JSON")
        sent = send_message(options["run"], options["topic"], value,
                            idempotency_key=options["idempotency_key"], by=cli_actor())  # fmt: skip
        if options["json"]:
            write_json(stdout, {"message_id": sent.id, "created": sent.created})
            return
        again = "" if sent.created else " (already sent with this idempotency key)"
        stdout.write(f"message {sent.id} sent to run {options['run']}{again}\n")

    def do_signal(options: dict[str, Any]) -> None:
        payload = json_argument(options["payload"], "PAYLOAD_JSON")
        emitted = emit(options["name"], payload, options["idempotency_key"], by=cli_actor())
        if options["json"]:
            write_json(stdout, {"signal_id": emitted.id, "delivered": emitted.delivered,
                                "created": emitted.created})  # fmt: skip
            return
        again = "" if emitted.created else " (already emitted with this idempotency key)"
        runs = "run" if emitted.delivered == 1 else "runs"
        stdout.write(f"signal {emitted.id} taken by {emitted.delivered} {runs}{again}\n")

    return {"send": do_send, "signal": do_signal}
