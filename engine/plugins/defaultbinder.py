"""DefaultBinder (upstream ``plugins/defaultbinder/default_binder.go``, v1.28.0)."""
from __future__ import annotations

from ..framework.interface import BindPlugin

NAME = "DefaultBinder"


class DefaultBinder(BindPlugin):
    name = NAME

    def __init__(self, handle=None):
        self.handle = handle

    def bind(self, state, pod, node_name):
        """DefaultBinder.Bind: upstream posts a Binding to the API server; here the simulator
        performs the binding itself once Bind succeeds, so this always returns Success."""
        return None


def new(args, handle) -> DefaultBinder:
    """defaultbinder.New."""
    return DefaultBinder(handle)
