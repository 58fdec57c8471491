from django.apps import AppConfig


class VisualizerConfig(AppConfig):
    name = "visualizer"
    verbose_name = "kube-scheduler visualizer"

    def ready(self):
        # Out-of-tree plugins come from the server's own configuration, once, at start
        # (SCHEDULER_PLUGINS and the entry points): see visualizer/plugins.py.
        from django.utils.autoreload import autoreload_started

        from visualizer import plugins
        plugins.load_configured()
        autoreload_started.connect(plugins.watch_failed_files, dispatch_uid="visualizer-plugin-files")
