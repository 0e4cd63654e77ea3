"""`manage.py scheduler`'s own loop: a database out of reach ends a round, not the process."""

import logging

from django.db import OperationalError

from offsets.management.commands.scheduler import Command


class Unreachable:
    def __init__(self) -> None:
        self.rounds = 0

    def round(self):
        self.rounds += 1
        raise OperationalError('connection to server at "127.0.0.1", port 5432 failed')


def test_a_round_without_the_database_is_skipped_and_logged(caplog):
    scheduler = Unreachable()
    with caplog.at_level(logging.WARNING, logger="offsets.scheduler"):
        Command().round(scheduler)
        Command().round(scheduler)
    assert scheduler.rounds == 2
    assert (
        caplog.messages
        == [
            'A round was skipped: the database did not answer: connection to server at "127.0.0.1", '
            "port 5432 failed"
        ]
        * 2
    )
