"""Stage moving a connector to another cluster (KIP-980): its config with the secrets supplied
again, and one change per partition holding the target's offset now and the source's offset.
"""

from django.db import transaction

from offsets.edits import audit, move_checks
from offsets.edits.errors import EditForbidden, EditInputError
from offsets.edits.roles import can_stage
from offsets.formats import moves
from offsets.formats.masking import mask_secrets
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange


def stage_move(
    *, cluster: Cluster, connector: str, target: Cluster, user, secrets: dict, comment: str = ""
) -> OffsetEdit:
    """Stage moving `connector` from `cluster` to `target` as a draft with its diff against it.

    Raises EditInputError (unfit target, secrets missing), EditStateConflict (the name exists
    on the target, the connector is deleted), ConnectorNotFound, and the REST adapter's
    errors when the target's worker cannot be asked.
    """
    if not can_stage(user):
        raise EditForbidden("Staging a move needs the editor role (stage_offsetedit).")
    side = move_checks.read_source_side(cluster=cluster, connector=connector)
    move_checks.refuse_unfit_target(
        move_checks.target_facts(
            source=cluster, target=target, connector=connector, config=side.config
        )
    )
    try:
        config = moves.config_for_move(side.config, secrets)
    except moves.MoveRuleError as exc:
        raise EditInputError(str(exc), field="secrets") from None
    with transaction.atomic():
        edit = _create_edit(cluster, connector, target, user, comment, side, config, secrets)
        rows = _change_rows(edit, side, target, config)
        OffsetEditChange.objects.bulk_create(rows)
        audit.record(
            edit,
            AuditEvent.Action.STAGED,
            user,
            comment,
            {
                "strategy": edit.strategy,
                "parameters": edit.parameters,
                "target": target.name,
                "config": mask_secrets(config),
                "warnings": edit.warnings,
                "changes": [audit.change_details(row) for row in rows],
            },
        )
    return edit


def _create_edit(cluster, connector, target, user, comment, side, config, secrets) -> OffsetEdit:
    context = side.context
    warnings = moves.move_warnings(
        source=cluster.name,
        target=target.name,
        is_source=context.is_source,
        target_state=context.target_state,
        group_id=context.group_id,
        same_kafka=_same_kafka(cluster, target),
    )
    return OffsetEdit.objects.create(
        cluster=cluster,
        connector=connector,
        connector_type=context.type,
        strategy=OffsetEdit.Strategy.MOVE,
        # The names of the secrets supplied, never their values (those are in the config).
        parameters={"target": target.name, "secrets_supplied": sorted(secrets)},
        comment=comment,
        created_by=user,
        primary_topic=target.offsets_topic if context.is_source else "",
        group_id="" if context.is_source else context.group_id,
        warnings=warnings,
        target_cluster=target,
        connector_config=config,
    )


def _change_rows(edit, side, target, config) -> list[OffsetEditChange]:
    """One row per partition: before = what the target holds now, after = the source's offset."""
    if side.context.is_source:
        there = move_checks.target_source_offsets(
            target=target, connector=edit.connector, config=config
        )
        rows = []
        for position, (key, record) in enumerate(sorted(side.records.items())):
            before = there.get(record.partition_identity)
            rows.append(
                OffsetEditChange(
                    edit=edit,
                    position=position,
                    partition=record.partition,
                    key_bytes=key,
                    before=None if before is None else before.offset,
                    before_bytes=None if before is None else before.value_bytes,
                    after=record.offset,
                    after_bytes=record.value_bytes,
                    is_new=before is None,
                )
            )
        return rows
    _, committed = move_checks.target_group_offsets(
        target=target, connector=edit.connector, config=config
    )
    return [
        OffsetEditChange(
            edit=edit,
            position=position,
            partition={"kafka_topic": topic, "kafka_partition": partition},
            topic=topic,
            kafka_partition=partition,
            before=None
            if (topic, partition) not in committed
            else {"kafka_offset": committed[(topic, partition)]},
            after={"kafka_offset": offset},
            is_new=(topic, partition) not in committed,
        )
        for position, ((topic, partition), offset) in enumerate(sorted(side.committed.items()))
    ]


def _same_kafka(cluster: Cluster, target: Cluster) -> bool:
    """Whether both clusters name the same bootstrap servers (in any order)."""

    def servers(value: str) -> set[str]:
        return {part.strip() for part in value.split(",") if part.strip()}

    return servers(cluster.bootstrap_servers) == servers(target.bootstrap_servers)
