#!/usr/bin/env python3
"""Run the differential corpus and report where Varve and Cassandra disagree.

  run.py --hosts 127.0.0.2 127.0.0.1:9043    # live: reference (Cassandra) first, then Varve
  run.py --expected --hosts 127.0.0.1:9043   # Varve alone, against expected/*.json

Writes a Markdown report (default /tmp/varve-differential-report.md) and exits 1 if any mismatch is
not accepted in known_differences.md (2 on stale or missing recordings).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import harness

MESSAGE_CHARS_MAX = 300


def fmt_result(res):
    if res["kind"] == "error":
        return f"**{res['class']}** (0x{res['code'] or 0:04X}): {res['message'][:MESSAGE_CHARS_MAX]}"
    body = json.dumps(res["rows"])
    if len(body) > 600:
        body = body[:600] + " ..."
    return f"columns {res['columns']} types {res['types']} rows({len(res['rows'])}) {body}"


def write_report(path, mismatches, problems, header):
    new = [m for m in mismatches if not m["known"]]
    lines = [f"# Differential report: {header}", "",
             f"{len(mismatches)} mismatches, {len(new)} not in known_differences.md.", ""]
    for p in problems:
        lines.append(f"- PROBLEM: {p}")
    for title, group in (("Unexpected mismatches", new),
                         ("Accepted (known_differences.md)", [m for m in mismatches if m["known"]])):
        lines += ["", f"## {title}", ""]
        if not group:
            lines.append("(none)")
        for m in group:
            lines += [f"### {m['file']}:{m['line']} — {m['reason']}", "", "```sql", m["statement"], "```", "",
                      f"- Cassandra: {fmt_result(m['expected'])}",
                      f"- Varve: {fmt_result(m['actual'])}"]
            if m["known"]:
                lines.append(f"- accepted because: {m['known']}")
            lines.append("")
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", nargs="+", required=True,
                    help="reference then Varve (host[:port]); with --expected only Varve")
    ap.add_argument("--expected", action="store_true", help="compare Varve with expected/*.json")
    ap.add_argument("--protocol", type=int, default=4)
    ap.add_argument("--report", default=str(Path(tempfile.gettempdir()) / "varve-differential-report.md"))
    ap.add_argument("--auth", action="store_true",
                    help="run the role and permission corpus (corpus_auth/), logged in as cassandra/cassandra, "
                         "on servers with PasswordAuthenticator and CassandraAuthorizer")
    ap.add_argument("files", nargs="*", help="corpus file names or stems (default: all)")
    args = ap.parse_args()
    login = harness.AUTH_LOGIN if args.auth else None

    known = harness.load_known()
    files = harness.corpus_files(args.files, auth=args.auth)
    mismatches, problems, total = [], [], 0
    if args.expected:
        if len(args.hosts) != 1:
            ap.error("--expected takes exactly one host (Varve)")
        cluster, session = harness.connect(*harness.parse_host(args.hosts[0]), args.protocol, login)
        for f in files:
            m, p = harness.compare_with_expected(session, f, known)
            mismatches += m
            problems += p
            total += len(harness.load_corpus(f)[1])
        cluster.shutdown()
        header = f"Varve {args.hosts[0]} vs recorded expectations"
    else:
        if len(args.hosts) != 2:
            ap.error("--hosts takes the reference (Cassandra) then Varve")
        ref_cluster, ref = harness.connect(*harness.parse_host(args.hosts[0]), args.protocol, login)
        var_cluster, var = harness.connect(*harness.parse_host(args.hosts[1]), args.protocol, login)
        for f in files:
            exp = harness.run_file(ref, f)
            act = harness.run_file(var, f)
            total += len(exp)
            pairs = [(st, e, a) for (st, e), (_, a) in zip(exp, act)]
            mismatches += harness.diff_file(f, pairs, known)
        ref_cluster.shutdown()
        var_cluster.shutdown()
        header = f"{args.hosts[0]} (reference) vs {args.hosts[1]}"

    write_report(args.report, mismatches, problems, f"{header}, protocol v{args.protocol}")
    new = [m for m in mismatches if not m["known"]]
    print(f"{total} statements in {len(files)} files: {len(mismatches)} mismatches "
          f"({len(new)} unexpected); report {args.report}")
    for p in problems:
        print("PROBLEM:", p)
    for m in new:
        print(f"  {m['file']}:{m['line']}: {m['reason']}: {harness.normalize_ws(m['statement'])[:120]}")
    if problems:
        return 2
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
