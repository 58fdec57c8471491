"""The first preemption of a lesson, found through the REST API with vizclient (docs/api.md,
"Python client").

    bash scripts/run.sh                                    # in another terminal
    .venv/bin/python docs/examples/client_first_preemption.py [SERVER_URL] [--lesson FILE]

creates a session from the library's preemption lesson (11-preemption-reprieve.yaml unless
--lesson names another), steps it one scheduling cycle at a time until the first preemption's
victims are known, and prints the preemptor, its nominated node and the victims:

    session: http://127.0.0.1:8000/s/.../
    cycle 1 at 0.0s: n1 picked by minNumPDBViolatingVictims among 2 candidates
    preemptor: default/urgent
    nominated node: n1
    victims: default/b, default/c

The trace events read (docs/state-and-trace.md): the first ``PreemptionPick`` (the preemptor,
the node chosen and each candidate's victims), then at the end of that cycle the preemptor's
``Nomination`` and one ``PodDeleted`` (reason ``Preempted``) per victim, which say the victims'
deletions were issued. The victims are printed in the order of their ``PodDeleted`` events.
"""
import argparse
import sys
from pathlib import Path

try:
    import vizclient
except ImportError:          # run from a checkout: the package is at its top
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import vizclient

LESSON = "11-preemption-reprieve.yaml"


def first_preemption(session, max_steps=500):
    """Step ``session`` a cycle at a time until its first preemption's victims are deleted.
    Returns (the PreemptionPick event, the nominated node, the victims in deletion order), or
    None if the run ends (or ``max_steps`` cycles pass) without one."""
    seen = 0                 # events read so far
    pick, nominated, victims = None, None, []
    for _ in range(max_steps):
        answer = session.step_cycle()
        for event in session.iter_events(start=seen):
            seen = event["seq"] + 1
            if pick is None:
                if event["type"] == "PreemptionPick":
                    pick = event
                continue
            preemptor = pick["preemptor"]
            if event["type"] == "Nomination" and event["pod"] == preemptor and nominated is None:
                nominated = event["node"]
            elif (event["type"] == "PodDeleted" and event.get("reason") == "Preempted"
                  and event.get("preemptor") == preemptor):
                victims.append(event["pod"])
        if pick is not None:
            chosen = next(c for c in pick["candidates"] if c["node"] == pick["node"])
            if nominated is not None and sorted(victims) == sorted(chosen["victims"]):
                return pick, nominated, victims
        if answer["finished"]:
            break
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("server", nargs="?", default=vizclient.DEFAULT_URL,
                        help=f"the visualizer's URL (default {vizclient.DEFAULT_URL})")
    parser.add_argument("--lesson", default=LESSON, help=f"a library scenario (default {LESSON})")
    parser.add_argument("--max-steps", type=int, default=500, help="scheduling cycles to step at most")
    args = parser.parse_args(argv)
    client = vizclient.Client(args.server)
    try:
        session = client.create_session(fixture=args.lesson)
        print(f"session: {session.presenter_url}", flush=True)
        found = first_preemption(session, args.max_steps)
    except vizclient.ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if found is None:
        print(f"no preemption in {args.lesson} (stepped to the end or {args.max_steps} cycles)", file=sys.stderr)
        return 1
    pick, nominated, victims = found
    print(f'cycle {pick["cycle"]} at {pick["time"]}s: {pick["node"]} picked by {pick["criterion"]} '
          f'among {len(pick["candidates"])} candidate{"s" if len(pick["candidates"]) != 1 else ""}')
    print(f'preemptor: {pick["preemptor"]}')
    print(f"nominated node: {nominated}")
    print(f'victims: {", ".join(victims)}')
    return 0


if __name__ == "__main__":
    sys.exit(main())
