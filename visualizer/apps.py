from django.apps import AppConfig


class VisualizerConfig(AppConfig):
    name = "visualizer"
    verbose_name = "kube-scheduler visualizer"

    def ready(self):
        # Out-of-tree plugins come from the server's own configuration, once, at start
        # (SCHEDULER_PLUGINS and the entry points): see visualizer/plugins.py. Loaded plugin
        # files are kept off the autoreloader (an edit is a visible reload, visualizer/changes.py);
        # a file that failed to load restarts the development server when it is saved.
        from django.utils.autoreload import autoreload_started

        from visualizer import plugins
        from visualizer.changes import ensure_configured_plugins
        ensure_configured_plugins()
        autoreload_started.connect(plugins.watch_failed_files, dispatch_uid="visualizer-plugin-files")
