"""The preemption panel's pickOneNodeForPreemption table at each lesson's PreemptionPick: the
real values (not the engine's negated scores), the direction that wins, the criterion that
decided and the candidates that survived each round (visualizer.panels.preemption.pick_table)."""
import html
import re
from pathlib import Path

import pytest

from visualizer import presenters, runner
from visualizer.panels.preemption import pick_table

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def at_pick(lesson: str, edit=lambda text: text):
    """(the panel's context, its HTML) with the lesson's PreemptionPick the last event revealed."""
    [path] = FIXTURES.glob(f"??-{lesson}.yaml")
    session = runner.create_session(edit(path.read_text(encoding="utf-8")))
    for _ in range(500):
        runner.control(session.pk, {"action": "step-event"})
        with runner.open_live(session.pk) as live:
            st = live.stepper
            if st.events[st.position - 1]["type"] == "PreemptionPick":
                ctx = presenters.context(live, names=("preemption",))["preemption"]
                [(_, text)] = presenters.render_panels(live, names=("preemption",))
                return ctx, text
    raise AssertionError(f"{lesson}: no PreemptionPick")


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def table(page: str) -> dict:
    """The pick table's text: {row's criterion (or "head", "victims"): [header, cell per candidate]}."""
    t = page[page.index("<table"):page.index("</table>")]
    out = {}
    for row in re.findall(r"<tr\b.*?</tr>", t, re.S):
        m = re.match(r'<tr data-criterion="(\w+)"', row)
        key = m.group(1) if m else ("victims" if "data-victims" in row else "head")
        out[key] = [text_of(c) for c in re.findall(r"<t[hd]\b.*?</t[hd]>", row, re.S)]
    return out


def deciding_row(page: str) -> str:
    [row] = re.findall(r'<tr data-criterion="(\w+)" data-deciding-row>\s*<th scope="row" class="deciding" data-deciding',
                       page)
    return row


def verdict(page: str) -> str:
    return text_of(re.search(r"<p data-pick-verdict>(.*?)</p>", page, re.S).group(1))


def cells(pick: dict, criterion: str) -> dict:
    row = next(r for r in pick["rows"] if r["name"] == criterion)
    return {c["node"]: (c["real"], c["state"]) for c in row["cells"]}


def no_scores_shown(page: str):
    """The engine's negated scores and the "higher wins" heading are gone."""
    assert "higher wins" not in page
    t = table(page)
    for key, row in t.items():
        if key in ("minNumPDBViolatingVictims", "minHighestPriorityVictim", "minNumPods"):
            assert not any(c.startswith("-") for c in row[1:]), (key, row)


def test_11_fewest_pdb_violations_decides():
    ctx, page = at_pick("preemption-reprieve")
    pick = ctx["pick"]
    assert (pick["node"], pick["criterion"]) == ("n1", "minNumPDBViolatingVictims")
    assert cells(pick, "minNumPDBViolatingVictims") == {"n1": (0, "win"), "n2": (1, "out")}
    # the later criteria are shown with their real values, as not reached
    assert cells(pick, "minHighestPriorityVictim") == {"n1": (100, "idle"), "n2": (5, "idle")}
    assert cells(pick, "minSumPriorities") == {"n1": (200, "idle"), "n2": (5, "idle")}
    assert cells(pick, "minNumPods") == {"n1": (2, "idle"), "n2": (1, "idle")}
    t = table(page)
    assert t["head"] == ["criterion", "n1 ★ chosen", "n2"]
    assert t["minNumPDBViolatingVictims"] == ["1. PDB violations lower wins · ◆ decides", "0 ✓", "1 ✗"]
    assert t["minHighestPriorityVictim"] == ["2. top victim priority lower wins · not reached", "100", "5"]
    assert t["victims"] == ["victims", "default/b, default/c", "default/d"]
    assert deciding_row(page) == "minNumPDBViolatingVictims"
    assert "decided by <strong data-deciding-criterion>min<wbr>Num<wbr>PDB" in page
    assert verdict(page) == "1. PDB violations (lower wins): n1 (0 violations) beats n2 (1)."
    assert 'data-candidate="n1" data-chosen' in page
    no_scores_shown(page)


