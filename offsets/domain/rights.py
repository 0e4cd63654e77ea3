"""What a set of grants allows: pure rules, no database.

A grant gives a role on one cluster (or every cluster, `cluster_id` None) and on the connectors
whose names match a glob. An action asked about a connector needs a grant whose glob matches
it; an action asked about the cluster as a whole (a refresh, orphans, imports) needs a grant
whose glob is "*"; an action asked about "somewhere in the cluster" (whether to show a
cluster, or a button leading to a form) needs any grant on it.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Action(StrEnum):
    VIEW = "view"
    STAGE = "stage"  # stage edits, import, submit and cancel one's own
    APPROVE = "approve"  # approve, reject, apply, reconcile
    CONTROL = "control"  # stop, resume, restart connectors
    REFRESH = "refresh"
    # See the contents of the records a sink reads next: more sensitive than offsets, so only
    # the record viewer role (and admin) has it; no other role implies it.
    READ_RECORDS = "read_records"


ROLE_ACTIONS: dict[str, frozenset[Action]] = {
    "viewer": frozenset({Action.VIEW}),
    "editor": frozenset({Action.VIEW, Action.STAGE, Action.CONTROL}),
    "approver": frozenset({Action.VIEW, Action.STAGE, Action.APPROVE, Action.CONTROL}),
    "refresh": frozenset({Action.VIEW, Action.REFRESH}),
    "records": frozenset({Action.VIEW, Action.READ_RECORDS}),
    "admin": frozenset(Action),
}

EVERY_CONNECTOR = "*"
# "The whole cluster" as the `connector` argument: only a grant on every connector covers it.
WHOLE_CLUSTER = object()


@dataclass(frozen=True)
class GrantRule:
    role: str
    cluster_id: int | None  # None: every cluster
    connectors: str = EVERY_CONNECTOR


def allows(
    grants: Iterable[GrantRule], action: Action, cluster_id: int, connector: object = None
) -> bool:
    """Whether `grants` allow `action` on the cluster: on the connector named `connector`, on
    the whole cluster (WHOLE_CLUSTER), or somewhere in it (None)."""
    for grant in grants:
        if action not in ROLE_ACTIONS.get(grant.role, ()):
            continue
        if grant.cluster_id is not None and grant.cluster_id != cluster_id:
            continue
        if connector is None:
            return True
        if grant.connectors == EVERY_CONNECTOR:
            return True
        if connector is WHOLE_CLUSTER:
            continue
        if re.fullmatch(glob_regex(grant.connectors), str(connector)):
            return True
    return False


def glob_regex(glob: str) -> str:
    """A connector glob as a regular expression that Python, SQLite (through Django) and
    PostgreSQL read alike: `*` any run of characters, `?` one, everything else itself, case
    included. One translation serves the rules here and the lists' database filters."""
    parts = (".*" if char == "*" else "." if char == "?" else re.escape(char) for char in glob)
    # (?s): "." matches a line break too (a name may hold one); \A and \Z: the whole name, a
    # trailing line break included (Python's "$" would stop before it).
    return "(?s)\\A" + "".join(parts) + "\\Z"


def viewing_globs(grants: Iterable[GrantRule], cluster_id: int) -> list[str]:
    """The globs of the connectors the grants show on the cluster."""
    return [
        grant.connectors
        for grant in grants
        if Action.VIEW in ROLE_ACTIONS.get(grant.role, ())
        and grant.cluster_id in (None, cluster_id)
    ]


def visible_cluster_ids(grants: Iterable[GrantRule]) -> set[int] | None:
    """The clusters the grants show (None: every cluster)."""
    ids = set()
    for grant in grants:
        if grant.cluster_id is None:
            return None
        ids.add(grant.cluster_id)
    return ids


def sees_every_connector(grants: Iterable[GrantRule], cluster_id: int) -> bool:
    """Whether the grants show every connector of the cluster (no glob to filter by)."""
    return allows(grants, Action.VIEW, cluster_id, WHOLE_CLUSTER)


REFRESH_ROLE = "Starting a refresh needs the refresh operator role on the whole cluster."
