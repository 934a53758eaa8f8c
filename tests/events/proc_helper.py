"""A child process for tests/events/test_processes.py (run as a script, never imported).

    proc_helper.py append PATH WORKER N     print "ready", wait for a line on stdin, append N
                                            events (one per transaction), print a JSON report
    proc_helper.py append-after PATH DELAY  sleep DELAY, print the wall time, append one event
    proc_helper.py wait PATH SINCE TIMEOUT  print "ready", wait(), print a JSON report
    proc_helper.py forever PATH             append forever, printing "i position" per append
"""

from __future__ import annotations

import json
import sys
import time

from leanctx.events import NewEvent, SqliteEventStore, TopicFilter
from leanctx.events.kinds import AgentDeregistered, AgentHeartbeat


def main(argv: list[str]) -> None:
    mode, path = argv[0], argv[1]
    store = SqliteEventStore(path)
    if mode == "append":
        worker, n = argv[2], int(argv[3])
        store.head()  # connections open before the start line
        print("ready", flush=True)
        sys.stdin.readline()
        positions = []
        t0 = time.time()
        for i in range(n):
            r = store.append(f"worker:{worker}", [NewEvent(event=AgentHeartbeat(agent_id=f"{worker}-{i}"))])
            positions.extend(r.positions)
        t1 = time.time()
        print(json.dumps({"worker": worker, "t0": t0, "t1": t1, "positions": positions}), flush=True)
    elif mode == "append-after":
        time.sleep(float(argv[2]))
        store.append("noise", [NewEvent(event=AgentHeartbeat(agent_id="noise"))])  # filtered out
        time.sleep(0.2)
        t = time.time()
        r = store.append("signal", [NewEvent(event=AgentDeregistered(agent_id="signal", reason="wake up"))])
        print(json.dumps({"t_before_append": t, "position": r.positions[0]}), flush=True)
    elif mode == "wait":
        since, timeout = int(argv[2]), float(argv[3])
        store.head()
        print("ready", flush=True)
        got = store.wait(since, TopicFilter(kinds=("agent.deregistered",)), timeout=timeout)
        t = time.time()
        print(json.dumps({"t_wake": t, "positions": [e.position for e in got]}), flush=True)
    elif mode == "forever":
        i = 0
        while True:
            r = store.append("forever", [NewEvent(event=AgentHeartbeat(agent_id=f"forever-{i}", status="x" * 200))])
            sys.stdout.write(f"{i} {r.positions[0]}\n")
            sys.stdout.flush()
            i += 1
    else:  # pragma: no cover
        raise SystemExit(f"unknown mode {mode}")
    store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
