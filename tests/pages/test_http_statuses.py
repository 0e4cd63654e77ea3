"""The HTTP status each error a service raises carries, and the words a page puts around it."""

import pytest

from dashboard.pages.errors import READING_KAFKA, refusal
from offsets.edits import errors as edit_errors
from offsets.edits.kinds.offset_changes.writes import NothingSent
from offsets.kafka import connect_rest
from offsets.kafka import errors as kafka_errors

STATUSES = [
    (edit_errors.EditInputError, 400),
    (edit_errors.DocumentInputError, 400),
    (edit_errors.NothingToChange, 400),
    (edit_errors.EditForbidden, 403),
    (edit_errors.ConnectorNotFound, 404),
    (edit_errors.EditStateConflict, 409),
    (kafka_errors.KafkaUnavailable, 503),
    (kafka_errors.TopicNotFound, 503),
    (edit_errors.SinkWriteIncomplete, 503),
    (connect_rest.ConnectorUnknown, 404),
    (connect_rest.ConnectNotConfigured, 409),
    (connect_rest.ConnectRebalancing, 409),
    (connect_rest.ConnectUnreachable, 503),
    (connect_rest.ConnectAuthFailed, 502),
    (connect_rest.ConnectBadRequest, 502),
    (connect_rest.ConnectNotJson, 502),
    (connect_rest.ConnectRedirected, 502),
    (connect_rest.ConnectMalformed, 502),
    (connect_rest.ConnectServerError, 502),
    (connect_rest.ConnectAnswerBroken, 502),
    (connect_rest.ConnectAnswerTooLarge, 502),
    (NothingSent, 502),
]


@pytest.mark.parametrize(("error", "status"), STATUSES, ids=[e.__name__ for e, _ in STATUSES])
def test_each_error_says_its_status(error, status):
    assert error.http_status == status


def _subclasses(base: type) -> list[type]:
    found = []
    for cls in base.__subclasses__():
        found += [cls, *_subclasses(cls)]
    return found


def test_every_error_a_service_raises_has_a_status():
    # A new kind of edit error without one would crash the page or the API that catches it.
    errors = [cls for base in edit_errors.SERVICE_ERRORS for cls in [base, *_subclasses(base)]]
    kinds = [cls for cls in errors if cls is not edit_errors.EditError]
    assert all(isinstance(cls.http_status, int) for cls in kinds)
    assert {cls.__name__ for cls, _ in STATUSES} <= {cls.__name__ for cls in errors}


def test_a_page_says_what_it_was_doing_when_kafka_or_the_worker_failed():
    assert refusal(kafka_errors.KafkaUnavailable("down")) == (
        "The cluster could not be reached: down",
        503,
    )
    assert refusal(kafka_errors.TopicNotFound("t"), kafka=READING_KAFKA) == (
        "The cluster could not be read: t",
        503,
    )
    assert refusal(kafka_errors.KafkaUnavailable("down"), kafka="") == ("down", 503)
    assert refusal(connect_rest.ConnectRebalancing("later")) == ("The Connect worker: later", 409)
    assert refusal(connect_rest.ConnectServerError("boom"), worker="") == ("boom", 502)


def test_an_edit_refusal_speaks_for_itself():
    assert refusal(edit_errors.EditStateConflict("not a draft"), kafka="x", worker="y") == (
        "not a draft",
        409,
    )
    assert refusal(edit_errors.NothingToChange("already there")) == ("already there", 400)
