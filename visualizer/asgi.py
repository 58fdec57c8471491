"""ASGI entry point: HTTP goes to Django, WebSockets to Channels' URL router."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "visualizer.settings")

# Set up Django (and its app registry) before anything imports consumers or models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from visualizer.routing import websocket_urlpatterns  # noqa: E402
from visualizer.uploads import disconnect_watch  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": disconnect_watch(django_asgi_app),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