def test_12_lowest_highest_priority_victim_decides():
    ctx, page = at_pick("pick-lowest-victim-priority")
    pick = ctx["pick"]
    assert (pick["node"], pick["criterion"]) == ("n2", "minHighestPriorityVictim")
    assert cells(pick, "minNumPDBViolatingVictims") == {"n1": (0, "tie"), "n2": (0, "tie")}
    assert cells(pick, "minHighestPriorityVictim") == {"n1": (100, "out"), "n2": (10, "win")}
    # criteria 3 and 4 would have favoured n1; they are not reached
    assert cells(pick, "minSumPriorities") == {"n1": (100, "idle"), "n2": (20, "idle")}
    assert cells(pick, "minNumPods") == {"n1": (1, "idle"), "n2": (2, "idle")}
    t = table(page)
    assert t["minNumPDBViolatingVictims"] == ["1. PDB violations lower wins · = tie", "0 =", "0 ="]
    assert t["minHighestPriorityVictim"] == ["2. top victim priority lower wins · ◆ decides", "100 ✗", "10 ✓"]
    assert deciding_row(page) == "minHighestPriorityVictim"
    assert verdict(page) == ("Criterion 1 ties. 2. top victim priority (lower wins): "
                             "n2 (priority 10) beats n1 (100).")
    no_scores_shown(page)


def test_13_smallest_sum_of_priorities_decides():
    ctx, page = at_pick("pick-min-sum-priorities")
    pick = ctx["pick"]
    assert (pick["node"], pick["criterion"]) == ("n2", "minSumPriorities")
    assert cells(pick, "minHighestPriorityVictim") == {"n1": (100, "tie"), "n2": (100, "tie")}
    assert cells(pick, "minSumPriorities") == {"n1": (150, "out"), "n2": (110, "win")}
    t = table(page)
    # the same number of victims on both: the shift changes nothing, only the plain sums show
    assert t["minSumPriorities"] == ["3. priority sum lower wins · ◆ decides", "150 ✗", "110 ✓"]
    assert "data-shifted" not in page
    assert re.search(r'title="minSumPriorities: [^"]*2147483648 \(MaxInt32 \+ 1\)[^"]*" data-criterion-help', page)
    assert deciding_row(page) == "minSumPriorities"
    assert verdict(page) == "Criteria 1–2 tie. 3. priority sum (lower wins): n2 (sum 110) beats n1 (150)."
    no_scores_shown(page)


def test_14_fewest_victims_decides_after_equal_shifted_sums():
    ctx, page = at_pick("pick-fewest-victims")
    pick = ctx["pick"]
    assert (pick["node"], pick["criterion"]) == ("n2", "minNumPods")
    # the plain sums differ (100 - 2^31 and 100) but upstream compares the shifted ones: a tie
    assert cells(pick, "minSumPriorities") == {"n1": (100 - 2 ** 31, "tie"), "n2": (100, "tie")}
    assert cells(pick, "minNumPods") == {"n1": (2, "out"), "n2": (1, "win")}
    t = table(page)
    assert t["minSumPriorities"] == ["3. priority sum lower wins · = tie",
                                     "-2147483548 = shifted 2147483748", "100 = shifted 2147483748"]
    assert t["minNumPods"] == ["4. victims lower wins · ◆ decides", "2 ✗", "1 ✓"]
    assert deciding_row(page) == "minNumPods"
    assert verdict(page) == "Criteria 1–3 tie. 4. victims (lower wins): n2 (1 victim) beats n1 (2)."
    no_scores_shown(page)


def test_15_latest_start_time_decides():
    ctx, page = at_pick("pick-latest-start-time")
    pick = ctx["pick"]
    assert (pick["node"], pick["criterion"]) == ("n2", "latestStartTime")
    # old started two hours before virtual time 0, new ten minutes before
    assert cells(pick, "latestStartTime") == {"n1": (-7200, "out"), "n2": (-600, "win")}
    t = table(page)
    assert t["latestStartTime"] == ["5. start of top victims later wins · ◆ decides", "t=-7200 s ✗", "t=-600 s ✓"]
    assert t["firstInNodeOrder"] == ["6. first in order first wins · not reached", "#1", "#2"]
    assert deciding_row(page) == "latestStartTime"
    assert verdict(page) == ("Criteria 1–4 tie. 5. start of top victims (later wins): "
                             "n2 (started t=-600 s) beats n1 (t=-7200 s).")
    no_scores_shown(page)


