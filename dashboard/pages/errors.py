"""Where the pages turn a service's error into what they answer: its words and its status.

The status is the error's own (`http_status` on its class: 400 bad input, 403 the role, 404 an
unknown connector, 409 the edit's or the workers' state, 502 the worker refused or failed, 503
Kafka or every worker out of reach). A page only says what it was doing when Kafka or the
Connect worker failed; an edit's refusal speaks for itself.
"""

from offsets.kafka.connect_rest import ConnectRestError
from offsets.kafka.errors import KafkaError
from offsets.rights.gate import Refused

REACHING_KAFKA = "The cluster could not be reached"
READING_KAFKA = "The cluster could not be read"
WORKER = "The Connect worker"


def refusal(
    exc: Refused | KafkaError | ConnectRestError,
    *,
    kafka: str = REACHING_KAFKA,
    worker: str = WORKER,
) -> tuple[str, int]:
    """Return the message and the status a page answers with when a service raised `exc`.

    `kafka` and `worker` are the words put before a Kafka or a Connect worker failure ("" for
    none: the error's own words).
    """
    if isinstance(exc, KafkaError):
        context = kafka
    elif isinstance(exc, ConnectRestError):
        context = worker
    else:
        context = ""
    message = f"{context}: {exc}" if context else str(exc)
    return message, exc.http_status
