#!/usr/bin/env python3
"""Record Cassandra's results for the corpus into expected/<file>.json.

  record.py --host 127.0.0.2            # every corpus file
  record.py --host 127.0.0.2 04_select  # some files

The recording keeps each statement's text, so run.py --expected notices when the
corpus changed and the recording is stale.
"""

import argparse
import sys

import harness


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", required=True, help="Cassandra host[:port]")
    ap.add_argument("--protocol", type=int, default=4)
    ap.add_argument("--auth", action="store_true",
                    help="run the role and permission corpus (corpus_auth/), logged in as cassandra/cassandra, "
                         "on servers with PasswordAuthenticator and CassandraAuthorizer")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    login = harness.AUTH_LOGIN if args.auth else None

    cluster, session = harness.connect(*harness.parse_host(args.host), args.protocol, login)
    version = session.execute("SELECT release_version FROM system.local").one()[0]
    for f in harness.corpus_files(args.files, auth=args.auth):
        results = harness.run_file(session, f)
        meta = {"recorded_from": f"Apache Cassandra {version}", "protocol_version": args.protocol}
        harness.save_expected(f, results, meta)
        errors = sum(1 for _, r in results if r["kind"] == "error")
        print(f"{f.name}: {len(results)} statements ({errors} errors) -> {harness.expected_path(f).name}")
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
