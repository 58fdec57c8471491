"""Hostile input to the engine is refused quickly with a clear message (issue 10): quantities
and durations with huge exponents, wrong types where a kind is expected, deep nesting, YAML
alias bombs and recursive aliases, long values echoed in errors; and schema errors name the
line and column of their YAML node."""
import io
import time
import tracemalloc
from contextlib import redirect_stderr, redirect_stdout
from decimal import Decimal

import pytest

from engine import Scenario, ScenarioError
from engine.cli import main
from engine.quantity import MAX_DURATION_SECONDS, MAX_QUANTITY, US, milli_value, parse_duration, parse_quantity, value
from engine.scheduler import Engine
from engine.trace import Trace
from engine import yamlload

NODE = "{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: CPU, memory: MEM, pods: '10'}}}"


def scenario_text(cpu='"4"', mem='"8Gi"', extra=""):
    return ("kind: Scenario\nmetadata: {name: limits}\nobjects:\n- " + NODE.replace("CPU", cpu).replace("MEM", mem)
            + "\n" + extra)


def problems(text):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text, "s.yaml")
    return e.value.problems


# ---------------------------------------------------------------------- quantities

@pytest.mark.parametrize("text, message", [
    ("1e999999", "is more than Kubernetes' largest quantity (2^63-1 = 9223372036854775807)"),
    ("1e9999999999", "is more than Kubernetes' largest quantity"),
    ("1e400", "is more than Kubernetes' largest quantity"),
    ("-1e400", "is more than Kubernetes' largest quantity"),
    ("9223372036854775808", "is more than Kubernetes' largest quantity"),
    ("10E", "is more than Kubernetes' largest quantity"),
    # strconv.ParseInt of the exponent fails: upstream's ErrSuffix
    ("1e99999999999999999999", "is not a quantity (its exponent does not fit an int64)"),
    ("1e" + "9" * 100000, "is not a quantity (its exponent does not fit an int64)"),
    ("1" * 100000, "is more than Kubernetes' largest quantity"),
    (10 ** 400, "is more than Kubernetes' largest quantity"),
    (1e300, "is more than Kubernetes' largest quantity"),
])
def test_huge_quantities_are_refused_quickly(text, message):
    started = time.perf_counter()
    with pytest.raises(ValueError) as e:
        parse_quantity(text)
    assert time.perf_counter() - started < 0.5
    assert message in str(e.value)
    assert len(str(e.value)) < 400   # the value is cut in the message


@pytest.mark.parametrize("text, expected", [
    ("9223372036854775807", Decimal(MAX_QUANTITY)),
    ("8Ei", Decimal(MAX_QUANTITY)),         # ParseQuantity caps a binary suffix at maxAllowed
    ("16Ei", Decimal(MAX_QUANTITY)),
    ("0e99999999999", Decimal(0)),          # zero whatever the exponent
    ("1e-999999999", Decimal("1e-9")),      # below 1n: rounded up to 1n as upstream does
])
def test_quantities_at_the_limits(text, expected):
    assert parse_quantity(text) == expected


def test_a_tiny_quantity_still_counts_as_one_unit():
    q = parse_quantity("1e-999999999")
    assert (milli_value(q), value(q)) == (1, 1)


def test_cpu_beyond_an_int64_of_millicores_is_refused():
    assert problems(scenario_text(cpu='"9223372036854776"')) == [
        'objects[0].status.allocatable.cpu: "9223372036854776" is more CPU than an int64 of millicores holds '
        "(at most 9223372036854775.807) (line 4, column 82)"]


def test_a_node_at_the_largest_quantities_runs():
    # BalancedAllocation divides floats: at the limits it must not overflow
    text = scenario_text(cpu='"9223372036854775.807"', mem='"8Ei"', extra=(
        "- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: "
        "{requests: {cpu: '9223372036854775', memory: '9223372036854775807'}}}]}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: '1', memory: 1Gi}}}\n"))
    engine = Engine(Scenario.from_text(text), Trace(enabled=False))
    engine.run(None)
    assert engine.state()["pods"]["default/p"]["nodeName"] == "n1"


