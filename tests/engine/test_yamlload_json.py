"""JSON read with the json module (engine.yamlload._json_data) gives exactly the data PyYAML's
safe loader builds from the same text, or steps aside (None) so the YAML loader reads it:
numbers of every shape (YAML 1.1 reads 1e3 as a string), escapes, characters PyYAML refuses,
and documents beyond the node and depth bounds."""
import json
import math
import random

import pytest

from engine import yamlload
from engine.yamlload import YAMLLoadError, _json_data, load, load_data

NUMBERS = ["0", "-0", "7", "-12", "123456789012345678901234567890", "1.5", "-0.0", "0.25", "1.", "1e3",
           "1E3", "1e+3", "1.0e3", "1.0e+3", "1.0E-3", "-2.5e-07", "1.0e400", "-1.0e400", "3.0e-400",
           "10.0", "1.23456789012345678901"]
STRINGS = ["", "a", "default/web", "é", "日本", "line\\nbreak", "tab\\tx", "quote\\\"x", "back\\\\slash",
           "\\u00e9", "\\u0041", "\\b\\f\\r", "yes", "no", "on", "off", "null", "~", "true", "1.5", "0x10",
           "010", "2026-01-01T00:00:00Z", "2026-01-01", "a: b", "- x", "#x", "&a", "*a", "{", "%x", "@x", "`x",
           "x...", "!tag", "\\/", "\\ud83d\\ude00", "\\u2028", "emoji 😀", "\\u007f", "\\u0000"]


