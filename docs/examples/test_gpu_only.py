"""Testing the GPUOnly example plugin with pytest (docs/writing-plugins.md, "Test your plugin").

Run it with the project installed (``pip install -e .`` makes ``engine`` importable and
registers the ``scheduler_sim`` fixture as a pytest plugin)::

    pytest docs/examples/test_gpu_only.py
"""
import pytest

from engine.plugins.loader import PluginLoadError
from engine.testing import make_node, make_pod, run, scenario

GPU = "nvidia.com/gpu"


def cluster(*pods, **kw):
    """One CPU node (GPUs but no accelerator label) and two labelled GPU nodes."""
    return scenario(
        nodes=[make_node("cpu-1").capacity({"cpu": "8", "memory": "16Gi", GPU: "8"}),
               make_node("gpu-a").capacity({"cpu": "8", "memory": "16Gi", GPU: "2"}).label("accelerator", "a100"),
               make_node("gpu-b").capacity({"cpu": "8", "memory": "16Gi", GPU: "4"}).label("accelerator", "a100")],
        pods=pods,
        plugins={"multiPoint": [{"name": "GPUOnly", "weight": 5}]}, **kw)


def test_gpu_pod_goes_to_the_gpu_node_with_most_free_gpus(scheduler_sim):
    scheduler_sim.load("gpu_only.py")              # found next to this test file
    result = scheduler_sim.run(cluster(make_pod("train").req({"cpu": "1", GPU: "1"})))
    assert result.node_of("train") == "gpu-b"
    assert result.filter_code("train", "cpu-1", "GPUOnly") == "UnschedulableAndUnresolvable"
    assert result.filter_code("train", "gpu-a", "GPUOnly") == "Success"
    assert result.scores("train", "GPUOnly") == {"gpu-a": 2, "gpu-b": 4}   # free GPUs, before normalising


def test_pods_without_gpus_are_skipped(scheduler_sim):
    scheduler_sim.load("gpu_only.py")
    result = scheduler_sim.run(cluster(make_pod("web").req(cpu="1")))
    assert [r["code"] for r in result.plugin_results("GPUOnly", "PreFilter", "web")] == ["Skip"]
    assert result.plugin_results("GPUOnly", "Filter", "web") == []
    assert result.phase("web") == "Running"


def test_a_too_big_gpu_pod_waits_for_a_labelled_node(scheduler_sim):
    scheduler_sim.load("gpu_only.py")
    big_node = make_node("gpu-c").capacity({"cpu": "8", "memory": "16Gi", GPU: "8"}).label("accelerator", "h100")
    result = scheduler_sim.run(cluster(make_pod("big").req({"cpu": "1", GPU: "8"}),
                                       actions=[{"at": "5s", "create": big_node}]))
    first, second = result.cycles("big")
    assert first["result"] == "Unschedulable" and "GPUOnly" in first["unschedulablePlugins"]
    assert second["result"] == "Scheduled" and result.node_of("big") == "gpu-c"


def test_bad_args_are_refused_with_their_place(scheduler_sim):
    scheduler_sim.load("gpu_only.py")
    with pytest.raises(Exception) as info:
        scheduler_sim.run(cluster(make_pod("p").req(cpu="1"), plugin_config={"GPUOnly": {"colour": "blue"}}))
    assert "pluginConfig[GPUOnly].args: unknown field 'colour'" in str(info.value)


def test_plugins_unload_after_each_test():
    # The fixture of the tests above unloaded GPUOnly: without it the scenario is refused.
    with pytest.raises(Exception) as info:
        run(cluster(make_pod("p").req(cpu="1")))
    assert "'GPUOnly' is not a known plugin" in str(info.value)


def test_a_missing_plugin_file_is_reported(scheduler_sim):
    with pytest.raises(PluginLoadError) as info:
        scheduler_sim.load("no_such_plugin.py")
    assert "no such file" in str(info.value)
