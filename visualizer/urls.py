from django.urls import path

from visualizer import views

urlpatterns = [
    path("", views.library, name="library"),
    path("healthz", views.healthz, name="healthz"),
]
