from django.urls import path

from visualizer import views

urlpatterns = [
    path("", views.library, name="library"),
    path("sessions/", views.start_session, name="start-session"),
    path("s/<str:token>/", views.session_presenter, name="session-presenter"),
    path("w/<str:token>/", views.session_follower, name="session-follower"),
    path("s/<str:token>/changes/", views.session_changes, name="session-changes"),
    path("w/<str:token>/changes/", views.session_changes, {"role": "follower"}, name="follower-changes"),
    path("s/<str:token>/compare/", views.session_compare, name="session-compare"),
    path("w/<str:token>/compare/", views.session_compare, {"role": "follower"}, name="follower-compare"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.prometheus_metrics, name="metrics"),
]
