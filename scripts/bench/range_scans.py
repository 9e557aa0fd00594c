"""Full-ring scans on a local three-node cluster (scripts/bench/range_scans.sh): median milliseconds of five scans of each kind."""
import statistics, sys, time
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement
from cassandra.concurrent import execute_concurrent_with_args

prof = ExecutionProfile(request_timeout=60)
c = Cluster(["127.0.0.1"], execution_profiles={EXEC_PROFILE_DEFAULT: prof})
s = c.connect()
s.execute("CREATE KEYSPACE IF NOT EXISTS sb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
s.execute("CREATE TABLE IF NOT EXISTS sb.t (k int PRIMARY KEY, v text)")
s.execute("CREATE TABLE IF NOT EXISTS sb.w (p int, c int, v text, PRIMARY KEY (p, c))")
ins = s.prepare("INSERT INTO sb.t (k, v) VALUES (?, ?)")
ins.consistency_level = ConsistencyLevel.ALL
execute_concurrent_with_args(s, ins, [(i, "x" * 100) for i in range(5000)], concurrency=64)
insw = s.prepare("INSERT INTO sb.w (p, c, v) VALUES (?, ?, ?)")
insw.consistency_level = ConsistencyLevel.ALL
execute_concurrent_with_args(s, insw, [(p, c, "y" * 50) for p in range(200) for c in range(20)], concurrency=64)

def timed(q, cl, fetch, n=5):
    out = []
    for _ in range(n):
        st = SimpleStatement(q, consistency_level=cl, fetch_size=fetch)
        t = time.perf_counter()
        rows = sum(1 for _ in s.execute(st))
        out.append(time.perf_counter() - t)
    return statistics.median(out), rows

for label, q, cl, fetch in [
    ("5,000 partitions, QUORUM, pages of 5,000", "SELECT * FROM sb.t", ConsistencyLevel.QUORUM, 5000),
    ("5,000 partitions, ONE, pages of 5,000", "SELECT * FROM sb.t", ConsistencyLevel.ONE, 5000),
    ("5,000 partitions, QUORUM, pages of 100", "SELECT * FROM sb.t", ConsistencyLevel.QUORUM, 100),
    ("200 x 20 rows, QUORUM, pages of 5,000", "SELECT * FROM sb.w", ConsistencyLevel.QUORUM, 5000),
    ("LIMIT 10, QUORUM", "SELECT * FROM sb.t LIMIT 10", ConsistencyLevel.QUORUM, 5000),
]:
    secs, rows = timed(q, cl, fetch)
    print(f"{sys.argv[1]} | {label} | {rows} rows | {secs*1000:.1f} ms")
c.shutdown()
