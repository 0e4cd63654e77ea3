"""A removal (remove, cleanup): `kind` the steps, `steps` what it reads and does on the
cluster (the plan, the reset, the tombstones, the deletes, what is left), `rules` its pure
rules."""
