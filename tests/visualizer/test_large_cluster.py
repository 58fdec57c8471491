"""The page's panels for large clusters: queue pages, the node overview with its search, label
filter and selected node, the Filter matrix by page and outcome, and a page's own view over
its socket (a follower may set it; it changes only that page)."""
import json
import re

import pytest

from visualizer import presenters, runner
from visualizer.panels.nodes import NODE_CARD_MAX

pytestmark = pytest.mark.django_db

NODES = 70   # above NODE_CARD_LIMIT (12): the overview


def scenario_text(nodes=NODES, pods=25) -> str:
    objects = []
    for i in range(nodes):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": f"n{i:02d}", "labels": {"zone": f"z{i % 3}", **({"disk": "ssd"} if i % 5 == 0 else {})}},
                "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}}}
        if i % 10 == 9:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        objects.append(node)
    objects += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:02d}"},
                 "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
                for i in range(pods)]
    return json.dumps({"kind": "Scenario", "metadata": {"name": "large"}, "objects": objects})


def context(session, view=None):
    with runner.open_live(session.pk) as live:
        return presenters.context(live, view=view)


def cells(ctx) -> dict:
    return {name: cls.split() for name, cls in re.findall(r'<i data-n="([^"]+)" class="([^"]+)"', str(ctx["nodes"]["cells"]))}


def test_a_view_is_normalised_to_known_fields_in_range():
    assert presenters.normalize_view(None) == {}
    assert presenters.normalize_view({"page-activeQ": "-3", "page-backoffQ": "x", "outcome": "weird",
                                      "colour": "gpu", "other": "1", "find": "  "}) == {}
    view = presenters.normalize_view({"page-activeQ": ["2"], "page-matrix": "99999999999", "outcome": "filtered",
                                      "colour": "memory", "find": "n1" * 300, "label": "zone=z1", "node": "n01"})
    assert view == {"page-activeQ": 2, "page-matrix": 10 ** 6, "outcome": "filtered", "colour": "memory",
                    "find": ("n1" * 300)[:presenters.VIEW_TEXT_MAX], "label": "zone=z1", "node": "n01"}


def test_label_filter_follows_kubectls_selector_forms():
    match = presenters._label_matcher("zone=z1, disk")
    assert match({"zone": "z1", "disk": "ssd"}) and not match({"zone": "z1"}) and not match({"zone": "z2", "disk": "x"})
    differs = presenters._label_matcher("zone!=z1")
    assert differs({"zone": "z2"}) and differs({}) and not differs({"zone": "z1"})
    assert presenters._label_matcher("zone==z0")({"zone": "z0"})
    assert presenters._label_matcher("") is None


def test_queues_show_a_page_with_the_count_of_all():
    session = runner.create_session(scenario_text(), "large.json")
    for _ in range(300):   # until the pods are all queued, before the first Pop
        runner.control(session.pk, {"action": "step-event"})
        ctx = context(session)
        if ctx["queues"]["columns"][0]["total"] == 25:
            break
    everyone = ctx["queues"]["columns"][0]
    assert everyone["name"] == "activeQ" and everyone["total"] == 25
    first = [p["key"] for p in everyone["pods"]]
    assert first == [f"default/p{i:02d}" for i in range(10)]
    assert (everyone["pager"]["first"], everyone["pager"]["last"], everyone["pager"]["next"]) == (1, 10, 1)
    third = next(c for c in context(session, {"page-activeQ": 2})["queues"]["columns"] if c["name"] == "activeQ")
    assert [p["key"] for p in third["pods"]] == [f"default/p{i:02d}" for i in range(20, 25)]
    assert third["pager"]["next"] is None and third["pager"]["prev"] == 1
    # a page past the end shows the last one
    assert context(session, {"page-activeQ": 50})["queues"]["columns"][0]["pager"]["page"] == 2


