"""Settings read from the environment: the channel layer in particular."""
import os
import subprocess
import sys
from pathlib import Path

from channels.layers import InMemoryChannelLayer, get_channel_layer

ROOT = Path(__file__).resolve().parents[2]

PRINT_LAYER = """
import django
django.setup()
from channels.layers import get_channel_layer
layer = get_channel_layer()
print(type(layer).__module__ + "." + type(layer).__qualname__, layer.capacity)
"""


def channel_layer_in_fresh_process(**env_changes):
    """The class and capacity of the default channel layer in a new process with `env_changes`."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(env_changes, DJANGO_SETTINGS_MODULE="visualizer.settings")
    result = subprocess.run(
        [sys.executable, "-c", PRINT_LAYER],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60,
    )
    return result.stdout.split()


def test_channel_layer_is_in_memory_without_redis_url():
    assert channel_layer_in_fresh_process() == [
        "channels.layers.InMemoryChannelLayer", "1000",
    ]


def test_channel_layer_is_redis_with_redis_url():
    # Constructing the layer does not connect, so no Redis server is needed here.
    assert channel_layer_in_fresh_process(REDIS_URL="redis://127.0.0.1:6390/0") == [
        "channels_redis.core.RedisChannelLayer", "1000",
    ]


def test_test_process_uses_the_in_memory_layer():
    if "REDIS_URL" in os.environ:  # pragma: no cover - only when a developer exported it
        return
    assert isinstance(get_channel_layer(), InMemoryChannelLayer)