def test_a_node_with_cpu_1e400_is_refused_not_crashed():
    assert problems(scenario_text(cpu='"1e400"'))[0].startswith(
        'objects[0].status.allocatable.cpu: "1e400" is more than Kubernetes\' largest quantity')


def test_memory_1e999999_is_refused_in_bounded_time():
    started = time.perf_counter()
    assert "is more than Kubernetes' largest quantity" in problems(scenario_text(mem='"1e999999"'))[0]
    assert time.perf_counter() - started < 1


# ---------------------------------------------------------------------- durations

@pytest.mark.parametrize("text", ["1e999999999", "1e9999999999", 1e308, "1e308", 10 ** 30, "99999999999999999999h",
                                  "2777777h", MAX_DURATION_SECONDS + 1, f"{MAX_DURATION_SECONDS}.000001"])
def test_huge_durations_are_refused_quickly(text):
    started = time.perf_counter()
    with pytest.raises(ValueError) as e:
        parse_duration(text)
    assert time.perf_counter() - started < 0.5
    assert "is longer than the longest duration the engine accepts (1000000s" in str(e.value) or \
        "is not a duration" in str(e.value)


def test_the_longest_duration_is_accepted():
    assert parse_duration(MAX_DURATION_SECONDS) == MAX_DURATION_SECONDS * US
    assert parse_duration("277h46m40s") == MAX_DURATION_SECONDS * US


