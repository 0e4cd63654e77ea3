"""drf-spectacular postprocessing: say in the schema what the API does that DRF cannot infer."""


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


CONNECTOR_NAME = (
    "The connector's name. A name that cannot stand in a path segment (empty, `.`, `..`, one "
    "holding `/`, `\\`, control characters or lone surrogates, or starting with `~`) is "
    "written `~` followed by the unpadded base64url of its UTF-8 bytes; the `url` fields of "
    "the connector list give it ready-made."
)


def describe_connector_names(result, generator, request, public):
    """Say how a connector name that is no plain path segment is written in the path."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter.get("name") == "connector_name":
                    parameter["description"] = CONNECTOR_NAME
    return result
