"""The rules the kinds of offset edit share, as pure functions: diffs, sink targets,
lock-check decisions, settling a read-back.

Nothing here touches Kafka or the database; the kinds (`offsets.edits.kinds`) read the live
topics, call these, and act on the answers. A rule only one kind uses lives in its package's
`rules.py`. One module per part of an edit: `inputs` (what people type),
`checks` (the lock checks at apply time), `source` and `sink` (what an edit changes) and
`settle` (reading an interrupted edit back).
"""

from offsets.domain.edits.checks import (
    CHECK_LABELS,
    CONNECTOR_STOPPED,
    GROUP_INACTIVE,
    NOTHING_MOVED,
    SINGLE_APPLY,
    CheckResult,
    Observed,
    check_connector_stopped,
    check_group_inactive,
    check_nothing_moved,
    check_single_apply,
    check_stopped,
)
from offsets.domain.edits.inputs import MAX_DURATION, EditRuleError, parse_duration
from offsets.domain.edits.settle import (
    Settled,
    keep_as_json,
    keep_from_json,
    restore_details,
    restore_text,
    settle,
    settle_sink_group,
)
from offsets.domain.edits.sink import (
    SINK_STRATEGIES,
    PartitionLog,
    SinkChange,
    SinkTarget,
    check_offset_for_time,
    clamp,
    sink_target,
)
from offsets.domain.edits.source import (
    SourceChange,
    SourceDiff,
    offsets_as_of,
    restore_diff,
    runtime_view,
    source_diff,
)

__all__ = [
    "CHECK_LABELS",
    "CONNECTOR_STOPPED",
    "GROUP_INACTIVE",
    "MAX_DURATION",
    "NOTHING_MOVED",
    "SINGLE_APPLY",
    "SINK_STRATEGIES",
    "CheckResult",
    "EditRuleError",
    "Observed",
    "PartitionLog",
    "Settled",
    "SinkChange",
    "SinkTarget",
    "SourceChange",
    "SourceDiff",
    "check_connector_stopped",
    "check_group_inactive",
    "check_nothing_moved",
    "check_offset_for_time",
    "check_single_apply",
    "check_stopped",
    "clamp",
    "keep_as_json",
    "keep_from_json",
    "offsets_as_of",
    "parse_duration",
    "restore_details",
    "restore_diff",
    "restore_text",
    "runtime_view",
    "settle",
    "settle_sink_group",
    "sink_target",
    "source_diff",
]
