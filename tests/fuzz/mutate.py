"""Seeded mutations of scenarios and WebSocket messages for the fuzz tests (issue 10).

Everything here is deterministic for a given ``random.Random``: a failing case is reproduced by
its seed and index (the tests print them).
"""
from __future__ import annotations

import copy
import json
import random
import re

import yaml

# Values that broke (or could break) the loader, the validator or the engine: wrong types,
# huge and tiny numbers, NaN, long strings, deep nesting.
NASTY = [
    None, True, False, 0, -1, 1, 2**63, 2**70, -(2**63), 1.5, 1e308, -1e308, float("inf"), float("nan"),
    "", " ", "x", "-", "1e999999", "1e9999999999", "1e400", "-1e400", "1e-999999999", "1e999999999",
    "16Ei", "8Ei", "9223372036854775807", "9223372036854775808", "0.1m", "1e18", ".nan", "NaN",
    "1m30s", "1e308", "99999999999h", "-5s", "1ns", "a" * 5000, "ü", "\x00", "Node", "Pod", "*",
    [], {}, [[]], [{}], {"kind": []}, {"kind": {}}, [1, 2, 3], {"a": 1}, ["x"] * 50,
    {"kind": "Pod"}, {"kind": "Node", "metadata": {"name": "n"}},
]


def deep(n: int, kind: str = "list"):
    value = []
    for _ in range(n):
        value = [value] if kind == "list" else {"a": value}
    return value


def _paths(value, prefix=()):
    yield prefix
    if len(prefix) > 30:    # not into the deep values inserted by an earlier change
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _set(root, path, new):
    if not path:
        return new
    node = root
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = new
    return root


def _delete(root, path):
    if not path:
        return root
    node = root
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]
    return root


def mutate_data(data, rng: random.Random):
    """A copy of a parsed scenario with one to three random changes."""
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        paths = list(_paths(data))
        path = rng.choice(paths)
        roll = rng.random()
        if roll < 0.6:
            new = copy.deepcopy(rng.choice(NASTY))
        elif roll < 0.7:
            new = deep(rng.choice((20, 60, 120)), rng.choice(("list", "map")))   # deeper: mutate_text
        elif roll < 0.85 and path:
            data = _delete(data, path)
            continue
        else:
            # a value from elsewhere in the document (a node where a pod is, ...)
            other = rng.choice(paths)
            new = copy.deepcopy(_get(data, other))
        data = _set(data, path, new)
    return data


def _get(root, path):
    for p in path:
        root = root[p]
    return root


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def mutate_text(text: str, rng: random.Random) -> str:
    """Text-level damage: cut, spliced bytes, bombs, deep flow collections."""
    roll = rng.random()
    if roll < 0.2:
        return text[:rng.randrange(len(text) + 1)]
    if roll < 0.4:
        i = rng.randrange(len(text) + 1)
        junk = rng.choice(["[", "]", "{", "}", ":", "- ", "&a ", "*a", "!!python/object:os.system ''", "\t",
                           "'", '"', "\n  ", "%YAML 1.1\n", "---\n", "? ", "|", ">", "1e999999"])
        return text[:i] + junk * rng.randint(1, 3) + text[i:]
    if roll < 0.55:
        return text + "\nobjects: " + "[" * rng.choice((200, 500, 5000)) + "]" * rng.choice((0, 5000)) + "\n"
    if roll < 0.7:
        return text + "\n" + alias_bomb(rng.randint(5, 10), rng.randint(5, 12)).replace("a0:", "x0:")
    if roll < 0.8:
        return "[" * 1000 + "]" * 1000
    lines = text.splitlines()
    if lines:
        rng.shuffle(lines)
    return "\n".join(lines)


def dump(data) -> str:
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, RecursionError):   # PyYAML's representer recurses: deep values as JSON
        return json.dumps(data, default=str)


WS_ACTIONS = ["step-event", "step-point", "step-cycle", "back", "jump", "run-until", "inject", "play",
              "pause", "filter"]


def ws_message(rng: random.Random) -> str:
    """A text frame a hostile (or broken) page might send."""
    roll = rng.random()
    if roll < 0.1:
        return rng.choice([" ", "null", "[]", "1", '"x"', "{", "{}", "nan", "[" * 600 + "]" * 600,
                           '{"action":' + "[" * 5000 + "]" * 5000 + "}", "\x00", "{" * 100000])
    msg = {"action": rng.choice(WS_ACTIONS + [[], {}, None, 1, ["step-event"], "x" * 300])}
    for key in rng.sample(["until", "position", "speed", "form", "verb", "manifest", "name", "cpu", "memory",
                           "pods", "kind", "node", "labels", "taints", "pod", "type"], rng.randint(0, 4)):
        msg[key] = copy.deepcopy(rng.choice(NASTY + [
            "1e308", 1e308, "-1", "1e999999999", "abc", "pod-add", "node-add", "delete", "node-update", "yaml",
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: .nan}}}]}",
            "metadata: {name: q}\nspec: {containers: [{name: c}]}",
            alias_bomb(9, 9) + "kind: Pod\n"]))
    if rng.random() < 0.1:
        msg["action"] = "inject"
        msg["form"] = "pod-add"
        msg["manifest"] = rng.choice(["kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: "
                                      "{requests: {cpu: .nan}}}]}", alias_bomb(8, 10)])
    return json.dumps(msg, default=str)


# ---------------------------------------------------------------------------------------------
# For the importers (issue 22): counts that amplify, and keys given twice.

COUNT_KEYS = {"count", "countParam", "number", "intervalMilliseconds", "duration"}
COUNTS = [0, 1, 3, -1, 1000, 200_001, 10**6, 10**8, 10**12, 2**63, 10**30, "1e12", 1e308, True, "$nope",
          "1000h", "1ms", [10**9], {"count": 10**9}]


def inflate_counts(data, rng: random.Random):
    """A copy of a document with one to three of its count fields (``count``, ``countParam``,
    ``number``, ``intervalMilliseconds``, ``duration``, a workload's ``params``) set to a huge,
    tiny or wrong value; a document without one gets ``mutate_data``'s changes."""
    data = copy.deepcopy(data)
    targets = [p for p in _paths(data) if p and (p[-1] in COUNT_KEYS or (len(p) > 1 and p[-2] == "params"))]
    if not targets:
        return mutate_data(data, rng)
    chosen = rng.sample(targets, min(len(targets), rng.randint(1, 3)))
    for path in sorted(chosen, key=len, reverse=True):     # a count inside a count first
        data = _set(data, path, copy.deepcopy(rng.choice(COUNTS)))
    return data


def duplicate_keys(text: str, rng: random.Random) -> str:
    """``text`` (block YAML) with one to three ``key: value`` lines given again right after
    themselves, in the same mapping, with the same or another value."""
    lines = text.splitlines()
    keyed = [i for i, line in enumerate(lines) if re.match(r"\s*(- )?[A-Za-z_$][\w.$-]*:", line)]
    for i in sorted(rng.sample(keyed, min(len(keyed), rng.randint(1, 3))), reverse=True):
        m = re.match(r"(\s*)(- )?([A-Za-z_$][\w.$-]*:)(.*)", lines[i])
        indent = m.group(1) + ("  " if m.group(2) else "")
        value = m.group(4) if rng.random() < 0.5 else " " + rng.choice(["0", "[]", "{}", "x", "1e12", "null", "7"])
        lines.insert(i + 1, f"{indent}{m.group(3)}{value}")
    return "\n".join(lines) + "\n"
