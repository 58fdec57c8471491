"""The scheduling queue and the nominator (upstream ``pkg/scheduler/internal/queue``)."""
from .scheduling_queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS, PriorityQueue, is_pod_updated
from .nominator import Nominator
