"""Offset edits: stage, review, lock-check, apply, verify, reconcile, audit (one module each)."""
