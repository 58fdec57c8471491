"""InterPodAffinity (upstream ``pkg/scheduler/framework/plugins/interpodaffinity``, v1.28.0)."""
from .filtering import (ERR_REASON_AFFINITY_RULES_NOT_MATCH,  # noqa: F401
                        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
                        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, PRE_FILTER_STATE_KEY,
                        PreFilterState)
from .plugin import NAME, InterPodAffinity, new, parse_args  # noqa: F401
from .scoring import PRE_SCORE_STATE_KEY, PreScoreState  # noqa: F401
