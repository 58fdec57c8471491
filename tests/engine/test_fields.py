"""The field reader (engine/fields.py): typed getters, Field types and Records, as tables.

Every reader reports a problem under the field's place and goes on with a default; a Record
reads its fields in the table's order and checks each as it is read (or, with check_after,
after all are read), and with stop ends at the first field that is missing or breaks its rule.
"""
from datetime import datetime, timezone

import pytest

from engine.fields import (Bool, Field, Int, Int32, List, Map, Parsed, Problems, Record, Str, StringMap, each,
                           either, get_bool, get_int, get_int32, get_list, get_map, get_str, one_of, parse_time,
                           string_map)


def read(record, d, place="p"):
    probs = Problems()
    return record.read(d, place, probs), probs.items


# ------------------------------------------------------------------------------ getters

@pytest.mark.parametrize("getter, d, kwargs, value, problems", [
    (get_str, {}, {}, "", []),
    (get_str, {"k": None}, {"default": None}, None, []),
    (get_str, {"k": "x"}, {}, "x", []),
    (get_str, {"k": 5}, {"default": "d"}, "d", ["p.k: 5 is not a string"]),
    (get_int, {"k": 3}, {}, 3, []),
    (get_int, {"k": 3.0}, {}, 3, []),
    (get_int, {"k": True}, {"default": 1}, 1, ["p.k: True is not an integer"]),
    (get_int, {"k": 1.5}, {}, None, ["p.k: 1.5 is not an integer"]),
    (get_int, {"k": "3"}, {}, None, ['p.k: "3" is not an integer']),
    (get_int, {"k": -1}, {"default": 0, "minimum": 0}, 0, ["p.k: -1 is less than 0"]),
    (get_int, {"k": 101}, {"maximum": 100}, None, ["p.k: 101 is greater than 100"]),
    (get_int32, {"k": 2**31}, {"what": "w"}, None, ["p.k: 2147483648 is outside the int32 range "
                                                    "-2147483648..2147483647 (w)"]),
    (get_int32, {"k": -2**31}, {}, -2**31, []),
    (get_bool, {"k": "yes"}, {}, False, ['p.k: "yes" is not true or false']),
    (get_bool, {"k": True}, {}, True, []),
    (get_map, {"k": [1]}, {}, {}, ["p.k: [1] is not a mapping"]),
    (get_list, {"k": {"a": 1}}, {}, [], ["p.k: {'a': 1} is not a list"]),
    (string_map, {"k": {"a": "x", "n": 2, "f": 1.5, "b": True, 3: "y"}}, {}, {"a": "x", "n": "2", "f": "1.5"},
     ["p.k.b: True is not a string", "p.k: key 3 is not a string"]),
])
def test_getters(getter, d, kwargs, value, problems):
    probs = Problems()
    assert getter(d, "k", "p", probs, **kwargs) == value
    assert probs.items == problems


def test_a_getter_at_the_top_of_the_document_names_the_key_alone():
    probs = Problems()
    get_str({"kind": 5}, "kind", "", probs)
    assert probs.items == ["kind: 5 is not a string"]


