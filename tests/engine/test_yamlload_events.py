"""YAML built straight from libyaml's parser events (engine.yamlload._libyaml_documents) is
exactly what PyYAML's safe loader builds from the same text: every implicit scalar type YAML 1.1
resolves (ints in every base, sexagesimal, floats, .inf/.nan, bools, nulls, timestamps), quoted
and block scalars, anchors and aliases (the same object, not a copy), repeated keys, flow and
block collections, several documents; or it steps aside (None, or ``_NotHere``) so the bounded
loader reads the text and says what is wrong. Compared by pickle, which records types, values and
which objects are shared."""
import pickle
import random

import pytest
import yaml

from engine import yamlload
from engine.yamlload import _libyaml_documents, _NotHere

pytestmark = pytest.mark.skipif(yamlload._CLOADER is None, reason="PyYAML without libyaml")

PLAIN = ["0", "7", "-12", "+3", "0o17", "017", "0x1F", "0b101", "1_000", "190:20:30", "-1:30", "1.5", "-0.0",
         "1e3", "1.0e+3", "6.8523015e+5", "685_230.15", "190:20:30.15", ".inf", "-.Inf", ".NaN", "yes", "No",
         "on", "OFF", "true", "False", "y", "n", "null", "~", "Null", "2026-01-02", "2026-01-02T03:04:05Z",
         "2001-12-14 21:59:43.10 -5", "100m", "1Gi", "default/web", "a b", "é", "x-y", "=x", "<x", "..x",
         "1.2.3", "0.", ".5", "+.inf", "12e", "0x", "2026-1-2", "NULL", "tRue"]
QUOTED = ['"1"', "'yes'", '"null"', "''", '""', '"a\\tb"', "'it''s'", '"é \\u00e9"', '"2026-01-02"']
KEYS = ["a", "b", "name", "1", "2", "true", "no", "null", "~", "1.5", "'q'", '"x y"', "2026-01-02", "on"]


class _Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.anchors = []
        self.n = 0

    def scalar(self):
        r = self.rng.random()
        if r < 0.6:
            return self.rng.choice(PLAIN)
        if r < 0.85:
            return self.rng.choice(QUOTED)
        return ""                                   # a null by omission (``key:``)

    def anchor(self):
        if self.rng.random() < 0.15:
            self.n += 1
            return f"&a{self.n} ", f"a{self.n}"
        return "", None

    def flow(self, depth):
        r = self.rng.random()
        if self.anchors and r < 0.1:
            return "*" + self.rng.choice(self.anchors)
        if depth > 2 or r < 0.5:
            s = self.scalar()
            return s if s else "null"
        prefix, name = self.anchor()
        if r < 0.75:
            out = prefix + "[" + ", ".join(self.flow(depth + 1) for _ in range(self.rng.randrange(0, 4))) + "]"
        else:
            keys = [self.rng.choice(KEYS) for _ in range(self.rng.randrange(0, 4))]
            out = prefix + "{" + ", ".join(f"{k}: {self.flow(depth + 1)}" for k in keys) + "}"
        if name:
            self.anchors.append(name)
        return out

    def block(self, indent, depth):
        """Lines of a block mapping or sequence at ``indent``."""
        pad = " " * indent
        lines = []
        seq = self.rng.random() < 0.4
        for _ in range(self.rng.randrange(1, 5)):
            head = f"{pad}- " if seq else f"{pad}{self.rng.choice(KEYS)}: "
            r = self.rng.random()
            if depth < 3 and r < 0.3:
                prefix, name = self.anchor()
                lines.append(head.rstrip() + (" " + prefix.strip() if prefix else ""))
                lines += self.block(indent + 2, depth + 1)
                if name:
                    self.anchors.append(name)
            elif r < 0.4:
                lines.append(head + "|")
                lines += [f"{pad}  line {i}: {self.rng.choice(PLAIN)}" for i in range(self.rng.randrange(1, 3))]
            else:
                lines.append(head + self.flow(depth))
        return lines

    def stream(self):
        docs = []
        for _ in range(self.rng.randrange(1, 4)):
            self.anchors = []                       # anchors do not cross documents
            docs.append("\n".join(self.block(0, 0)) + "\n")
        return "---\n".join(docs)


def _reference(text):
    return list(yaml.load_all(text, Loader=yaml.SafeLoader))


@pytest.mark.parametrize("seed", range(300))
def test_the_events_build_what_the_safe_loader_builds(seed):
    text = _Gen(seed).stream()
    try:
        want = _reference(text)
    except yaml.YAMLError:
        with pytest.raises(Exception):
            got = _libyaml_documents(text, yamlload.MAX_NODES, yamlload.MAX_DEPTH)
            assert got is not None
        return
    got = _libyaml_documents(text, yamlload.MAX_NODES, yamlload.MAX_DEPTH)
    assert got is not None, text
    assert pickle.dumps(got) == pickle.dumps(want), text
    # and through the public entry points
    assert pickle.dumps(yamlload.load_documents(text)) == pickle.dumps([d for d in want if d is not None])
    if len(want) == 1:
        assert pickle.dumps(yamlload.load_data(text)) == pickle.dumps(want[0])


def test_an_alias_is_the_object_its_anchor_built():
    got = _libyaml_documents("a: &x {p: [1, 2]}\nb: *x\nc: &s 1.5\nd: *s\n", 100, 10)[0]
    assert got["a"] is got["b"] and got == {"a": {"p": [1, 2]}, "b": {"p": [1, 2]}, "c": 1.5, "d": 1.5}


@pytest.mark.parametrize("text", ["a: &x {p: 1}\nb: {<<: *x, q: 2}\n", "a: =\n", "? [1, 2]\n: x\n",
                                  "a: 2026-13-45\n", "a: 1:2:x:9\n"])
def test_what_the_safe_loader_must_decide_is_left_to_it(text, monkeypatch):
    """A merge key, ``=``, a collection as a key, a value the constructor refuses: not built
    here; load_data then gives the bounded loader's data or error."""
    try:
        _libyaml_documents(text, 100, 10)
    except _NotHere:
        pass
    else:
        assert text == "a: 1:2:x:9\n"              # a plain string after all (no resolver matches)
        assert _libyaml_documents(text, 100, 10) == [{"a": "1:2:x:9"}]
        return
    try:
        want = ("data", pickle.dumps(yamlload.load(text)[0]))
    except yamlload.YAMLLoadError as e:
        want = ("error", str(e))
    try:
        got = ("data", pickle.dumps(yamlload.load_data(text)))
    except yamlload.YAMLLoadError as e:
        got = ("error", str(e))
    assert got == want


@pytest.mark.parametrize("text,bounds", [("a: [1, 2, 3]", (3, 10)), ("a: [[[[1]]]]", (100, 3)),
                                         ("a: &a [1, *a]", (100, 10)),
                                         ("a: &a [1, 2]\nb: [*a, *a, *a]\n", (10, 10))])
def test_out_of_bounds_is_none(text, bounds):
    assert _libyaml_documents(text, *bounds) is None
