"""NodeResourcesFit and NodeResourcesBalancedAllocation (upstream
``pkg/scheduler/framework/plugins/noderesources``, v1.28.0)."""
