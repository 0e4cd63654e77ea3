"""The pages, one package per area; what every page shares beside them (forms, formatting, errors, the cache)."""
