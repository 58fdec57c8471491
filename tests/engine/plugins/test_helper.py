"""Shared plugin helpers.  TestDefaultNormalizeScore mirrors upstream
helper/normalize_score_test.go; TestBrokenLinearFunction mirrors
noderesources/requested_to_capacity_ratio_test.go TestBrokenLinearFunction."""
import pytest

from engine.errors import ConfigError
from engine.framework import NodeScore
from engine.plugins import helper


@pytest.mark.parametrize("reverse,scores,expected", [
    (False, [1, 2, 3, 4], [25, 50, 75, 100]),
    (True, [1, 2, 3, 4], [75, 50, 25, 0]),
    (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
    (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
    (False, [1, 1, 1, 1], [100, 100, 100, 100]),
    (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
    (True, [0, 1, 1, 1], [100, 0, 0, 0]),
    (False, [0, 0, 0, 0], [0, 0, 0, 0]),
    (True, [0, 0, 0, 0], [100, 100, 100, 100]),
])
def test_default_normalize_score(reverse, scores, expected):
    lst = [NodeScore(f"n{i}", s) for i, s in enumerate(scores)]
    assert helper.default_normalize_score(100, reverse, lst) is None
    assert [s.score for s in lst] == expected


@pytest.mark.parametrize("points,assertions", [
    ([(10, 1), (90, 9)],
     [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9),
      (100, 9), (110, 9)]),
    ([(0, 2), (40, 10), (100, 0)],
     [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    ([(0, 2), (40, 2), (100, 2)],
     [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
])
def test_broken_linear_function(points, assertions):
    f = helper.build_broken_linear_function(points)
    for p, want in assertions:
        assert f(p) == want, (points, p)


def test_broken_linear_function_truncates_toward_zero():
    # A decreasing segment: Go's integer division truncates, so 100 + (-100*1)/3 = 100 - 33.
    f = helper.build_broken_linear_function([(0, 100), (3, 0)])
    assert f(1) == 67
    assert f(2) == 34


def test_go_arithmetic():
    assert helper.go_div(7, 2) == 3
    assert helper.go_div(-7, 2) == -3
    assert helper.go_div(7, -2) == -3
    assert helper.go_round(2.5) == 3 and helper.go_round(3.5) == 4 and helper.go_round(-2.5) == -3
    assert helper.go_list(["a", "b"]) == "[a b]" and helper.go_list([]) == "[]"


@pytest.mark.parametrize("name,extended,scalar", [
    ("cpu", False, False),
    ("memory", False, False),
    ("pods", False, False),
    ("example.com/aaa", True, True),
    ("kubernetes.io/something", False, True),          # prefixed native
    ("subdomain.kubernetes.io/something", False, True),
    ("hugepages-2Mi", False, True),
    ("attachable-volumes-aws-ebs", False, True),
    ("requests.example.com/foo", False, False),
])
def test_resource_names(name, extended, scalar):
    assert helper.is_extended_resource_name(name) is extended
    assert helper.is_scalar_resource_name(name) is scalar


def test_args_checker_reports_unknown_fields():
    ck = helper.ArgsChecker("Foo", {"bar": 1}, ("baz",))
    with pytest.raises(ConfigError) as e:
        ck.raise_if_any()
    assert e.value.problems == ["pluginConfig[Foo].args: unknown field 'bar' (known: baz)"]
