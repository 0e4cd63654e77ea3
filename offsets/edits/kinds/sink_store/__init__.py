"""Offsets set in a sink's own store (store-offset): `kind`, its steps."""
