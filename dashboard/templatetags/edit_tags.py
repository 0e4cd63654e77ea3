"""Template filters of the offset-edit pages."""

from django import template

from offsets.formats import jackson

register = template.Library()


@register.filter
def compact_json(value) -> str:
    """Show a JSON value compactly, as offsets are written (None as "none")."""
    if value is None:
        return "none"
    return jackson.dumps_text(value)
