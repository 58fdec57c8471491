"""An unknown plugin name says which out-of-tree plugins are loaded and how to load one."""
import textwrap

import pytest

from engine import Engine, Scenario
from engine.errors import ConfigError
from engine.plugins import loader, registry

PLUGIN = '''
from engine.framework.interface import FilterPlugin

class EvenNodes(FilterPlugin):
    """Keeps pods off nodes whose name ends in an odd digit."""
    name = "EvenNodes"

    def filter(self, state, pod, node_info):
        return None

PLUGINS = {"EvenNodes": lambda args, handle: EvenNodes()}
'''


def _scenario(plugin_name, config=False):
    profile = {"plugins": {"filter": {"enabled": [{"name": plugin_name}]}}}
    if config:
        profile = {"pluginConfig": [{"name": plugin_name, "args": {}}]}
    return Scenario.from_dict({"kind": "Scenario", "metadata": {"name": "t"},
                               "scheduler": {"profiles": [profile]}}, "t.yaml")


def _problem(sc) -> str:
    with pytest.raises(ConfigError) as e:
        Engine(sc)
    assert len(e.value.problems) == 1
    return e.value.problems[0]


@pytest.fixture
def even_nodes(tmp_path):
    path = tmp_path / "even_nodes.py"
    path.write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    loader.load(str(path))
    yield str(path)
    loader.unload(str(path))


def test_the_in_tree_plugins_are_in_tree_and_not_listed_as_out_of_tree():
    assert registry.is_in_tree("NodeResourcesFit") and registry.is_in_tree("DefaultBinder")
    assert registry.origin("PrioritySort") == registry.IN_TREE
    assert not set(registry.out_of_tree_names()) & {"NodeResourcesFit", "PrioritySort", "DefaultBinder"}


def test_with_no_plugin_loaded_the_message_says_so_and_how_to_load_one():
    msg = _problem(_scenario("GPUOnly"))
    assert msg.startswith("scheduler.profiles[0].plugins: 'GPUOnly' is not a known plugin (")
    assert "no out-of-tree plugin is loaded" in msg
    assert "--plugins" in msg and "SCHEDULER_PLUGINS" in msg and "docs/writing-plugins.md" in msg
    assert "\n" not in msg


def test_with_a_plugin_loaded_the_message_lists_it_and_suggests_a_close_name(even_nodes):
    msg = _problem(_scenario("EvenNode"))
    assert "did you mean 'EvenNodes'?" in msg
    assert "out-of-tree plugins loaded: EvenNodes;" in msg
    assert "NodeResourcesFit" not in msg        # the in-tree plugins are not "loaded"
    msg = _problem(_scenario("Unrelated", config=True))
    assert msg.startswith("scheduler.profiles[0].pluginConfig: 'Unrelated' is not a known plugin (")
    assert "did you mean" not in msg and "EvenNodes" in msg


def test_volume_plugins_keep_their_own_reason():
    msg = _problem(_scenario("EBSLimits"))
    assert "the non-CSI attach limits, are not modelled" in msg and "SCHEDULER_PLUGINS" not in msg
