"""Move a connector to another cluster (KIP-980): stage, then create it there STOPPED with its offsets."""

from offsets.edits.outcome import release
from offsets.models import OffsetEdit


def apply_claimed(edit: OffsetEdit, user) -> OffsetEdit:
    """Apply a claimed move edit (not built yet: gives the claim back)."""
    release(edit, user, [], "Moving a connector is not available yet.")
    return edit
