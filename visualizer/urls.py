from django.urls import path

from visualizer import views

urlpatterns = [
    path("", views.library, name="library"),
    path("sessions/", views.start_session, name="start-session"),
    path("s/<str:token>/", views.session_presenter, name="session-presenter"),
    path("w/<str:token>/", views.session_follower, name="session-follower"),
    path("x/<str:token>/<str:what>", views.session_export, name="session-export"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.prometheus_metrics, name="metrics"),
]
