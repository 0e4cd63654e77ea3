"""Delete a connector with every offset it has, or clean up offsets that outlived it."""

from offsets.edits.outcome import release
from offsets.models import OffsetEdit


def apply_claimed(edit: OffsetEdit, user) -> OffsetEdit:
    """Apply a claimed removal edit (not built yet: gives the claim back)."""
    release(edit, user, [], "Deleting a connector is not available yet.")
    return edit