@pytest.mark.parametrize("v, expected, problems", [
    (None, None, []),
    ("2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=timezone.utc), []),
    (datetime(2026, 1, 1), datetime(2026, 1, 1, tzinfo=timezone.utc), []),
    ("2026-01-01T00:00:00", None, ['t: "2026-01-01T00:00:00" has no time zone (RFC 3339 needs Z or an offset)']),
    ("soon", None, ['t: "soon" is not an RFC 3339 time']),
    (5, None, ["t: 5 is not an RFC 3339 time"]),
])
def test_parse_time(v, expected, problems):
    probs = Problems()
    assert parse_time(v, "t", probs) == expected
    assert probs.items == problems


# ------------------------------------------------------------------------------ each

def test_each_gives_the_mappings_with_their_places_and_reports_the_rest():
    probs = Problems()
    got = list(each({"items": [{"a": 1}, 7, {"b": 2}]}, "items", "x", probs, "a thing"))
    assert got == [("x.items[0]", {"a": 1}), ("x.items[2]", {"b": 2})]
    assert probs.items == ["x.items[1]: 7 is not a thing"]


@pytest.mark.parametrize("d, problems", [
    ({}, []), ({"items": None}, []), ({"items": []}, []), ({"items": "no"}, ['x.items: "no" is not a list']),
])
def test_each_of_no_list(d, problems):
    probs = Problems()
    assert list(each(d, "items", "x", probs, "a thing")) == []
    assert probs.items == problems


# ------------------------------------------------------------------------------ fields

@pytest.mark.parametrize("field, d, value, problems", [
    # a Go string: unset when absent, null or empty, and a wrong type gives the default too
    (Str("k", "def"), {}, "def", []),
    (Str("k", "def"), {"k": None}, "def", []),
    (Str("k", "def"), {"k": ""}, "def", []),
    (Str("k", "def"), {"k": "x"}, "x", []),
    (Str("k", "def"), {"k": 1}, "def", ["p.k: 1 is not a string"]),
    (Str("k"), {"k": ["x"]}, "", ["p.k: ['x'] is not a string"]),
    # a pointer (*string): None when absent, "" kept
    (Str("k", None), {}, None, []),
    (Str("k", None), {"k": ""}, "", []),
    (Str("k", None), {"k": 1}, None, ["p.k: 1 is not a string"]),
    # integers: the default when absent, of the wrong type or out of range; 0 is kept
    (Int("k", 30, minimum=0), {"k": 0}, 0, []),
    (Int("k", 30, minimum=0), {}, 30, []),
    (Int("k", 30, minimum=0), {"k": -5}, 30, ["p.k: -5 is less than 0"]),
    (Int("k", minimum=1, maximum=100), {"k": 100.0}, 100, []),
    (Int("k", minimum=1, maximum=100), {"k": "1"}, None, ['p.k: "1" is not an integer']),
    (Int32("k", "a k is an int32"), {"k": -2**31 - 1}, None,
     ["p.k: -2147483649 is outside the int32 range -2147483648..2147483647 (a k is an int32)"]),
    (Int32("k", "w"), {}, None, []),
    (Bool("k"), {}, False, []),
    (Bool("k"), {"k": 1}, False, ["p.k: 1 is not true or false"]),
    (List("k"), {"k": None}, [], []),
    (List("k"), {"k": (1,)}, [], ["p.k: (1,) is not a list"]),
    (Map("k"), {"k": "m"}, {}, ['p.k: "m" is not a mapping']),
    (StringMap("k"), {"k": {"a": 1}}, {"a": "1"}, []),
    (Parsed("k", lambda v, place, probs: (v, place)), {}, (None, "p.k"), []),
    (Parsed("k", lambda v, place, probs: (v, place)), {"k": 3}, (3, "p.k"), []),
    (Field("k", lambda d, key, place, probs: (d.get(key), key, place)), {"k": 3}, (3, "k", "p"), []),
])
def test_field_types(field, d, value, problems):
    assert read(Record(field), d) == ([value], problems)


# ------------------------------------------------------------------------------ rules

@pytest.mark.parametrize("field, d, problems", [
    # required: an empty value is missing
    (Str("k", required=True), {}, ["p.k: is required"]),
    (Str("k", required=True), {"k": ""}, ["p.k: is required"]),
    (Str("k", required=True), {"k": 5}, ["p.k: 5 is not a string", "p.k: is required"]),
    (Str("k", required=True), {"k": "x"}, []),
    (List("k", required=True), {"k": []}, ["p.k: is required"]),
    # required="present": the key must be there, null or not (its value may still be wrong)
    (Int("k", minimum=1, required="present"), {}, ["p.k: is required"]),
    (Int("k", minimum=1, required="present"), {"k": None}, []),
    (Int("k", minimum=1, required="present"), {"k": 0}, ["p.k: 0 is less than 1"]),
    # a rule is checked on the value after its default...
    (Str("k", "B", rule=one_of("A", "B")), {}, []),
    (Str("k", "B", rule=one_of("A", "B")), {"k": 1}, ["p.k: 1 is not a string"]),
    (Str("k", rule=one_of("A", "B")), {}, ['p.k: "" is not one of A, B']),
    (Str("k", rule=either("A", "B", "C")), {"k": "D"}, ['p.k: "D" is not A, B or C']),
    (Str("k", rule=one_of("A", says="the letter A")), {"k": "D"}, ['p.k: "D" is not the letter A']),
    # ...but not on an unset pointer
    (Str("k", None, rule=either("A", "B")), {}, []),
    (Str("k", None, rule=either("A", "B")), {"k": ""}, ['p.k: "" is not A or B']),
    # a rule of a required field is checked only when the field is there
    (Str("k", required=True, rule=lambda v: "is bad"), {}, ["p.k: is required"]),
    (Str("k", required=True, rule=lambda v: "is bad"), {"k": "x"}, ["p.k: is bad"]),
    (List("k", rule=lambda v: None if v else "must not be empty"), {}, ["p.k: must not be empty"]),
])
def test_required_and_rules(field, d, problems):
    assert read(Record(field), d)[1] == problems


# ------------------------------------------------------------------------------ records

TWO = (Str("a", required=True), Str("b", rule=either("X", "Y")))


def test_a_record_checks_each_field_as_it_reads_it():
    values, problems = read(Record(*TWO), {"a": 1, "b": 2})
    assert values == ["", ""]
    assert problems == ["p.a: 1 is not a string", "p.a: is required",
                        "p.b: 2 is not a string", 'p.b: "" is not X or Y']


def test_check_after_reads_every_field_then_checks_them_in_order():
    values, problems = read(Record(*TWO, check_after=True), {"a": 1, "b": 2})
    assert values == ["", ""]
    assert problems == ["p.a: 1 is not a string", "p.b: 2 is not a string",
                        "p.a: is required", 'p.b: "" is not X or Y']


def test_stop_ends_the_record_at_its_first_missing_or_wrong_field():
    # b is not read: its wrong type is not reported
    assert read(Record(*TWO, stop=True), {"b": 2}) == (None, ["p.a: is required"])
    # a wrong type is reported and the field takes its default: the reading goes on
    assert read(Record(Str("a", "X", rule=either("X", "Y")), Str("b"), stop=True), {"a": 1, "b": 2}) == (
        ["X", ""], ["p.a: 1 is not a string", "p.b: 2 is not a string"])
    assert read(Record(*TWO, stop=True), {"a": "x", "b": "Z"}) == (None, ['p.b: "Z" is not X or Y'])
    assert read(Record(*TWO, stop=True), {"a": "x", "b": "Y"}) == (["x", "Y"], [])


def test_stop_with_check_after_reads_every_field_and_reports_the_first_wrong_one():
    record = Record(*TWO, stop=True, check_after=True)
    assert read(record, {"a": 1, "b": "Z"}) == (None, ["p.a: 1 is not a string", "p.a: is required"])


def test_a_mapping_that_sets_none_of_the_fields_gives_their_defaults_each_time_anew():
    record = Record(Str("s", "d"), Int("i", 3), Bool("b"), StringMap("labels"), List("l"), Map("m"))
    first, problems = read(record, {"other": 1})
    assert first == ["d", 3, False, {}, [], {}] and problems == []
    second, _ = read(record, {})
    first[3]["a"] = "b"
    first[4].append(1)
    assert second == ["d", 3, False, {}, [], {}]
    assert second[3] is not first[3] and second[4] is not first[4] and second[5] is not first[5]


def test_a_mapping_that_sets_none_of_the_fields_still_breaks_their_rules():
    assert read(Record(Str("a", required=True), Int("n", minimum=1, required="present")), {}) == (
        ["", None], ["p.a: is required", "p.n: is required"])
    assert read(Record(Str("w", rule=either("X", "Y"))), {"other": 1}) == ([""], ['p.w: "" is not X or Y'])


def test_record_each_reads_every_mapping_of_a_list_as_it_is_iterated():
    record = Record(Str("name", required=True), stop=True)
    probs = Problems()
    seen = []
    for p, item, (name,) in record.each({"items": [{"name": "a"}, "x", {}, {"name": "b", "z": 1}]},
                                        "items", "s", probs, "an item"):
        probs.add(p, f"seen {name}")      # the caller's problems come between the items'
        seen.append((p, item, name))
    assert seen == [("s.items[0]", {"name": "a"}, "a"), ("s.items[3]", {"name": "b", "z": 1}, "b")]
    assert probs.items == ["s.items[0]: seen a", 's.items[1]: "x" is not an item', "s.items[2].name: is required",
                           "s.items[3]: seen b"]


def test_record_each_of_no_list():
    probs = Problems()
    assert list(Record(Str("a")).each({"items": 3}, "items", "s", probs, "an item")) == []
    assert probs.items == ["s.items: 3 is not a list"]
