"""/api/v1/edits/... (included from offsets/api/urls.py)."""

from django.urls import path

from offsets.api import edits, exports, imports, moves

urlpatterns = [
    path("", edits.edit_list, name="api-edits"),
    path("export/", exports.export, name="api-edits-export"),
    path("import/", imports.import_offsets, name="api-edits-import"),
    path("<int:pk>/", edits.edit_detail, name="api-edit"),
    path("<int:pk>/submit/", edits.edit_submit, name="api-edit-submit"),
    path("<int:pk>/approve/", edits.edit_approve, name="api-edit-approve"),
    path("<int:pk>/reject/", edits.edit_reject, name="api-edit-reject"),
    path("<int:pk>/cancel/", edits.edit_cancel, name="api-edit-cancel"),
    path("<int:pk>/route/", edits.edit_route, name="api-edit-route"),
    path("<int:pk>/apply/", edits.edit_apply, name="api-edit-apply"),
    path("<int:pk>/reconcile/", edits.edit_reconcile, name="api-edit-reconcile"),
    path("<int:pk>/resume-target/", moves.edit_resume_target, name="api-edit-resume-target"),
    path("<int:pk>/restage/", edits.edit_restage, name="api-edit-restage"),
    path("<int:pk>/stage-restore/", edits.edit_stage_restore, name="api-edit-stage-restore"),
]
