"""Rights per cluster and connector: the rules (rules.py) and the user's grants (grants.py)."""
