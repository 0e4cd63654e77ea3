"""One gate, proven over the whole API: every operation of the served OpenAPI schema, with each
cluster, connector or edit it names (in its path, its query or its body) set to a name outside
the user's grants and to an unknown name, answers 404 (or 400/403 with the same text for
both), for a viewer, an editor and an approver granted `team-*` of one cluster; nothing is
written.

The operations and their fields come from the schema the API serves, not from a list: a new
operation is walked without anyone adding it, and a new field whose name says it holds a
cluster or connector fails the walk until `NAME_FIELDS` says which. The clusters listen
nowhere (port 1): a service that reads before asking the gate answers 503 instead of 404.
"""

import json
import re
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import Group

from offsets.edits import imports
from offsets.models import AuditEvent, Grant, OffsetEdit, Role
from tests.support import factories
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db

GRANTED, OTHER, UNGRANTED = "team-src", "orders-secret", "no-such-connector"
SHARED, SECOND, HIDDEN, NO_CLUSTER = "shared", "shared-b", "hidden", "no-such-cluster"
ENTRY = {"partition": {"filename": "a"}, "offset": {"position": 1}}

# What each field of the schema names, by its name: a cluster, a connector, an edit or a
# document of connectors. A field named like one of those and missing here fails the walk.
NAME_FIELDS = {
    "cluster_name": "cluster",
    "cluster": "cluster",
    "target": "cluster",
    "connector_name": "connector",
    "connector": "connector",
    "connectors": "connector",
    "id": "edit",
    "document": "document",
}
LOOKS_LIKE_A_NAME = re.compile(r"cluster|connector|target|document|^id$|^pk$")
# The other fields an operation needs for its request to reach the gate (the walk checks that
# it does: the approver's request with every name granted is no 404).
BODIES = {
    ("post", "/api/v1/edits/"): {"strategy": "earliest"},
    ("post", "/api/v1/edits/import/"): {"dry_run": True},
}
# Path parameters that name nothing guarded, with a value that reaches the gate.
OTHER_PATH_VALUES = {"task": "0"}


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    fields: tuple[tuple[str, str, str], ...]  # (where, name, what it names)

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.path}"


@pytest.fixture
def fleet(django_user_model, settings):
    settings.KAFKA_READ_TIMEOUT = 1
    author = django_user_model.objects.create_user("author")
    clusters = {name: factories.cluster(name) for name in (SHARED, SECOND, HIDDEN)}
    for cluster in clusters.values():
        factories.run(cluster)
        for name in (GRANTED, OTHER):
            factories.snapshot(cluster, name)
    shared, hidden = clusters[SHARED], clusters[HIDDEN]
    edits = {
        "granted": make_edit(shared, author, connector=GRANTED),
        OTHER: make_edit(shared, author, connector=OTHER),
        HIDDEN: make_edit(hidden, author, connector=GRANTED),
    }
    move = make_edit(shared, author, connector=GRANTED)
    OffsetEdit.objects.filter(pk=move.pk).update(strategy="move", target_cluster=hidden)
    edits["move to hidden"] = move
    users = {}
    for role in (Role.VIEWER, Role.EDITOR, Role.APPROVER):
        team = Group.objects.create(name=f"team-{role}")
        for cluster in (shared, clusters[SECOND]):
            Grant.objects.create(group=team, role=role, cluster=cluster, connectors="team-*")
        users[role] = django_user_model.objects.create_user(f"pat-{role}")
        users[role].groups.add(team)
    return SimpleNamespace(edits=edits, users=users)


def operations(client, admin) -> list[Operation]:
    """Every operation of the served schema with the name fields of its path, query and body."""
    client.force_login(admin)
    schema = client.get("/api/v1/schema/?format=json").json()
    components = schema["components"]["schemas"]
    found = []
    for path, methods in schema["paths"].items():
        for method, spec in methods.items():
            fields = [(p["in"], p["name"]) for p in spec.get("parameters", [])]
            for content in spec.get("requestBody", {}).get("content", {}).values():
                ref = content["schema"]["$ref"].rsplit("/", 1)[1]
                fields += [("body", name) for name in components[ref].get("properties", {})]
                break
            named = []
            for where, name in fields:
                if name in NAME_FIELDS:
                    named.append((where, name, NAME_FIELDS[name]))
                else:
                    assert not LOOKS_LIKE_A_NAME.search(name), (
                        f"{method.upper()} {path}: what does field {name!r} ({where}) name? "
                        "Say it in NAME_FIELDS, so the walk sets it outside the grants."
                    )
            found.append(Operation(method, path, tuple(named)))
    return found


