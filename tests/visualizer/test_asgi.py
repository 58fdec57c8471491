"""The ASGI application: HTTP through Django, WebSockets behind the origin check."""
import pytest
from channels.testing import HttpCommunicator, WebsocketCommunicator

from visualizer.asgi import application


@pytest.mark.asyncio
async def test_http_goes_to_django():
    communicator = HttpCommunicator(
        application, "GET", "/healthz", headers=[(b"host", b"localhost")]
    )

    response = await communicator.get_response()

    assert response["status"] == 200
    assert response["body"] == b"ok"


@pytest.mark.asyncio
async def test_websocket_from_a_foreign_origin_is_refused():
    communicator = WebsocketCommunicator(
        application, "/ws/anything/", headers=[(b"origin", b"http://evil.example")]
    )

    connected, _ = await communicator.connect()

    assert not connected
    await communicator.disconnect()
