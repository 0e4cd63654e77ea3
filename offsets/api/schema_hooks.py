"""drf-spectacular postprocessing: say in the schema what DRF does with empty query values."""


def empty_query_values_mean_absent(result, generator, request, public):
    """Mark optional query parameters `allowEmptyValue`.

    DRF reads a query string like a form: `?since=` on an optional field is the same as no
    `since` at all (Field.get_value returns `empty`, so the default applies). Without this,
    the schema would promise a 400 for `?type=` that the API (rightly) never gives.
    """
    for path in result.get("paths", {}).values():
        for operation in path.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
    return result
