"""Follow a live session and print each queue transition as it is revealed, with vizclient
(docs/api.md, "Python client").

    .venv/bin/python docs/examples/client_follow.py FOLLOWER_LINK_OR_TOKEN [SERVER_URL] [--from N]

The follower link is the one the presenter shares (``http://127.0.0.1:8000/w/<token>/``); its
server is used unless SERVER_URL is given; a bare token needs SERVER_URL (default
http://127.0.0.1:8000). One line per ``QueueTransition`` event (docs/state-and-trace.md),
in order, from the start of the run (or from position N):

         0.0s default/urgent: - -> activeQ (PodAdd)
         0.0s default/urgent: activeQ -> - (Pop)
         0.0s default/urgent: - -> unschedulablePods (ScheduleAttemptFailure)

It runs until interrupted (Ctrl-C) or until the server closes the stream. Travelling back in
the session prints nothing (the events are those already printed); if the run changes under it
(a cluster event injected in the past), a note on stderr says from which position the
transitions printed are replaced, and the new ones follow.
"""
import argparse
import sys
from pathlib import Path

try:
    import vizclient
except ImportError:          # run from a checkout: the package is at its top
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import vizclient


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("link", help="the session's follower link, or its follower token")
    parser.add_argument("server", nargs="?", default=None,
                        help=f"the visualizer's URL (default: the link's server, else {vizclient.DEFAULT_URL})")
    parser.add_argument("--from", dest="start", type=int, default=0, metavar="N",
                        help="start at position N (the events before it are not printed)")
    args = parser.parse_args(argv)
    try:
        role, token, link_server = vizclient.parse_link(args.link)
    except ValueError as e:
        parser.error(str(e))
    client = vizclient.Client(args.server or link_server or vizclient.DEFAULT_URL)
    session = client.open(args.link) if role is not None else client.follow(token)
    try:
        with session.stream(from_position=args.start) as stream:
            print(f"# following {stream.url.split('?')[0]} (Ctrl-C to stop)", file=sys.stderr, flush=True)
            held = stream.position
            for message in stream:
                if message["type"] == "event" and vizclient.is_queue_transition(message["event"]):
                    print(vizclient.format_queue_transition(message["event"]), flush=True)
                elif message["type"] == "rewind" and message["kept"] < held:
                    print(f'# the run changed: the events from position {message["kept"]} on are replaced',
                          file=sys.stderr, flush=True)
                elif message["type"] == "status" and message["kind"] in ("error", "refused", "invalid"):
                    print(f'# {message["title"]}', file=sys.stderr, flush=True)
                held = stream.position
        print("# the server closed the stream", file=sys.stderr)
        return 0
    except KeyboardInterrupt:
        return 0
    except vizclient.StreamError as e:
        print(f"# {e}", file=sys.stderr)
        return 1
    except vizclient.ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
