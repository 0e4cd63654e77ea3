"""The errors the edit workflow raises to the pages, the API and the commands."""

from offsets.domain import edits as edit_rules
from offsets.kafka.connect_rest import ConnectRestError
from offsets.kafka.errors import KafkaError, KafkaUnavailable
from offsets.rights.gate import Forbidden, Refused


class EditError(Refused):
    """Base of the errors a caller shows to people; ``field`` names the input at fault.

    Each kind says the HTTP status a page or the API answers with (``http_status``). The
    gate's refusals (offsets.rights.gate) share the base, so every caller answers both alike.
    """


class EditInputError(EditError):
    """Bad input: the pages show it by the field, the API answers 400."""

    http_status = 400


class DocumentInputError(EditInputError):
    """Bad input at a place in an imported document; ``field`` is that place's path
    (``orders-sink[0].partition``, a connector's name, or ``document`` for all of it)."""


class NothingToChange(EditInputError):
    """Every requested offset is already in place: there is no diff to stage."""


class ConnectorNotFound(EditError):
    """No such connector in the config topic nor in the offsets topic (404)."""

    http_status = 404


# The user may not do this (403): missing role, or approving their own edit. The gate's own
# refusal (offsets.rights.gate), so that a role the gate refuses and a rule of the workflow
# refuse alike.
EditForbidden = Forbidden


class EditStateConflict(EditError):
    """The edit is not in a state that allows this, or someone else acted first (409)."""

    http_status = 409


class SinkWriteIncomplete(KafkaUnavailable):
    """A partial sink delete deleted the group, then committing the other partitions failed.

    Not "in doubt": the group is known to be gone, and the other partitions with it. Reading
    the edit's own partitions back would say "applied"; ``restore`` holds what was lost.
    """

    def __init__(self, cause: str, restore: dict[tuple[str, int], int]) -> None:
        super().__init__(
            f"The group was deleted but committing the other partitions again failed: {cause}. "
            f"Commit these offsets to restore them: {edit_rules.restore_text(restore)}"
        )
        self.cause = cause
        self.restore = restore


# What a service raises for the pages and the API to answer with its `http_status`, never a 500:
# its own refusals and the gate's, Kafka out of reach, the Connect worker refusing or failing.
SERVICE_ERRORS = (Refused, KafkaError, ConnectRestError)
