from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render

from visualizer.scenarios import list_scenarios


def library(request):
    """The scenario library: one entry per scenario file in SCENARIO_FIXTURES_DIR."""
    scenarios = list_scenarios(settings.SCENARIO_FIXTURES_DIR)
    return render(request, "visualizer/library.html", {"scenarios": scenarios})


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")