def _values(what: str, fleet) -> dict[str, object]:
    """The granted value of a field, and its outside-the-grants and unknown ones."""
    edits = fleet.edits
    return {
        "cluster": {"granted": SHARED, "outside": [HIDDEN], "unknown": NO_CLUSTER},
        "connector": {"granted": GRANTED, "outside": [OTHER], "unknown": UNGRANTED},
        "edit": {
            "granted": edits["granted"].pk,
            "outside": [edits[OTHER].pk, edits[HIDDEN].pk, edits["move to hidden"].pk],
            "unknown": 99999999,
        },
        "document": {
            # With `connector` beside it, a KIP-875 document; varied, a KIP-199 one alone.
            "granted": {"offsets": [ENTRY]},
            "outside": [{OTHER: [ENTRY]}, {GRANTED: [ENTRY], OTHER: [ENTRY]}],
            "unknown": {UNGRANTED: [ENTRY]},
        },
    }[what]


def _request(client, operation: Operation, values: dict[tuple[str, str], object]):
    path, query = operation.path, {}
    body = dict(BODIES.get((operation.method, operation.path), {}))
    for name, value in OTHER_PATH_VALUES.items():
        path = path.replace("{" + name + "}", value)
    for (where, name), value in values.items():
        if where == "path":
            path = path.replace("{" + name + "}", str(value))
        elif where == "query":
            query[name] = value
        else:
            body[name] = value
    if operation.method == "get":
        return client.get(path, query)
    return client.generic(
        operation.method.upper(),
        path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""),
        json.dumps(body),
        content_type="application/json",
    )


def _written() -> tuple:
    return (
        AuditEvent.objects.count(),
        sorted(OffsetEdit.objects.values_list("pk", "state", "connector")),
    )


def _text(response, value: object) -> str:
    """The answer's text with the name it was asked about taken out."""
    text = response.content.decode(errors="replace")
    for name in (OTHER, UNGRANTED, HIDDEN, NO_CLUSTER, str(value)):
        text = text.replace(name, "<name>")
    return text


def walk(client, fleet, admin) -> list[str]:
    """Every way an operation answered a name outside the grants unlike an unknown one."""
    leaks = []
    ops = [op for op in operations(client, admin) if op.fields]
    for role, user in fleet.users.items():
        client.force_login(user)
        for operation in ops:
            granted = {(w, n): _values(what, fleet)["granted"] for w, n, what in operation.fields}
            if role == Role.APPROVER:
                baseline = _request(client, operation, granted)
                assert baseline.status_code != 404, (
                    f"{operation}: the approver's request with every name granted answers 404 "
                    f"({baseline.content[:200]!r}): give the walk a body that reaches the gate"
                )
            for where, name, what in operation.fields:
                values = _values(what, fleet)
                unknown = _answer(client, operation, granted, (where, name), values["unknown"])
                for outside in values["outside"]:
                    found = _answer(client, operation, granted, (where, name), outside)
                    leak = _compare(found, unknown, outside, values["unknown"])
                    if leak:
                        leaks.append(f"{role}: {operation} {name}={outside!r} ({where}): {leak}")
    return leaks


def _answer(client, operation, granted, field, value):
    before = _written()
    values = {**granted, field: value}
    if field == ("body", "document"):
        values.pop(("body", "connector"), None)  # a KIP-199 document names its connectors
    response = _request(client, operation, values)
    assert _written() == before, f"{operation} with {field[1]}={value!r} wrote something"
    return response


def _compare(found, unknown, outside_value, unknown_value) -> str:
    if found.status_code == 404 and unknown.status_code == 404:
        same = _text(found, outside_value) == _text(unknown, unknown_value)
        return "" if same else f"404 unlike the unknown name's: {found.content[:300]!r}"
    refused_alike = found.status_code in (400, 403) and found.status_code == unknown.status_code
    if refused_alike and _text(found, outside_value) == _text(unknown, unknown_value):
        return ""
    return (
        f"{found.status_code} {found.content[:300]!r}, where an unknown name answers "
        f"{unknown.status_code} {unknown.content[:200]!r}"
    )


def test_every_api_operation_answers_a_name_outside_the_grants_as_an_unknown_one(
    client, fleet, admin_user
):
    leaks = walk(client, fleet, admin_user)
    assert not leaks, "Names outside the grants show through:\n" + "\n".join(leaks)


def test_a_service_that_skips_the_gate_fails_the_walk_naming_its_operation(
    client, fleet, admin_user, monkeypatch
):
    # A planted bypass: the import reads the document's connectors without asking the gate.
    skip = SimpleNamespace(admit=lambda *args, **kwargs: None, admit_all=lambda *a, **k: None)
    monkeypatch.setattr(imports, "gate", skip)
    leaks = walk(client, fleet, admin_user)
    assert any("POST /api/v1/edits/import/ document=" in leak for leak in leaks), leaks
    assert all("/api/v1/edits/import/" in leak for leak in leaks), leaks
