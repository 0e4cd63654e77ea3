"""Template filters of the offset-edit pages."""

import json

from django import template

register = template.Library()


@register.filter
def compact_json(value) -> str:
    """Show a JSON value compactly, as offsets are written (None as "none")."""
    if value is None:
        return "none"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
