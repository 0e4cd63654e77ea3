"""Workflows that read or change a Connect cluster, shared by pages, API and commands.

One module per workflow; callers import the module (`from offsets.queries import snapshots`).
"""
