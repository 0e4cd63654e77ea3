"""What the pages, the API and `/metrics` read of a cluster: the stored results, one module each.

Callers import the module (`from offsets.queries import snapshots`). Nothing here changes a
cluster: the workflows that do are `edits` and `refresh`.
"""