def test_bind_duration_with_a_huge_exponent_is_a_clear_problem():
    assert problems(scenario_text(extra='simulation: {bindDuration: "1e999999999"}\n')) == [
        'simulation.bindDuration: "1e999999999" is longer than the longest duration the engine accepts '
        "(1000000s, about 11.6 days of virtual time) (line 5, column 28)"]


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_cli_until_with_a_huge_exponent_exits_2(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(scenario_text())
    started = time.perf_counter()
    code, _, err = cli("run", str(path), "--until", "1e999999999")
    assert time.perf_counter() - started < 2
    assert code == 2
    assert err == ('python -m engine: error: --until: "1e999999999" is longer than the longest duration the engine '
                   "accepts (1000000s, about 11.6 days of virtual time)\n")


# ---------------------------------------------------------------------- shapes

@pytest.mark.parametrize("kind", ["[]", "{}", "[Pod]", "{a: 1}"])
def test_a_kind_that_is_a_list_or_a_mapping_is_a_clear_problem(kind):
    text = ("kind: Scenario\nmetadata: {name: k}\nobjects:\n- kind: " + kind + "\n"
            "actions:\n- at: 1\n  delete: {kind: " + kind + ", name: x}\n- at: 2\n  create: {kind: " + kind + "}\n")
    got = problems(text)
    assert [p.split(":")[0] for p in got] == ["objects[0].kind", "actions[0].delete.kind", "actions[1].create.kind"]
    assert all("is not one of Node, Pod, PriorityClass, PodDisruptionBudget" in p for p in got)


@pytest.mark.parametrize("text, where", [
    ("objects: " + "[" * 500 + "]" * 500, "line 1, column 110: values are nested more than 100 levels deep"),
    ('{"objects": ' + "[" * 5000 + "]" * 5000 + "}", "line 1, column 112: values are nested more than 100 levels deep"),
    ("a: " + "{a: " * 300 + "1" + "}" * 300, "values are nested more than 100 levels deep"),
])
def test_deep_nesting_is_a_clear_problem(text, where):
    got = problems(text)
    assert len(got) == 1 and where in got[0], got


def alias_bomb(levels=9, width=9):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_in_bounded_time_and_memory():
    text = alias_bomb()   # about 500 bytes, 9^9 strings once expanded
    assert len(text) < 600
    tracemalloc.start()
    started = time.perf_counter()
    try:
        got = problems(text)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == ["line 7, column 20: the document is too large: more than 2,000,000 values once its aliases "
                   "(*name) are expanded"]
    assert elapsed < 2
    assert peak < 20 * 1024 * 1024


def test_aliases_that_stay_small_still_work():
    text = ("kind: Scenario\nmetadata: {name: a}\nobjects:\n"
            "- &node {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '1'}}}\n"
            "- {<<: *node, metadata: {name: n2}}\n")
    assert [o.name for _, o in Scenario.from_text(text).objects] == ["n1", "n2"]


@pytest.mark.parametrize("text", ["a: &a [1, *a]", "a: &a {b: *a}", "a: &a [[[*a]]]"])
def test_a_recursive_alias_is_refused(text):
    got = problems(text)
    assert len(got) == 1 and "the alias *a refers to a value that contains it (a recursive structure)" in got[0]


@pytest.mark.parametrize("text, message", [
    ("a: 1" + "0" * 5000, "line 1, column 4: cannot read this value (the number has too many digits)"),
    ("a: 2026-13-45", "line 1, column 4: cannot read this value (month must be in 1..12)"),
])
def test_values_the_constructor_cannot_build_are_clear_problems(text, message):
    assert problems(text) == [message]


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(yamlload, "MAX_BYTES", 1000)
    path = tmp_path / "big.yaml"
    path.write_text(scenario_text() + "#" * 2000)
    code, _, err = cli("validate", str(path))
    assert code == 2
    assert "the file is larger than" in err


# ---------------------------------------------------------------------- bounded error text

def test_a_long_value_is_cut_in_the_message():
    got = problems(scenario_text(cpu='"' + "x" * 100000 + '"'))
    assert len(got) == 1
    assert "… (99882 more characters) is not a quantity" in got[0]
    assert len(got[0]) < 400


def test_a_large_container_is_summarised_in_the_message():
    got = problems("kind: Scenario\nmetadata: {name: x}\nsimulation: [" + ", ".join(["1"] * 100000) + "]\n")
    assert got == ["simulation: [1, 1, 1, 1, 1, 1, ...] is not a mapping (line 3, column 13)"]


def test_the_number_of_problems_listed_is_bounded():
    objects = "".join(f"- {{kind: Bad{i}}}\n" for i in range(500))
    got = problems("kind: Scenario\nmetadata: {name: x}\nobjects:\n" + objects)
    assert len(got) == ScenarioError.MAX_PROBLEMS + 1
    assert got[-1] == "… and 400 more problems"


# ---------------------------------------------------------------------- line and column

def test_schema_errors_carry_the_line_and_column_of_their_node():
    text = """kind: Scenario
metadata:
  name: Bad_Name
simulation:
  wallClock: 1
objects:
  - apiVersion: v1
    kind: Node
    metadata:
      name: n1
      labels: {kubernetes.io/hostname: n1}
    status:
      allocatable: {cpu: "12x", example.com/gpu: "zz"}
"""
    assert problems(text) == [
        'metadata.name: "Bad_Name" must match [a-z0-9]([-a-z0-9]*[a-z0-9])? (line 3, column 9)',
        "simulation.wallClock: is not a simulation field (one of bindDuration, featureGates, "
        "podMaxInUnschedulablePodsDuration, schedulingCycleDuration, seed, startTime) (line 5, column 3)",
        'objects[0].status.allocatable.cpu: "12x" is not a quantity (line 13, column 26)',
        'objects[0].status.allocatable.example.com/gpu: "zz" is not a quantity (line 13, column 50)',
    ]


def test_a_problem_about_a_missing_field_points_at_its_parent():
    text = "kind: Scenario\nmetadata:\n  title: t\n"
    assert problems(text) == ["metadata.name: is required (line 3, column 3)"]


def test_mark_for_prefers_the_longest_dotted_key():
    data, root = yamlload.load("a:\n  b.c: 1\n  b: {c: 2}\n")
    assert yamlload.where(yamlload.mark_for(root, "a.b.c")) == "line 2, column 8"
    assert yamlload.where(yamlload.mark_for(root, "a.b")) == "line 3, column 6"
    assert yamlload.mark_for(root, "zzz") is None


TRICKY = [
    "a: yes\nb: No\nc: ~\nd: 0o17\ne: 017\nf: 1_000\ng: .inf\nh: -.NaN\ni: 2026-01-02\nj: 2026-01-02T03:04:05Z\n",
    "a: &x {p: 1, q: [1, 2]}\nb: *x\nc: {<<: *x, q: 3}\nd: !!str 12\ne: !!binary aGVsbG8=\nf: '1e3'\ng: 1e3\n",
    "- [a, b, {c: d}]\n- 'multi\n  line'\n- |\n  block\n  text\n- >\n  folded\n  text\n- \"\\u00e9\\t\"\n",
    '{"kind": "Scenario", "metadata": {"name": "j"}, "objects": [{"a": 1.5, "b": null, "c": [true, false]}]}',
    "sets: !!set {a, b}\nomap: !!omap [a: 1, b: 2]\npairs: !!pairs [a: 1, a: 2]\n",
]


def _corpus():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    for p in sorted(list((root / "fixtures").glob("*.yaml")) + list((root / "docs/examples").glob("*.yaml"))):
        yield p.name, p.read_text(encoding="utf-8")
    for i, t in enumerate(TRICKY):
        yield f"tricky-{i}", t


@pytest.mark.parametrize("name,text", list(_corpus()), ids=lambda v: v if len(v) < 40 else "")
def test_the_libyaml_path_reads_exactly_what_the_bounded_loader_reads(name, text, monkeypatch):
    want = yamlload.load(text)[0]
    calls = []
    real = yamlload.load
    monkeypatch.setattr(yamlload, "load", lambda *a, **k: calls.append(a) or real(*a, **k))
    got = yamlload.load_data(text)
    assert repr(got) == repr(want) and got == want or (got != got and repr(got) == repr(want))
    if yamlload._CLOADER is not None and "broken" not in name and not yamlload._LIBYAML_DIFFERS.search(text):
        assert calls == []          # read by libyaml, not by the fallback


def test_what_is_out_of_bounds_or_invalid_goes_through_the_bounded_loader(monkeypatch):
    if yamlload._CLOADER is None:
        pytest.skip("PyYAML without libyaml")
    real = yamlload.load
    for text, bounds in [(alias_bomb(), {}), ("a: &a [1, *a]", {}), ("a: [[[[1]]]]", {"max_depth": 3}),
                         ("a: [1, 2, 3]", {"max_nodes": 3}), ("a: b: c", {}), ("a: 2026-13-45", {})]:
        calls = []
        monkeypatch.setattr(yamlload, "load", lambda *a, **k: calls.append(a) or real(*a, **k))
        with pytest.raises(yamlload.YAMLLoadError) as e:
            yamlload.load_data(text, **bounds)
        assert calls, text
        with pytest.raises(yamlload.YAMLLoadError) as again:
            real(text, **bounds)
        assert str(e.value) == str(again.value)
    assert yamlload.load_data("a: [1, 2]", max_nodes=5) == {"a": [1, 2]}   # 5 nodes: the mapping, a, the list, 1, 2


def test_a_schema_problem_still_names_its_line_and_column():
    text = "kind: Scenario\nmetadata: {name: x}\nobjects:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\nbogus: 1\n"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text)
    assert any("bogus" in p and "(line 7, column 1)" in p for p in e.value.problems), e.value.problems


@pytest.mark.parametrize("text", ["a:\t1\n", "a: !\n", "- \ufeffb-\n", "[\n-:-   ? \x85-]", "[a? - ...\n>\n]",
                                  "objects: " + "[" * 100 + "1" + "]" * 100])
def test_texts_libyaml_reads_differently_are_read_as_before(text):
    """Where libyaml and PyYAML's parser disagree (found by fuzzing both), the bounded
    loader decides: the same data or the same refusal as before libyaml was used."""
    try:
        want = repr(yamlload.load(text)[0])
    except yamlload.YAMLLoadError as e:
        with pytest.raises(yamlload.YAMLLoadError) as got:
            yamlload.load_data(text)
        assert str(got.value) == str(e)
    else:
        assert repr(yamlload.load_data(text)) == want


def test_a_text_libyaml_accepts_and_the_bounded_loader_refuses_is_a_problem_not_a_crash():
    text = "kind: Scenario\nmetadata: {name: x}\nobjects: []\nbogus:\t1\n"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_text(text)
    assert "line 4" in str(e.value)
