"""Offset changes (set, add, delete, restore, the sink strategies, import): `kind` the steps,
`request` what is asked (its inputs, StageRequest) and `Preview`, `diff` a source's diff and
the draft, `sink_diff` a sink's diff, `writes` the route and the direct write."""
