"""PodTopologySpread (upstream ``pkg/scheduler/framework/plugins/podtopologyspread``, v1.28.0)."""
from .common import TopologySpreadConstraint  # noqa: F401
from .filtering import (ERR_REASON_CONSTRAINTS_NOT_MATCH,  # noqa: F401
                        ERR_REASON_NODE_LABEL_NOT_MATCH, PRE_FILTER_STATE_KEY, CriticalPaths,
                        PreFilterState)
from .plugin import (LIST_DEFAULTING, NAME, SYSTEM_DEFAULT_CONSTRAINTS,  # noqa: F401
                     SYSTEM_DEFAULTING, PodTopologySpread, new, parse_args)
from .scoring import PRE_SCORE_STATE_KEY, PreScoreState  # noqa: F401
