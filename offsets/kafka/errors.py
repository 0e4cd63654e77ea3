"""The failures every Kafka adapter raises, for the layers above to catch without knowing which."""


class KafkaError(Exception):
    """Base of the Kafka adapters' failures: the cluster's Kafka, not the request, is at fault.

    ``http_status`` is what a page or the API answers with (503 Service Unavailable).
    """

    http_status = 503


class KafkaUnavailable(KafkaError, RuntimeError):
    """The cluster could not be reached or did not answer in time."""


class TopicNotFound(KafkaError, LookupError):
    """A topic asked for does not exist on the cluster."""


class KafkaNotAuthorized(KafkaError, PermissionError):
    """The broker refused the dashboard's principal an operation (an ACL is missing)."""


class KafkaWriteRefused(KafkaNotAuthorized, KafkaUnavailable):
    """The broker refused a write to the dashboard's principal: that request wrote nothing.

    Also a KafkaUnavailable, so that a caller that reads a failed write back to be sure (the
    edit workflow) keeps doing so.
    """


def not_authorized(operation: str, resource: str, name: str, code: str, grant: str) -> str:
    """The message of a refusal: what was refused, on what, and which ACL to grant."""
    return (
        f"The dashboard's principal may not {operation} the {resource} {name!r} ({code}):"
        f" grant it {grant}."
    )
