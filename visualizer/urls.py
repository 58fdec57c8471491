from django.urls import path

from visualizer import views

urlpatterns = [
    path("", views.library, name="library"),
    path("sessions/", views.start_session, name="start-session"),
    path("s/<str:token>/", views.session_presenter, name="session-presenter"),
    path("w/<str:token>/", views.session_follower, name="session-follower"),
    path("s/<str:token>/history/", views.pod_history_presenter, name="pod-history-presenter"),
    path("w/<str:token>/history/", views.pod_history_follower, name="pod-history-follower"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.prometheus_metrics, name="metrics"),
]
