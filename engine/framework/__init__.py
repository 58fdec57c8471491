"""The scheduling framework: extension-point interfaces, statuses, cycle state, runtime."""
from .interface import *  # noqa: F401,F403
from .interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, NodeScore,
                        PostFilterResult, PreFilterResult, QueueingHint, Status)
from .cycle_state import CycleState
from .types import Diagnosis, FitError, NodeInfo, QueuedPodInfo
