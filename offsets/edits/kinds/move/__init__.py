"""A move to another cluster (KIP-980): `kind` the steps, `reads` what it reads on both
clusters, `rules` its pure rules (secrets, refusals, the PATCH body, the verification)."""