def _gen(rng, depth=0):
    r = rng.random()
    if depth > 4 or r < 0.4:
        k = rng.random()
        if k < 0.45:
            return rng.choice(NUMBERS)
        if k < 0.9:
            return '"' + rng.choice(STRINGS) + '"'
        return rng.choice(["true", "false", "null"])
    if r < 0.7:
        items = [_gen(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
        return "[" + ", ".join(items) + "]"
    keys = rng.sample(STRINGS, rng.randrange(0, 5))
    if rng.random() < 0.1 and keys:
        keys.append(keys[0])                       # a duplicate key: the last one counts
    return "{" + ", ".join(f'"{k}": {_gen(rng, depth + 1)}' for k in keys) + "}"


def _same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _yaml(text):
    try:
        return load(text)[0]
    except YAMLLoadError:
        return YAMLLoadError


@pytest.mark.parametrize("seed", range(40))
def test_json_reads_as_pyyaml_reads_it(seed):
    rng = random.Random(seed)
    taken = 0
    for _ in range(60):
        text = _gen(rng)
        if not text.startswith(("{", "[")):
            text = "[" + text + "]"
        fast = _json_data(text, yamlload.MAX_NODES, yamlload.MAX_DEPTH)
        slow = _yaml(text)
        if fast is not None:
            taken += 1
            assert slow is not YAMLLoadError, text
            assert _same(fast, slow), text
        assert _same(load_data(text), slow) if slow is not YAMLLoadError else True
    assert taken > 10


def test_each_number_reads_as_pyyaml_reads_it():
    for n in NUMBERS:
        if n == "1.":
            continue                # not JSON (YAML reads it)
        text = f'{{"v": {n}}}'
        fast = _json_data(text, yamlload.MAX_NODES, yamlload.MAX_DEPTH)
        assert fast is not None and _same(fast, load(text)[0]), n
    # YAML 1.1 sees no number in 1e3: a string, as PyYAML reads it
    assert load_data('{"v": 1e3}') == {"v": "1e3"} and load_data('{"v": 1.0e+3}') == {"v": 1000.0}


@pytest.mark.parametrize("text", ['{"v": NaN}', '{"v": Infinity}', '["\\/"]', '["\\ud83d\\ude00"]',
                                  '["\x7f"]', '["\x85"]', '["\u2028 x"]', '["a\tb"]', '\ufeff{"a": 1}',
                                  '{"a": 1} {"b": 2}', '{"a": 1', '["!x"]', '["a..."]'])
def test_json_pyyaml_reads_otherwise_or_refuses_goes_the_yaml_way(text):
    assert _json_data(text, yamlload.MAX_NODES, yamlload.MAX_DEPTH) is None
    slow = _yaml(text)
    if slow is not YAMLLoadError:
        assert _same(load_data(text), slow)
    else:
        with pytest.raises(YAMLLoadError):
            load_data(text)


def test_the_bounds_are_the_yaml_loaders():
    deep_ok = "[" * 99 + "1" + "]" * 99          # 99 levels and a scalar: 100
    deep_no = "[" * 100 + "1" + "]" * 100
    assert _json_data(deep_ok, yamlload.MAX_NODES, yamlload.MAX_DEPTH) is not None
    assert _json_data(deep_no, yamlload.MAX_NODES, yamlload.MAX_DEPTH) is None
    assert load(deep_ok)[0] is not None
    with pytest.raises(YAMLLoadError):
        load(deep_no)
    with pytest.raises(YAMLLoadError):
        load_data(deep_no)
    # node counts: a mapping of k pairs is 2k + 1 nodes
    doc = json.dumps({f"k{i}": i for i in range(10)})            # 21 nodes
    assert _json_data(doc, 21, 100) is not None and _json_data(doc, 20, 100) is None
    assert load(doc, max_nodes=21)[0] is not None
    with pytest.raises(YAMLLoadError):
        load(doc, max_nodes=20)
    lst = json.dumps([[1, 2], [3]])                               # 6 nodes
    assert _json_data(lst, 8, 100) is not None and _json_data(lst, 5, 100) is None
    assert load_data(lst, max_nodes=6) == [[1, 2], [3]]             # near the bound: the YAML way
    with pytest.raises(YAMLLoadError):
        load(lst, max_nodes=5)
    with pytest.raises(YAMLLoadError):
        load_data(lst, max_nodes=5)


@pytest.mark.parametrize("text", ['["\x7f"]', 'kind: Scenario\nmetadata: {name: "a\x9f"}\n', '{"a": "\ufffe"}'])
def test_a_character_yaml_does_not_allow_is_a_clear_error_with_its_place(text):
    """Found while writing the JSON path: PyYAML's reader refused such a character with its
    own exception, which left Scenario.from_text as a stack trace."""
    from engine import Scenario, ScenarioError
    with pytest.raises(YAMLLoadError) as e:
        load_data(text)
    assert e.value.where.startswith("line ") and "is not allowed" in e.value.problem
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text, "x.yaml")
    assert "is not allowed" in str(e.value) and "x.yaml" in str(e.value)


@pytest.mark.parametrize("text, bounds", [
    ('{"a": ' + "[" * 101 + "1" + "]" * 101 + ', "a": 1}', {}),        # a repeated key hides a deep value
    ('{"a": [1, 2, 3, 4, 5, 6], "a": 1}', {"max_nodes": 5}),           # ... or nodes
    ('{"' + "k" * 1100 + '": 1}', {}),                                  # PyYAML refuses such keys:
    ('{"a"\n: 1}', {}),                                                 # the ":" on another line,
    ('{"a"' + " " * 1030 + ': 1}', {}),                                # or 1,024 characters away
    ('{"' + "k" * 101 + '": 1}', {}),                                   # a long key: the YAML way
    ('{"a": 1, "b": {"a": 2, "a": 3}}', {}),
])
def test_what_json_cannot_tell_goes_the_yaml_way(text, bounds):
    """Found by a review: a repeated key (json keeps one value, the YAML loader counts both
    against its bounds) and keys PyYAML refuses went the json way."""
    max_nodes = bounds.get("max_nodes", yamlload.MAX_NODES)
    assert _json_data(text, max_nodes, yamlload.MAX_DEPTH) is None
    slow = _yaml(text) if not bounds else (lambda: _yaml_bounded(text, max_nodes))()
    if slow is YAMLLoadError:
        with pytest.raises(YAMLLoadError):
            load_data(text, max_nodes=max_nodes)
    else:
        assert _same(load_data(text, max_nodes=max_nodes), slow)


def _yaml_bounded(text, max_nodes):
    try:
        return load(text, max_nodes=max_nodes)[0]
    except YAMLLoadError:
        return YAMLLoadError


def test_a_document_that_may_be_over_the_node_bound_is_not_built_by_json(monkeypatch):
    """json builds a whole document before its nodes can be counted; one whose text may hold
    more nodes than the bound goes the YAML way, which refuses it while reading."""
    built = []
    real = json.loads
    monkeypatch.setattr(yamlload.json, "loads", lambda *a, **k: built.append(1) or real(*a, **k))
    text = "[" + ",".join(["{}"] * 3000) + "]"
    with pytest.raises(YAMLLoadError) as e:
        load_data(text, max_nodes=2000)
    assert "too large" in e.value.problem and not built
    assert load_data(text, max_nodes=10_000) == [{}] * 3000 and built
