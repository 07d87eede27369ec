"""The grading workbench (`grader review`) under load, on SQLite and on PostgreSQL.

- A queue of 500 answers (one written part of 500 students) opens in under 1 s, 95th
  percentile: GET /part/ID timed over many requests, from a signed-in client, over real HTTP
  to `grader review` running in its own process.
- 10 TAs saving at once for a given time lose no update: each TA (its own session) opens one of
  a few answers (so that they collide), and saves it with a comment of its own; a save made
  from an outdated version is refused (409) and tried again from the new one. At the end, every
  save the server acknowledged is in the audit log, each answer's version grew by exactly the
  saves acknowledged for it, and its comment is the last one acknowledged.

    python benchmarks/review_bench.py                 # 500 answers, 60 s of savers, both
    python benchmarks/review_bench.py --quick         # 100 answers, 3 s, SQLite only
    python benchmarks/review_bench.py --backends sqlite,postgresql --seconds 20

PostgreSQL: a throwaway server is started (Debian's binaries, tests/support/review.py), or
give --postgres-url. Prints a table; exits 1 when an update was lost or the p95 is over 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.review import free_port, postgres, synthetic_batch  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


@contextlib.contextmanager
def server(out: Path, url: str | None):
    port = free_port()
    command = [sys.executable, "-m", "grader", "review", str(out), "--port", str(port)]
    if url:
        command += ["--db", url]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO
    )
    import httpx

    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                httpx.get(base + "/", timeout=2)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = process.stdout.read() if process.poll() is not None else ""
                    raise RuntimeError(f"grader review did not start: {output}") from None
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def signed_in(database, base: str, name: str):
    import httpx

    from grader.instructor.workbench import auth

    client = httpx.Client(base_url=base, headers={"Origin": base}, timeout=30)
    token = auth.add_ta(database, name)
    response = client.post("/signin", data={"token": token})
    assert response.status_code == 303, response.text
    return client


CSRF = re.compile(r'name="csrf" value="([^"]+)"')
VERSION = re.compile(r'name="version" value="(\d+)"')


def run(kind: str, students: int, seconds: float, requests: int, url: str | None) -> dict:
    from sqlalchemy import select

    from grader.instructor.workbench import db, scores
    from grader.instructor.workbench.ingest import ingest
    from grader.instructor.workbench.models import Answer, Part

    with tempfile.TemporaryDirectory(prefix="attnkit-review-bench-") as folder:
        answers = {f"student{n:04d}": f"Answer {n}: self-attention costs $n^2 d$." for n in
                   range(students)}  # fmt: skip
        out = synthetic_batch(Path(folder) / "out", answers)
        database = db.open_database(out, url)
        ingest(database, out)
        with database.reading() as session:
            part = session.scalar(select(Part).where(Part.kind == "written"))
            hot = list(
                session.scalars(
                    select(Answer.id).where(Answer.part_id == part.id).order_by(Answer.id).limit(5)
                )
            )
            start_version = {a: session.get(Answer, a).version for a in hot}
        with server(out, url) as base:
            reader = signed_in(database, base, "reader")
            times = []
            for _ in range(requests):
                began = time.perf_counter()
                response = reader.get(f"/part/{part.id}")
                times.append(time.perf_counter() - began)
                assert response.status_code == 200 and response.text.count("/answer/") >= students
            answer_times = []
            for answer_id in hot * max(1, requests // len(hot)):
                began = time.perf_counter()
                assert reader.get(f"/answer/{answer_id}").status_code == 200
                answer_times.append(time.perf_counter() - began)
            acknowledged: list[tuple[int, str, float]] = []
            refused = [0]
            lock = threading.Lock()
            stop = time.monotonic() + seconds

            def saver(number: int) -> None:
                client = signed_in(database, base, f"TA {number}")
                count = 0
                while time.monotonic() < stop:
                    answer_id = hot[(number + count) % len(hot)]
                    page = client.get(f"/answer/{answer_id}").text
                    while True:
                        comment = f"TA {number} save {count}"
                        response = client.post(
                            f"/answer/{answer_id}",
                            data={
                                "csrf": CSRF.search(page).group(1),
                                "version": VERSION.search(page).group(1),
                                "comment": comment,
                            },
                        )
                        if response.status_code == 303:
                            with lock:
                                acknowledged.append((answer_id, comment, time.monotonic()))
                            break
                        assert response.status_code == 409, response.status_code
                        with lock:
                            refused[0] += 1
                        page = response.text  # the page shows the answer as it is now
                    count += 1
                client.close()

            began = time.monotonic()
            threads = [threading.Thread(target=saver, args=(n,)) for n in range(10)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - began
        lost = 0
        with database.reading() as session:
            logged = [row for row in scores.audit_rows(session) if row.action == "grade"]
            logged_comments = {
                re.search(r'"comment": "([^"]*)"', row.after).group(1) for row in logged
            }
            for answer_id in hot:
                mine = [c for a, c, _ in acknowledged if a == answer_id]
                answer = session.get(Answer, answer_id)
                if answer.version != start_version[answer_id] + len(mine):
                    lost += 1
                if mine and answer.comment not in mine[-1:]:
                    lost += 1
            lost += sum(1 for _, c, _ in acknowledged if c not in logged_comments)
        database.dispose()
    return {
        "backend": kind,
        "answers": students,
        "queue_p50": statistics.median(times),
        "queue_p95": percentile(times, 0.95),
        "answer_p95": percentile(answer_times, 0.95),
        "seconds": elapsed,
        "saves": len(acknowledged),
        "refused": refused[0],
        "lost": lost,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 answers, 3 s, SQLite only")
    parser.add_argument("--answers", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--backends", default=None, help="sqlite,postgresql")
    parser.add_argument("--postgres-url", default=None)
    options = parser.parse_args()
    students = options.answers or (100 if options.quick else 500)
    seconds = options.seconds or (3.0 if options.quick else 60.0)
    requests = options.requests or (10 if options.quick else 40)
    backends = (options.backends or ("sqlite" if options.quick else "sqlite,postgresql")).split(",")
    rows = []
    for kind in backends:
        if kind == "sqlite":
            rows.append(run(kind, students, seconds, requests, None))
        elif options.postgres_url:
            rows.append(run(kind, students, seconds, requests, options.postgres_url))
        else:
            with postgres("review_bench") as url:
                rows.append(run(kind, students, seconds, requests, url))
    print(
        f"{'backend':<11}{'answers':>8}{'queue p50 s':>13}{'queue p95 s':>13}{'answer p95 s':>14}"
        f"{'savers s':>10}{'saves':>7}{'refused':>9}{'lost':>6}"
    )
    for r in rows:
        print(
            f"{r['backend']:<11}{r['answers']:>8}{r['queue_p50']:>13.3f}{r['queue_p95']:>13.3f}"
            f"{r['answer_p95']:>14.3f}{r['seconds']:>10.1f}{r['saves']:>7}{r['refused']:>9}"
            f"{r['lost']:>6}"
        )
    print(f"machine: {os.cpu_count()} cores; 10 savers on 5 answers; {requests} queue requests")
    failed = any(r["lost"] or r["queue_p95"] >= 1.0 for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