def test_the_overview_colours_each_node_and_marks_the_search_the_labels_and_the_selection():
    session = runner.create_session(scenario_text(), "large.json")
    runner.control(session.pk, {"action": "step-cycle"})
    ctx = context(session)
    nodes = ctx["nodes"]
    assert nodes["overview"] and nodes["cards"] == [] and nodes["total"] == NODES
    shown = cells(ctx)
    assert list(shown) == sorted(shown) and len(shown) == NODES   # one cell per node, tree order here
    chosen = ctx["cycle"]["end"]["node"]
    assert shown[chosen][0] == "h5"          # 1 cpu of 2
    assert sum(1 for c in shown.values() if c[0] == "h0") == NODES - 1
    assert {"h5": 1, "h0": NODES - 1} == {f"h{legend['level']}": legend["count"] for legend in nodes["legend"]}
    # memory: nobody asks for any
    assert {c[0] for c in cells(context(session, {"colour": "memory"})).values()} == {"h0"}

    found = context(session, {"find": "n1"})
    assert found["nodes"]["matched"] == 10 and found["nodes"]["match_list"] == [f"n1{i}" for i in range(10)]
    assert {n for n, c in cells(found).items() if "m" in c} == {f"n1{i}" for i in range(10)}
    labelled = context(session, {"label": "zone=z1,disk=ssd"})
    assert {n for n, c in cells(labelled).items() if "m" in c} == {f"n{i:02d}" for i in range(NODES)
                                                                    if i % 3 == 1 and i % 5 == 0}
    picked = context(session, {"node": chosen})
    assert "s" in cells(picked)[chosen]
    card = picked["nodes"]["selected"]
    assert card["name"] == chosen and [p["key"] for p in card["pods"]] == [ctx["cycle"]["pod"]]
    assert context(session, {"node": "nope"})["nodes"]["selected_missing"] == "nope"


def test_a_small_cluster_keeps_its_cards_and_the_search_narrows_them():
    session = runner.create_session(scenario_text(nodes=12, pods=2), "small.json")
    runner.control(session.pk, {"action": "step-cycle"})
    nodes = context(session)["nodes"]
    assert not nodes["overview"] and len(nodes["cards"]) == 12
    narrowed = context(session, {"label": "disk=ssd"})["nodes"]
    assert [c["name"] for c in narrowed["cards"]] == ["n00", "n05", "n10"] and narrowed["matched"] == 3


@pytest.mark.parametrize("count, default", [(1, "cards"), (presenters.NODE_CARD_LIMIT, "cards"),
                                            (presenters.NODE_CARD_LIMIT + 1, "overview"), (40, "overview")])
def test_the_overview_is_the_default_above_a_dozen_nodes(count, default):
    session = runner.create_session(scenario_text(nodes=count, pods=1), "cluster.json")
    runner.control(session.pk, {"action": "step-cycle"})
    nodes = context(session)["nodes"]
    assert (nodes["mode"], nodes["default_mode"], nodes["overview"]) == (default, default, default == "overview")
    assert bool(nodes["cards"]) == (default == "cards") and nodes["total"] == count


def test_each_page_may_show_a_small_cluster_as_an_overview_and_a_mid_size_one_as_cards():
    from django.template.loader import render_to_string
    small = runner.create_session(scenario_text(nodes=3, pods=1), "small.json")
    runner.control(small.pk, {"action": "step-cycle"})
    as_overview = context(small, presenters.normalize_view({"nodes": "overview"}))
    assert as_overview["nodes"]["overview"] and len(cells(as_overview)) == 3 and as_overview["nodes"]["cards"] == []
    html = render_to_string("visualizer/partials/_nodes.html", as_overview)
    assert 'data-node-mode="overview"' in html and "data-node-overview" in html
    assert re.search(r'data-node-mode-set="overview" aria-pressed="true"', html)
    assert re.search(r"""data-view-set='\{"nodes": "cards"\}' data-node-mode-set="cards" aria-pressed="false" title="the default""", html)

    mid = runner.create_session(scenario_text(nodes=40, pods=2), "mid.json")
    runner.control(mid.pk, {"action": "step-cycle"})
    as_cards = context(mid, presenters.normalize_view({"nodes": "cards", "label": "disk=ssd"}))["nodes"]
    assert not as_cards["overview"] and as_cards["mode"] == "cards" and as_cards["default_mode"] == "overview"
    assert [c["name"] for c in as_cards["cards"]] == [f"n{i:02d}" for i in range(0, 40, 5)]   # the filter narrows them
    assert len(context(mid, {"nodes": "cards"})["nodes"]["cards"]) == 40
    # the page's choice is its own: without it, the default
    assert context(mid)["nodes"]["overview"]


