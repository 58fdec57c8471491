from django.apps import AppConfig


class VisualizerConfig(AppConfig):
    name = "visualizer"
    verbose_name = "kube-scheduler visualizer"

    def ready(self):
        # Out-of-tree plugins from SCHEDULER_PLUGINS (idempotent with any other start-up load).
        from visualizer.changes import ensure_configured_plugins
        ensure_configured_plugins()
