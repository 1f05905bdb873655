#!/usr/bin/env python3
"""REST latency while a large job deploys on a local cluster (a measurement, not a test).

Runs `conflux cluster` on a generated word count (PARALLELISM x PARALLELISM, blocking) with
TASK_MANAGERS TaskManager processes, and while it runs:
  - polls GET /jobs/overview POLL_HZ times a second (one client, one request at a time) and
    prints the latencies' p50 / p99 / max;
  - once the job shows, fetches GET /jobs/:jobid and GET /jobs/:jobid/vertices/:vid of its first
    vertex (PARALLELISM subtasks) SAMPLES times each, asking for gzip as browsers do, and prints
    their time (median, max), their JSON's bytes and their bytes on the wire;
  - prints the JobManager's longest scheduler handler call from the job report
    (`max_handler_stall_ms`; run again with --no-poll for the figure without REST traffic).
Only the Python standard library; loopback only; the cluster's working files go to a temporary
directory removed at the end.

  scripts/rest-latency.py --conflux target/release/conflux --parallelism 10000 --task-managers 20
"""

import argparse
import collections
import gzip
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def get(host, port, path, timeout=10.0, gzipped=False):
    """(status, body bytes, seconds, bytes on the wire) of one GET on a fresh connection; with
    `gzipped`, asking for gzip (`Accept-Encoding: gzip`, as browsers and `curl --compressed`)
    and decoding it."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "gzip"} if gzipped else {})
        response = conn.getresponse()
        wire = response.read()
        took = time.perf_counter() - start
        body = wire
        if response.getheader("Content-Encoding") == "gzip":
            body = gzip.decompress(wire)
        return response.status, body, took, len(wire)
    finally:
        conn.close()


def percentile(values, p):
    """The p-th percentile (nearest rank) of values, or None."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(round(p / 100.0 * len(ordered) + 0.5))))
    return ordered[rank - 1]


def ms(seconds):
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conflux", default="target/release/conflux")
    parser.add_argument("--parallelism", type=int, default=10_000)
    parser.add_argument("--task-managers", type=int, default=20)
    parser.add_argument("--task-duration-ms", default="0",
                        help="task duration (MS or MIN..MAX): longer keeps the job up longer")
    parser.add_argument("--poll-hz", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--no-details", action="store_true",
                        help="only /jobs/overview (at 100k subtasks a vertex's details are 58 MB)")
    parser.add_argument("--no-poll", action="store_true",
                        help="no REST traffic: the baseline of the longest handler call")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="conflux-rest-latency-") as tmp:
        job = os.path.join(tmp, "job.json")
        subprocess.run([args.conflux, "generate", "wordcount", "--parallelism",
                        str(args.parallelism), "--result-partition-type", "blocking",
                        "-o", job], check=True)
        env = dict(os.environ, TMPDIR=tmp)
        cluster = subprocess.Popen(
            [args.conflux, "cluster", job, "--task-managers", str(args.task_managers),
             "--task-duration-ms", args.task_duration_ms, "--format", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        rest = None
        stderr_lines = []
        # "JobManager at ..., REST API http://127.0.0.1:PORT (flink list -m ...)"
        for line in cluster.stderr:
            stderr_lines.append(line)
            if "REST API http://" in line:
                rest = line.split("REST API http://", 1)[1].split()[0].rstrip(",)")
                break
        if rest is None:
            cluster.wait()
            sys.exit("no REST address from conflux cluster:\n" + "".join(stderr_lines))
        host, port = rest.rsplit(":", 1)
        port = int(port)
        # The rest of stderr is drained so that the cluster never blocks on it.
        drain = threading.Thread(target=lambda: stderr_lines.extend(cluster.stderr),
                                 daemon=True)
        drain.start()

        latencies, errors = [], collections.Counter()
        # Failures not followed by a success: the JobManager had stopped with the job.
        pending_errors = collections.Counter()
        details = {"job": [], "vertex": []}
        sizes = {}
        job_id, vertex_id = None, None
        # Polled while the job runs (the JobManager stops with it): not after it ended.
        polling = not args.no_poll
        interval = 1.0 / args.poll_hz
        next_at = time.perf_counter()
        while cluster.poll() is None:
            if not polling:
                time.sleep(0.05)
                continue
            try:
                status, body, took, _ = get(host, port, "/jobs/overview")
                latencies.append(took)
                if status == 200:
                    jobs = json.loads(body).get("jobs", [])
                    if jobs and job_id is None:
                        job_id = jobs[0]["jid"]
                    if jobs and jobs[0]["state"] in ("FINISHED", "FAILED", "CANCELED"):
                        polling = False
                if (job_id is not None and not args.no_details
                        and len(details["job"]) < args.samples):
                    status, body, took, wire = get(host, port, f"/jobs/{job_id}",
                                                   gzipped=True)
                    if status == 200:
                        details["job"].append(took)
                        sizes["job"] = (len(body), wire)
                        vertices = json.loads(body).get("vertices", [])
                        if vertices and vertex_id is None:
                            vertex_id = vertices[0]["id"]
                    if vertex_id is not None:
                        status, body, took, wire = get(
                            host, port, f"/jobs/{job_id}/vertices/{vertex_id}", gzipped=True)
                        if status == 200:
                            details["vertex"].append(took)
                            sizes["vertex"] = (len(body), wire)
                # Failures before this success were failures while the JobManager ran.
                errors.update(pending_errors)
                pending_errors.clear()
            except (OSError, http.client.HTTPException, ValueError) as e:
                pending_errors[type(e).__name__] += 1
            next_at += interval
            time.sleep(max(0.0, next_at - time.perf_counter()))
        out = cluster.stdout.read()
        drain.join(timeout=5)
        if cluster.returncode != 0:
            sys.exit(f"conflux cluster exited {cluster.returncode}:\n" + "".join(stderr_lines))
        report = json.loads(out)

    n = args.parallelism
    print(f"job: {n} x {n} blocking word count, {2 * n} tasks, {args.task_managers} "
          f"TaskManagers: {report['status']} in {report['wall_ms']['total']:.0f} ms "
          f"(deploy {report['wall_ms'].get('deploy') or 0:.0f} ms)")
    if args.no_poll:
        print("REST: not polled")
    else:
        failed = ", ".join(f"{n} {kind}" for kind, n in errors.items()) or "none"
        after = sum(pending_errors.values())
        print(f"GET /jobs/overview at {args.poll_hz:g}/s while the job ran: {len(latencies)} "
              f"requests, errors: {failed} ({after} refused after the JobManager stopped with "
              f"the job); p50 {ms(percentile(latencies, 50))}, "
              f"p99 {ms(percentile(latencies, 99))}, max {ms(max(latencies, default=None))}")
    if not (args.no_poll or args.no_details):
        for key, path in (("job", "/jobs/:jobid"), ("vertex", "/jobs/:jobid/vertices/:vid")):
            taken = details[key]
            if taken:
                plain, wire = sizes[key]
                print(f"GET {path} (gzip): {len(taken)} samples, median "
                      f"{ms(statistics.median(taken))}, max {ms(max(taken))}, "
                      f"{plain:,} bytes of JSON, {wire:,} bytes on the wire")
            else:
                print(f"GET {path}: not sampled (the job ended first: try a longer "
                      f"--task-duration-ms)")
    print(f"JobManager's longest scheduler handler call: {report['max_handler_stall_ms']:.2f} ms "
          f"({report.get('max_handler_cpu_ms') or 0:.2f} ms CPU)")


if __name__ == "__main__":
    main()
