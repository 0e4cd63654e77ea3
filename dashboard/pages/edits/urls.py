"""The offset-edit pages (included from dashboard/urls.py)."""

from django.urls import path

from dashboard.pages.edits import import_export as import_export_views
from dashboard.pages.edits import lists as list_views
from dashboard.pages.edits import views as edit_views

urlpatterns = [
    path(
        "clusters/<str:cluster_name>/connectors/<connector:connector>/edits/",
        edit_views.connector_edits,
        name="connector-edits",
    ),
    path("clusters/<str:cluster_name>/edits/", list_views.edit_list, name="edit-list"),
    path("edits/awaiting/", list_views.awaiting_approval, name="awaiting-approval"),
    path("clusters/<str:cluster_name>/edits/<int:pk>/", edit_views.edit_detail, name="edit-detail"),
    path(
        "clusters/<str:cluster_name>/edits/<int:pk>/<str:action>/",
        edit_views.edit_action,
        name="edit-action",
    ),
    path(
        "clusters/<str:cluster_name>/import/",
        import_export_views.import_offsets,
        name="edits-import",
    ),
    path(
        "clusters/<str:cluster_name>/export/",
        import_export_views.export_offsets,
        name="edits-export",
    ),
]