def test_cards_are_refused_above_the_most_a_frame_may_hold():
    from django.template.loader import render_to_string
    session = runner.create_session(scenario_text(nodes=NODE_CARD_MAX + 1, pods=1), "large.json")
    runner.control(session.pk, {"action": "step-cycle"})
    ctx = context(session, {"nodes": "cards"})
    assert ctx["nodes"]["overview"] and ctx["nodes"]["cards"] == [] and not ctx["nodes"]["cards_allowed"]
    html = render_to_string("visualizer/partials/_nodes.html", ctx)
    assert re.search(r'data-node-mode-set="cards" aria-pressed="false" disabled', html)


def test_the_nodes_mode_is_part_of_a_pages_own_view():
    assert presenters.normalize_view({"nodes": "overview"}) == {"nodes": "overview"}
    assert presenters.normalize_view({"nodes": "cards"}) == {"nodes": "cards"}
    assert presenters.normalize_view({"nodes": "table"}) == {}


def test_the_filter_matrix_shows_every_evaluated_node_by_page_and_outcome():
    session = runner.create_session(scenario_text(nodes=130, pods=2), "large.json")
    runner.control(session.pk, {"action": "step-cycle"})
    f = context(session)["cycle"]["filter"]
    assert f["evaluated"] >= 100 and f["paged"] and len(f["rows"]) == presenters.MATRIX_PAGE
    everyone = [r["node"] for r in f["all_rows"]]
    pages = [context(session, {"page-matrix": k})["cycle"]["filter"]["rows"] for k in range(f["pager"]["pages"])]
    assert [r["node"] for page in pages for r in page] == everyone
    failed = context(session, {"outcome": "filtered"})["cycle"]["filter"]
    assert failed["matched"] == f["evaluated"] - f["feasible"] > 0
    assert all(not r["passed"] for r in failed["rows"])
    assert all('data-code="UnschedulableAndUnresolvable"' in r["html"] for r in failed["rows"])
    feasible = context(session, {"outcome": "feasible"})["cycle"]["filter"]
    assert feasible["matched"] == f["feasible"] and all(r["passed"] for r in feasible["rows"])


def test_the_matrix_rows_built_in_python_are_the_templates():
    """_matrix_row_html writes what _filter_matrix.html writes for the same row."""
    from django.template import Context, Template
    session = runner.create_session(scenario_text(nodes=130, pods=2), "large.json")
    runner.control(session.pk, {"action": "step-cycle"})
    cycle = context(session, {"outcome": "filtered"})["cycle"]
    template = Template(open(presenters.__file__.replace("visualizer/presenters.py",
                                                         "templates/visualizer/partials/_filter_matrix.html")).read())
    row = cycle["filter"]["rows"][0]
    python = str(row.pop("html"))
    cycle["filter"]["rows"] = [row]
    html = template.render(Context({"c": cycle}))
    from_template = re.search(r"<tr data-filter-node.*?</tr>", html, re.S).group(0)

    def squash(text):
        return re.sub(r">\s+<", "><", text.strip())
    assert squash(from_template) == squash(python)
