"""Rows updated in place by primary key, only the fields that changed."""

from collections import defaultdict

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model


def update_by_pk(model: type[Model], changed: list[tuple[int, dict[str, object]]]) -> None:
    """UPDATE rows of `model` by primary key: `changed` is [(pk, {field name: new value})].

    One statement per set of changed fields, run for every row that changed those
    (executemany), each value prepared by its model field for the database at hand (JSON,
    datetimes). A refresh's round changes the same few fields of the rows it touches, so there
    are few such sets; Django's bulk_update would write a CASE WHEN per column, and rewriting
    whole rows would prepare every field of every row for the database, which was most of a
    save's time.
    """
    by_fields: dict[tuple[str, ...], list[tuple[int, list]]] = defaultdict(list)
    for pk, fields in changed:
        by_fields[tuple(fields)].append((pk, list(fields.values())))
    # This thread's connection itself: each attribute read through the `connection` proxy
    # looks the thread's connection up again, ~30,000 times for 2,000 changed rows.
    database = connections[DEFAULT_DB_ALIAS]
    quote = database.ops.quote_name
    for names, rows in by_fields.items():
        fields = [model._meta.get_field(name) for name in names]
        assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
        statement = (
            f"UPDATE {quote(model._meta.db_table)} SET {assignments} "
            f"WHERE {quote(model._meta.pk.column)} = %s"
        )
        with database.cursor() as cursor:
            cursor.executemany(
                statement,
                [
                    [
                        field.get_db_prep_save(value, database)
                        for field, value in zip(fields, values, strict=True)
                    ]
                    + [pk]
                    for pk, values in rows
                ],
            )
