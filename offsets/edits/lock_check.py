"""Run the lock check: may an approved edit be written now, and has nothing moved since staging?"""

from django.conf import settings

from offsets.edits.live import LiveReader, read_connector, source_view
from offsets.edits.outcome import sink_values, source_values
from offsets.formats import edit_rules
from offsets.formats.edit_rules import CheckResult, Observed
from offsets.kafka import groups
from offsets.models import OffsetEdit


def lock_check(*, edit: OffsetEdit) -> list[CheckResult]:
    """Run the lock check now, reading the topics and the group live.

    Checks, in order: connector stopped, (sinks) group without members, nothing moved since
    staging, and the claim this apply holds (the caller has claimed the edit).
    """
    reader = LiveReader(edit.cluster)
    context = read_connector(cluster=edit.cluster, connector=edit.connector, reader=reader)
    checks = [context.stopped_check()]
    changes = list(edit.changes.all())
    if edit.is_source:
        values = source_values(changes, source_view(context=context, reader=reader))
    else:
        group = groups.describe_group(
            reader.kafka, edit.group_id, timeout=settings.KAFKA_READ_TIMEOUT
        )
        checks.append(
            edit_rules.check_group_inactive(
                group_id=edit.group_id, state=group.state, member_count=group.member_count
            )
        )
        values = sink_values(changes, reader.committed(edit.group_id))
    observed = [Observed(label, before, current) for label, before, _, current in values]
    checks.append(edit_rules.check_nothing_moved(observed))
    checks.append(edit_rules.check_single_apply(claimed=True))
    return checks
