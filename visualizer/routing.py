"""WebSocket routes, wired into visualizer.asgi (sessions' consumers come in a later issue)."""

websocket_urlpatterns = []