def test_15_with_equal_start_times_the_first_in_order_wins():
    ctx, page = at_pick("pick-latest-start-time", lambda text: text.replace("23:50:00Z", "22:00:00Z"))
    pick = ctx["pick"]
    assert (pick["node"], pick["criterion"]) == ("n1", "firstInNodeOrder")
    t = table(page)
    assert t["latestStartTime"] == ["5. start of top victims later wins · = tie", "t=-7200 s =", "t=-7200 s ="]
    assert t["firstInNodeOrder"] == ["6. first in order first wins · ◆ decides", "#1 ✓", "#2 ✗"]
    assert deciding_row(page) == "firstInNodeOrder"
    assert verdict(page) == "Criteria 1–5 tie. 6. first in order (first wins): n1 (#1) beats n2 (#2)."
    assert "Every criterion tied" in page


# the PreemptionPick of docs/state-and-trace.md: a round that leaves two of three candidates
DOCS_PICK = {
    "type": "PreemptionPick", "preemptor": "default/urgent", "node": "n3", "criterion": "minHighestPriorityVictim",
    "cycle": 1, "criteria": ["minNumPDBViolatingVictims", "minHighestPriorityVictim", "minSumPriorities",
                             "minNumPods", "latestStartTime"],
    "candidates": [
        {"node": "n1", "victims": ["default/c", "default/b"], "pdbViolations": 0,
         "values": {"minNumPDBViolatingVictims": 0, "minHighestPriorityVictim": -100,
                    "minSumPriorities": -4294967446, "minNumPods": -2, "latestStartTime": 0}},
        {"node": "n3", "victims": ["default/f"], "pdbViolations": 0,
         "values": {"minNumPDBViolatingVictims": 0, "minHighestPriorityVictim": -10,
                    "minSumPriorities": -2147483658, "minNumPods": -1, "latestStartTime": 0}},
        {"node": "n2", "victims": ["default/d"], "pdbViolations": 1,
         "values": {"minNumPDBViolatingVictims": -1, "minHighestPriorityVictim": -100,
                    "minSumPriorities": -2147483748, "minNumPods": -1, "latestStartTime": 0}}]}


def test_a_round_can_narrow_the_candidates_without_deciding():
    pick = pick_table(DOCS_PICK)
    assert [c["node"] for c in pick["columns"]] == ["n1", "n3", "n2"]
    assert cells(pick, "minNumPDBViolatingVictims") == {"n1": (0, "tie"), "n3": (0, "tie"), "n2": (1, "out")}
    # n2 is out: criterion 2 compares n1 and n3 only
    assert cells(pick, "minHighestPriorityVictim") == {"n1": (100, "out"), "n3": (10, "win"), "n2": (100, "gone")}
    assert cells(pick, "minSumPriorities") == {"n1": (150, "idle"), "n3": (10, "idle"), "n2": (100, "idle")}
    assert [(r["name"], r["status"]) for r in pick["rows"][:3]] == [
        ("minNumPDBViolatingVictims", "→ next"), ("minHighestPriorityVictim", "◆ decides"),
        ("minSumPriorities", "not reached")]
    assert pick["verdict"] == ("1. PDB violations (lower wins): n1, n3 (0 violations) beat n2 (1). "
                               "2. top victim priority (lower wins): n3 (priority 10) beats n1 (100).")


def test_one_candidate_is_not_compared():
    only = dict(DOCS_PICK, node="n1", criterion="onlyCandidate", candidates=DOCS_PICK["candidates"][:1])
    pick = pick_table(only)
    assert pick["by_rule"] and pick["verdict"] == ""
    assert all(not r["reached"] and r["status"] == "" and not r["deciding"] for r in pick["rows"])
    assert cells(pick, "minHighestPriorityVictim") == {"n1": (100, "idle")}
