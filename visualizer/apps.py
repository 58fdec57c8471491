from django.apps import AppConfig


class VisualizerConfig(AppConfig):
    name = "visualizer"
    verbose_name = "kube-scheduler visualizer"

    def ready(self):
        # Out-of-tree plugins come from the server's own configuration, once, at start
        # (SCHEDULER_PLUGINS and the entry points): see visualizer/plugins.py.
        from visualizer import plugins
        plugins.load_configured()
