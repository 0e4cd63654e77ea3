"""Every page input goes through a form: filters, sorting, search, paging, actions."""

from html import escape

from django import forms
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString

from offsets.queries.snapshots import (
    CONNECTOR_SORTS,
    CONNECTOR_TYPES,
    LAG_STATUSES,
    PARTITION_SORTS,
    SINK_PARTITION_SORTS,
    STATE_CHOICES,
)


def _sort_choices(sorts: dict[str, str]) -> list[tuple[str, str]]:
    return [(key, key) for key in sorts] + [(f"-{key}", f"-{key}") for key in sorts]


class ConnectorFilterForm(forms.Form):
    """Search, filters, sort and page of the connectors list (all optional, from the URL)."""

    q = forms.CharField(required=False, max_length=249, label="Search")
    type = forms.ChoiceField(
        required=False, choices=[("", "all types"), *((t, t) for t in CONNECTOR_TYPES)]
    )
    state = forms.ChoiceField(
        required=False, choices=[("", "all states"), *((s, s) for s in STATE_CHOICES)]
    )
    status = forms.ChoiceField(
        required=False, choices=[("", "all statuses"), *((s, s) for s in LAG_STATUSES)]
    )
    sort = forms.ChoiceField(required=False, choices=_sort_choices(CONNECTOR_SORTS))
    page = forms.IntegerField(required=False, min_value=1)

    def clean_sort(self) -> str:
        # Problems first unless asked otherwise: the first screen answers "what is wrong".
        return self.cleaned_data["sort"] or "problems"

    def clean_page(self) -> int:
        return self.cleaned_data["page"] or 1

    def selects_html(self) -> SafeString:
        """The three filter selects, the current values selected.

        Written here rather than by widgets or a template loop: ~20 options, each a few
        template nodes, cost more than the rest of the page around the table.
        """
        html = []
        for name in ("type", "state", "status"):
            field = self.fields[name]
            current = self.data.get(name, "")
            options = "".join(
                f'<option value="{escape(str(value))}"'
                f"{' selected' if value == current else ''}>{escape(str(label))}</option>"
                for value, label in field.choices
            )
            label = escape(str(field.label or name))
            html.append(f'<select name="{name}" aria-label="{label}">{options}</select>\n  ')
        return SafeString("".join(html))

    def filters(self) -> dict[str, str]:
        """The keyword arguments of `snapshots.connectors()`."""
        return {name: self.cleaned_data[name] for name in ("q", "type", "state", "status", "sort")}


class PartitionFilterForm(forms.Form):
    """Search, sort and page of a connector's partitions, and the partition to chart."""

    q = forms.CharField(required=False, max_length=500, label="Search partitions")
    sort = forms.ChoiceField(required=False)
    page = forms.IntegerField(required=False, min_value=1)
    partition = forms.RegexField(
        required=False,
        regex=r"^[0-9a-f]{40}$",
        error_messages={"invalid": "A partition's key hash: 40 hexadecimal digits."},
    )

    def __init__(self, *args: object, connector_type: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        sorts = SINK_PARTITION_SORTS if connector_type == "sink" else PARTITION_SORTS
        self.fields["sort"].choices = _sort_choices(sorts)

    def clean_sort(self) -> str:
        return self.cleaned_data["sort"] or "partition"

    def clean_page(self) -> int:
        return self.cleaned_data["page"] or 1


class RefreshForm(forms.Form):
    """Start a refresh; `next` is where a browser without htmx goes back to."""

    full = forms.BooleanField(required=False)
    next = forms.CharField(required=False, max_length=2000)

    def __init__(self, *args: object, host: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.host = host

    def clean_next(self) -> str:
        url = self.cleaned_data["next"]
        if url and url_has_allowed_host_and_scheme(url, allowed_hosts={self.host}):
            return url
        return ""
