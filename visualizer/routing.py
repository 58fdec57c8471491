"""WebSocket routes, wired into visualizer.asgi: a presenter's socket and a follower's, as
HTML frames for the page and as the JSON stream (visualizer.stream, docs/state-and-trace.md)."""
from django.urls import path

from visualizer.consumers import JsonStreamConsumer, SessionConsumer

websocket_urlpatterns = [
    path("ws/s/<str:token>/", SessionConsumer.as_asgi(role="presenter")),
    path("ws/w/<str:token>/", SessionConsumer.as_asgi(role="follower")),
    path("ws/json/s/<str:token>/", JsonStreamConsumer.as_asgi(role="presenter")),
    path("ws/json/w/<str:token>/", JsonStreamConsumer.as_asgi(role="follower")),
]
