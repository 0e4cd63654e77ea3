"""Cache what the pages compute from refresh results, once per refresh run.

Connector snapshots, partitions, commit buckets, lag samples, rewinds, key drift and the
Parquet history change only when a refresh run finishes (refresh._save replaces them in one
transaction, then the run is marked finished). So a page's tables and charts are cached
under the cluster, the id of the cluster's latest finished run (its "generation") and every
request parameter that shapes them; the next finished run changes the key and the next
request computes anew. Old keys are never read again and age out of the cache.

Cached here, as HTML where it can be (a cached page then skips the template work too):
table rows as `formatting.AgedHtml`, whose ages ("3m 05s ago") are written against the time
of each request; a connector page's charts, rewinds and configuration as rendered partials;
the overview's connector counts. Not cached: anything that changes without a refresh (a
running refresh's progress, live Connect state, edits, the user's permissions and name, the
CSRF token).
"""

import hashlib
import json
from collections.abc import Callable

from django.core.cache import cache
from django.core.paginator import Page, Paginator

from offsets.models import Cluster, RefreshRun
from offsets.queries.snapshots import RefreshState

# An hour bounds how long entries of superseded runs hold memory before they are culled;
# entries of the current run are recomputed at most once an hour, which costs one request.
TIMEOUT_SECONDS = 60 * 60


def generation(cluster: Cluster, refresh: RefreshState | None = None) -> int:
    """Return the id of the cluster's latest started run if it finished, else of the latest
    finished one (0 before any): the run whose results are on show.

    `refresh`, when the page has read it already, saves the query in the usual case (no run
    in progress). Read this before the data it keys: a run finishing in between then leaves
    its data under the old generation, which no request reads again, never old data under
    the new one. A failed run counts too: it costs a recomputation, and a --full run that
    failed after saving its results would otherwise go unseen.
    """
    last = refresh.last_run if refresh is not None else None
    if last is not None and last.finished_at is not None:
        return last.pk
    finished = RefreshRun.objects.filter(cluster=cluster, finished_at__isnull=False)
    # The order of snapshots.refresh_state, so both ways name the same run.
    return finished.order_by("-started_at", "-pk").values_list("pk", flat=True).first() or 0


def key(cluster: Cluster, run: int, kind: str, params: dict[str, object]) -> str:
    """Return the cache key of `kind` computed for `params` from run `run` of `cluster`."""
    # Hashed: search text is user input, and cache backends limit keys' length and characters.
    digest = hashlib.sha256(
        json.dumps(params, sort_keys=True, default=str).encode("utf-8")
    ).hexdigest()
    return f"pages:{cluster.pk}:{run}:{kind}:{digest}"


def get_or_compute[T](
    cluster: Cluster, run: int, kind: str, params: dict[str, object], compute: Callable[[], T]
) -> T:
    """Return the cached value for these parameters, computing and storing it on a miss."""
    return cache.get_or_set(key(cluster, run, kind, params), compute, TIMEOUT_SECONDS)


def get_many_or_compute[T](
    generations: dict[Cluster, int], kind: str, compute: Callable[[list[Cluster]], dict[int, T]]
) -> dict[int, T]:
    """`get_or_compute` for several clusters at once, by cluster id: the values not cached
    are computed together, by one call of `compute(clusters)`, not one per cluster."""
    keys = {key(cluster, run, kind, {}): cluster for cluster, run in generations.items()}
    found = cache.get_many(list(keys))
    values = {keys[name].pk: value for name, value in found.items()}
    missing = [cluster for name, cluster in keys.items() if name not in found]
    if missing:
        computed = compute(missing)
        cache.set_many(
            {
                key(cluster, generations[cluster], kind, {}): computed[cluster.pk]
                for cluster in missing
            },
            TIMEOUT_SECONDS,
        )
        values.update(computed)
    return values


def page_of(rows: list, count: int, number: int, per_page: int) -> Page:
    """Rebuild a paginator's page from its cached rows, row count and number.

    A Page holds its paginator, which holds the query: pickling it would evaluate every row.
    A range stands in for the rows, so the pager still knows how many pages there are.
    """
    page = Paginator(range(count), per_page).get_page(number)
    page.object_list = rows
    return page
