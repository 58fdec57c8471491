"""WebSocket routes, wired into visualizer.asgi: a presenter's socket and a follower's."""
from django.urls import path

from visualizer.consumers import SessionConsumer

websocket_urlpatterns = [
    path("ws/s/<str:token>/", SessionConsumer.as_asgi(role="presenter")),
    path("ws/w/<str:token>/", SessionConsumer.as_asgi(role="follower")),
]
