"""Pure rules of moving a connector to another Connect cluster (KIP-980).

Which config values the user must supply again, the config the target is created with, when
a target refuses the move, the KIP-875 PATCH body that carries the offsets over, and whether
the target's GET .../offsets answer holds exactly those offsets.
"""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from offsets.domain.masking import mask_secrets, mask_text

JsonMap = dict[str, object]


class MoveRuleError(ValueError):
    """The input or an answer breaks a move rule; the message says which and how to fix it."""


def secret_keys(config: Mapping[str, str | None]) -> list[str]:
    """The config keys whose values the dashboard masks: the user must supply them again.

    A value masking leaves alone (plain, empty, or a whole `${provider:...}` reference) moves
    as it is; a value masking changes, whole or in part, is a secret.
    """
    masked = mask_secrets(config)
    return sorted(key for key, value in config.items() if masked[key] != value)


def kept_references(config: Mapping[str, str | None]) -> list[str]:
    """The keys whose value holds a config-provider reference and no secret: kept as they are.

    The target's worker resolves them with its own config providers, which must know them.
    """
    secrets = set(secret_keys(config))
    return sorted(
        key for key, value in config.items() if key not in secrets and value and "${" in value
    )


def config_for_move(
    config: Mapping[str, str | None], supplied: Mapping[str, str]
) -> dict[str, str | None]:
    """Return the config to create on the target: masked secrets replaced by ``supplied``.

    Raises MoveRuleError naming every secret key left without a value, and any supplied key
    that is not a secret of this config (a typo would otherwise pass unnoticed).
    """
    secrets = secret_keys(config)
    missing = [key for key in secrets if not supplied.get(key)]
    unknown = sorted(key for key in supplied if key not in secrets)
    problems = []
    if missing:
        problems.append(
            f"Supply the value of {', '.join(missing)} again: the dashboard masks "
            "secrets and does not copy them (or externalize them as ${provider:...} "
            "references on the source first)."
        )
    if unknown:
        problems.append(f"Not a masked secret of this connector's config: {', '.join(unknown)}.")
    if problems:
        raise MoveRuleError(" ".join(problems))
    return {**mask_secrets(config), **{key: supplied[key] for key in secrets}}


@dataclass(frozen=True)
class TargetFacts:
    """What the move needs to know about the source and the target cluster."""

    source_cluster: str
    target_cluster: str
    connector: str
    connector_class: str
    has_worker_url: bool
    worker_version: str = ""
    create_stopped: bool = False
    name_exists: bool = False
    plugin_classes: frozenset[str] = frozenset()


def target_problems(facts: TargetFacts) -> list[str]:
    """Why the target cannot take the connector (empty when it can), in the order to fix them."""
    if facts.source_cluster == facts.target_cluster:
        return [f"{facts.target_cluster} is the connector's own cluster: choose another one."]
    if not facts.has_worker_url:
        return [
            f"{facts.target_cluster} has no Connect worker URL: the move creates the connector "
            f"through it (add_cluster {facts.target_cluster} --update --connect-url URL)."
        ]
    problems = []
    if not facts.create_stopped:
        problems.append(
            f"The worker of {facts.target_cluster} (version {facts.worker_version or 'unknown'}) "
            "cannot create a connector STOPPED (KIP-980, Kafka 3.7 or later): it would start "
            "before its offsets are written."
        )
    if facts.name_exists:
        problems.append(
            f"{facts.target_cluster} already has a connector named {facts.connector!r}: delete "
            "or rename it there first."
        )
    if facts.connector_class and facts.connector_class not in facts.plugin_classes:
        problems.append(
            f"The worker of {facts.target_cluster} has no plugin {facts.connector_class} "
            "(GET /connector-plugins): install it there first."
        )
    if not facts.connector_class:
        problems.append("The connector's config has no connector.class to create it with.")
    return problems


def move_warnings(
    *,
    source: str,
    target: str,
    is_source: bool,
    target_state: str | None,
    group_id: str,
    same_kafka: bool,
) -> list[str]:
    """What the diff of a move warns about, for the reviewer."""
    warnings = [
        f"The connector is created on {target} STOPPED with these offsets; it stays STOPPED "
        f"on {source}. Resume it on {target} from this page once applied, then delete it on "
        f"{source}."
    ]
    if target_state != "STOPPED":
        warnings.append(
            f"The connector's target state on {source} is {target_state or 'unknown'}: stop it "
            "before applying (the lock check refuses otherwise)."
        )
    if is_source:
        return warnings
    if same_kafka:
        warnings.append(
            f"Both clusters use the same Kafka cluster: the sink's group {group_id} is the "
            f"same group on {target}, so its offsets are already there."
        )
    else:
        warnings.append(
            f"{target} uses another Kafka cluster: the sink's offsets are copied as numbers, "
            "which name the same records only if its topics hold the same records at the same "
            "offsets (MirrorMaker 2 replicas do not: translate offsets with its checkpoints)."
        )
    return warnings


def source_entry(partition: JsonMap, offset: JsonMap | None) -> JsonMap:
    """One KIP-875 PATCH entry of a source partition (a None offset deletes it)."""
    return {"partition": partition, "offset": offset}


def sink_entry(topic: str, partition: int, offset: int | None) -> JsonMap:
    """One KIP-875 PATCH entry of a sink's topic-partition (a None offset deletes it)."""
    return {
        "partition": {"kafka_topic": topic, "kafka_partition": partition},
        "offset": None if offset is None else {"kafka_offset": offset},
    }


def offsets_map(entries: Iterable[object], what: str) -> dict[str, str]:
    """Map each entry's partition to its offset, both as sorted-key JSON (order-free).

    Raises MoveRuleError when an entry is not a {"partition": {...}, "offset": ...} object.
    """
    result = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("partition"), dict):
            raise MoveRuleError(f"{what} holds an entry without a partition map: {_quoted(entry)}")
        offset = entry.get("offset")
        if offset is not None and not isinstance(offset, dict):
            raise MoveRuleError(f"{what} holds an offset that is not a map: {_quoted(entry)}")
        key = json.dumps(entry["partition"], sort_keys=True)
        result[key] = json.dumps(offset, sort_keys=True)
    return result


def answered_entries(body: object) -> list:
    """The "offsets" list of a GET .../offsets answer; MoveRuleError when it has none."""
    if not isinstance(body, dict) or not isinstance(body.get("offsets"), list):
        raise MoveRuleError(f"GET .../offsets answered no offsets list: {_quoted(body)}")
    return body["offsets"]


def compare_offsets(expected: Iterable[JsonMap], body: object) -> str | None:
    """None when the answer holds exactly the expected offsets, else what differs.

    Entries whose expected offset is None (deleted) must be absent from the answer.
    """
    wanted = {
        key: value for key, value in offsets_map(expected, "The move").items() if value != "null"
    }
    found = offsets_map(answered_entries(body), "The target's answer")
    missing = sorted(key for key in wanted if key not in found)
    different = sorted(key for key in wanted if key in found and found[key] != wanted[key])
    extra = sorted(key for key in found if key not in wanted)
    if not (missing or different or extra):
        return None
    parts = []
    for label, keys in (("missing", missing), ("different", different), ("unexpected", extra)):
        if keys:
            shown = "; ".join(f"{key} = {found.get(key, wanted.get(key))}" for key in keys[:5])
            more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
            parts.append(f"{len(keys)} {label} ({shown}{more})")
    return "The target holds other offsets than the move wrote: " + ", ".join(parts) + "."


def _quoted(value: object) -> str:
    # The worker's answer reaches error messages and the audit log: masked like any trace.
    return mask_text(f"{value!r:.200}")
