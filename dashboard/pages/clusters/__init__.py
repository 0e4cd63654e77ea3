"""The clusters: the overview, each cluster's connector list and live state."""
