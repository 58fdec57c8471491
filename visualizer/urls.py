from django.urls import include, path, re_path

from visualizer import views

urlpatterns = [
    path("", views.library, name="library"),
    path("sessions/", views.start_session, name="start-session"),
    path("s/<str:token>/", views.session_presenter, name="session-presenter"),
    path("w/<str:token>/", views.session_follower, name="session-follower"),
    path("j/<str:code>/", views.join_short, name="join-short"),
    path("docs/", views.docs_page, name="docs"),
    path("docs/examples/", views.docs_file, {"folder": "examples", "filename": ""}, name="docs-examples"),
    path("docs/<str:name>/", views.docs_page, name="docs-page"),
    path("docs/<str:folder>/<str:filename>", views.docs_file, name="docs-file"),
    path("x/<str:token>/<str:what>", views.session_export, name="session-export"),
    path("s/<str:token>/history/", views.pod_history_presenter, name="pod-history-presenter"),
    path("w/<str:token>/history/", views.pod_history_follower, name="pod-history-follower"),
    path("s/<str:token>/targets/", views.session_targets, name="session-targets"),
    path("w/<str:token>/targets/", views.session_targets, {"role": "follower"}, name="follower-targets"),
    path("s/<str:token>/changes/", views.session_changes, name="session-changes"),
    path("w/<str:token>/changes/", views.session_changes, {"role": "follower"}, name="follower-changes"),
    path("s/<str:token>/compare/", views.session_compare, name="session-compare"),
    path("w/<str:token>/compare/", views.session_compare, {"role": "follower"}, name="follower-compare"),
    path("s/<str:token>/report/", views.session_report, name="session-report"),
    path("w/<str:token>/report/", views.follower_report, name="follower-report"),
    path("s/<str:token>/report/history/", views.session_report_history, name="session-report-history"),
    path("w/<str:token>/report/history/", views.follower_report_history, name="follower-report-history"),
    path("s/<str:token>/cyclestate/", views.session_cyclestate, name="session-cyclestate"),
    path("w/<str:token>/cyclestate/", views.session_cyclestate, {"role": "follower"}, name="follower-cyclestate"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("metrics", views.prometheus_metrics, name="metrics"),
    path("api/", include("visualizer.api")),    # the REST API and its OpenAPI docs (docs/api.md)
]

# Last: any other URL is a 404 raised by a view, so that a remote client never gets Django's
# debug 404 page (visualizer.middleware).
urlpatterns.append(re_path(r"", views.not_found))
