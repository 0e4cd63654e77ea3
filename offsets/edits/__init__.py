"""Offset edits: the flow every edit shares (stage, review, apply, reconcile, audit), one
module each, and one package per kind of edit in `kinds/`."""
