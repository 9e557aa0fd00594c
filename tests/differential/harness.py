"""The differential harness: read a corpus, run it on a node, turn every result
into a plain JSON value, and compare two such results.

Used by run.py (live Varve vs Cassandra, or Varve vs recorded expectations),
record.py (records Cassandra's results) and tests/python/test_differential.py.

Corpus format (`corpus/*.cql`):
- statements end with `;` (quotes, `$$...$$` and comments are respected;
  `BEGIN ... BATCH` runs to its `APPLY BATCH;`);
- `-- @directive` comment lines apply to the next statement only:
  `@unordered`  compare rows as a sorted multiset (order not defined by CQL);
  `@shape`      compare only columns, types and the row count (time/random values);
  `@tolerance N` numbers may differ by up to N (remaining TTLs);
  `@ignore-columns` compare rows only, not column names/types (rarely needed);
  `@fetch N`    page size (default 100);
  `@pages`      also record and compare how many rows each page held (the page
                boundaries, an empty last page included);
  `@bind [JSON list]` prepare the statement and execute it with these values;
  `@consistency LEVEL` / `@serial LEVEL` run it at that consistency / serial consistency
  (default ONE / SERIAL), with no retry on another host;
- `{blob:N}` / `{text:N}` expand, when the statement runs, to a blob literal of N
  zero bytes / a text literal of N 'a's (for size limits; reports show the short form);
- `{ks}` is replaced by the file's keyspace name (`diff_<file stem>`), which is
  created fresh before the file runs and set as the session's keyspace.

A result is one of
  {"kind": "rows", "columns": [...], "types": [...], "rows": [[...], ...]}
  {"kind": "error", "code": 8704, "class": "InvalidRequest", "message": "..."}
  (an `@bind` statement's error also has "step": "prepare" or "execute", the request
  that was refused; compared when the recording has it)
  (an Unavailable also has "consistency", "required" and "alive", which are compared)
"""

import datetime
import decimal
import ipaddress
import json
import math
import re
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS_DIR = HERE / "corpus"
# Role and permission statements, run logged in as the default superuser on
# servers with PasswordAuthenticator and CassandraAuthorizer.
AUTH_CORPUS_DIR = HERE / "corpus_auth"
AUTH_LOGIN = ("cassandra", "cassandra")
EXPECTED_DIR = HERE / "expected"
KNOWN_FILE = HERE / "known_differences.md"
DEFAULT_PORT = 9042
REQUEST_TIMEOUT_S = 30
KEYSPACE_PREFIX = "diff_"

# Error codes of the native protocol spec (section 8), by driver exception class name,
# for exceptions the driver converts (and so loses `.code`).
ERROR_CODES = {
    "ServerError": 0x0000, "ProtocolException": 0x000A, "Unavailable": 0x1000,
    "OverloadedErrorMessage": 0x1001, "IsBootstrappingErrorMessage": 0x1002, "TruncateError": 0x1003,
    "WriteTimeout": 0x1100, "ReadTimeout": 0x1200, "ReadFailure": 0x1300, "FunctionFailure": 0x1400,
    "WriteFailure": 0x1500, "SyntaxException": 0x2000, "Unauthorized": 0x2100, "InvalidRequest": 0x2200,
    "ConfigurationException": 0x2300, "AlreadyExists": 0x2400, "PreparedQueryNotFound": 0x2500,
}
ERROR_NAMES = {
    0x0000: "ServerError", 0x000A: "ProtocolError", 0x1000: "Unavailable", 0x1001: "Overloaded",
    0x1002: "IsBootstrapping", 0x1003: "TruncateError", 0x1100: "WriteTimeout", 0x1200: "ReadTimeout",
    0x1300: "ReadFailure", 0x1400: "FunctionFailure", 0x1500: "WriteFailure", 0x2000: "SyntaxError",
    0x2100: "Unauthorized", 0x2200: "Invalid", 0x2300: "ConfigError", 0x2400: "AlreadyExists",
    0x2500: "Unprepared",
}


# --- corpus -------------------------------------------------------------------------------

class Statement:
    """One corpus statement with the directives that precede it."""

    def __init__(self, text, line, directives):
        self.text = text
        self.raw = text  # as written in the corpus ({ks} not substituted): the known-differences key
        self.line = line
        self.directives = directives

    @property
    def key(self):
        return normalize_ws(self.text)

    def flag(self, name):
        return name in self.directives

    def to_json(self):
        return {"statement": self.text, "line": self.line, "directives": self.directives}


def normalize_ws(text):
    return " ".join(text.split())


def split_statements(source):
    """Splits corpus text into Statements (see the module doc for the format)."""
    statements, buf, directives = [], [], {}
    start_line, line = None, 1
    i, n = 0, len(source)
    quote = None  # "'", '"' or "$$" while inside a literal

    def flush():
        nonlocal buf, directives, start_line
        text = "".join(buf).strip()
        if text:
            statements.append(Statement(text, start_line, directives))
            directives = {}
        buf, start_line = [], None

    while i < n:
        c = source[i]
        if quote:
            if source.startswith(quote, i):
                # a doubled quote inside a literal is an escaped quote
                if quote != "$$" and source.startswith(quote * 2, i):
                    buf.append(quote * 2)
                    i += 2
                    continue
                buf.append(quote)
                i += len(quote)
                quote = None
                continue
            if c == "\n":
                line += 1
            buf.append(c)
            i += 1
            continue
        if source.startswith("--", i) or source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            comment = source[i + 2:end].strip()
            match = re.match(r"@([\w-]+)\s*(.*)$", comment)
            if match and not "".join(buf).strip():
                directives[match.group(1)] = match.group(2).strip() or True
            i = end
            continue
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += source.count("\n", i, end)
            i = end
            continue
        if c in "'\"" or source.startswith("$$", i):
            quote = "$$" if source.startswith("$$", i) else c
            if start_line is None:
                start_line = line
            buf.append(quote)
            i += len(quote)
            continue
        if c == "\n":
            line += 1
        if not c.isspace() and start_line is None:
            start_line = line
        if c == ";":
            text = "".join(buf)
            in_batch = re.match(r"\s*BEGIN\s+(UNLOGGED\s+|COUNTER\s+|LOGGED\s+)?BATCH\b", text, re.I)
            if in_batch and not re.search(r"APPLY\s+BATCH\s*$", text, re.I):
                buf.append(c)
                i += 1
                continue
            flush()
            i += 1
            continue
        buf.append(c)
        i += 1
    flush()
    return statements


def corpus_files(names=None, auth=False):
    files = sorted((AUTH_CORPUS_DIR if auth else CORPUS_DIR).glob("*.cql"))
    if names:
        files = [f for f in files if f.stem in names or f.name in names]
    return files


def keyspace_for(path):
    return KEYSPACE_PREFIX + re.sub(r"\W", "_", Path(path).stem).lower()


def load_corpus(path):
    ks = keyspace_for(path)
    statements = split_statements(Path(path).read_text())
    for st in statements:
        st.text = st.text.replace("{ks}", ks)
    return ks, statements


# --- running ------------------------------------------------------------------------------

def parse_host(spec):
    host, _, port = spec.partition(":")
    return host, int(port or DEFAULT_PORT)


def connect(host, port, protocol_version=4, login=None):
    """A plain Cluster/Session to one node (no token awareness needed: one node),
    logged in as `login` (user, password) when given."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]),
                               request_timeout=REQUEST_TIMEOUT_S)
    extra = {}
    if login:
        from cassandra.auth import PlainTextAuthProvider
        extra["auth_provider"] = PlainTextAuthProvider(*login)
    cluster = Cluster([host], port=port, protocol_version=protocol_version,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=10, control_connection_timeout=10, **extra)
    return cluster, cluster.connect()


def fresh_keyspace(session, ks):
    session.execute(f"DROP KEYSPACE IF EXISTS {ks}")
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.set_keyspace(ks)


def run_file(session, path):
    """Runs one corpus file in its fresh keyspace; returns [(Statement, result)]."""
    ks, statements = load_corpus(path)
    fresh_keyspace(session, ks)
    out = [(st, execute(session, st)) for st in statements]
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {ks}")
    except Exception:  # noqa: BLE001 - cleanup only
        pass
    return out


def expand(text):
    """Expands the `{blob:N}` and `{text:N}` size macros."""
    def one(m):
        n = int(m.group(2))
        return "0x" + "00" * n if m.group(1) == "blob" else "'" + "a" * n + "'"
    return re.sub(r"\{(blob|text):(\d+)\}", one, text)


def levels(st):
    """Keyword arguments for a statement's `@consistency` and `@serial` directives."""
    from cassandra import ConsistencyLevel
    from cassandra.policies import FallthroughRetryPolicy

    out = {}
    if "consistency" in st.directives:
        out["consistency_level"] = ConsistencyLevel.name_to_value[st.directives["consistency"]]
        out["retry_policy"] = FallthroughRetryPolicy()
    if "serial" in st.directives:
        out["serial_consistency_level"] = ConsistencyLevel.name_to_value[st.directives["serial"]]
    return out


def execute(session, st):
    from cassandra.query import SimpleStatement

    fetch = int(st.directives.get("fetch", 100))
    if "bind" in st.directives:
        try:
            prepared = session.prepare(expand(st.text))
        except Exception as exc:  # noqa: BLE001 - a refused PREPARE is a result too
            return dict(error_result(exc), step="prepare")
    try:
        if "bind" in st.directives:
            bound = prepared.bind(json.loads(st.directives["bind"]))
            bound.fetch_size = fetch
            for name, value in levels(st).items():
                setattr(bound, name, value)
            rs = session.execute(bound)
        else:
            rs = session.execute(SimpleStatement(expand(st.text), fetch_size=fetch, **levels(st)))
        pages = None
        if st.flag("pages"):
            raw, pages = [], []
            while True:
                page = list(rs.current_rows)
                pages.append(len(page))
                raw.extend(page)
                if not rs.has_more_pages:
                    break
                rs.fetch_next_page()
        else:
            raw = rs  # pages through everything
        rows = [[to_plain(v) for v in row] for row in raw]
        cols = list(rs.column_names or [])
        types = [type_name(t) for t in (rs.column_types or [])]
        out = {"kind": "rows", "columns": cols, "types": types, "rows": rows}
        if pages is not None:
            out["pages"] = pages
        return out
    except Exception as exc:  # noqa: BLE001 - every failure is a result to compare
        out = error_result(exc)
        if "bind" in st.directives:
            out["step"] = "execute"
        return out


def error_result(exc):
    name = type(exc).__name__
    code = getattr(exc, "code", None)
    if not isinstance(code, int):
        code = ERROR_CODES.get(name)
    if name == "NoHostAvailable" and getattr(exc, "errors", None):
        inner = next(iter(exc.errors.values()))
        if isinstance(inner, Exception):
            return error_result(inner)
    message = str(getattr(exc, "message", None) or exc)
    inner = re.search(r'message="(.*)"$', message, re.S)  # "Error from server: code=... message="..."
    if inner:
        message = inner.group(1)
    cls = ERROR_NAMES.get(code, name) if code is not None else f"client:{name}"
    out = {"kind": "error", "code": code, "class": cls, "message": str(message)}
    if code == 0x1000 and hasattr(exc, "required_replicas"):
        from cassandra import ConsistencyLevel

        level = exc.consistency
        out["consistency"] = ConsistencyLevel.value_to_name.get(level, str(level))
        out["required"] = exc.required_replicas
        out["alive"] = exc.alive_replicas
    return out


def type_name(t):
    try:
        return t.cql_parameterized_type()
    except Exception:  # noqa: BLE001
        return getattr(t, "typename", str(t))


def to_plain(v):
    """A driver value as a JSON value that keeps its CQL kind apart (blob vs text...)."""
    from cassandra.util import Date, Duration, OrderedMapSerializedKey, SortedSet, Time

    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return {"float": repr(v)}
        return v
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, uuid.UUID):
        return {"uuid": str(v)}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"blob": bytes(v).hex()}
    if isinstance(v, datetime.datetime):
        return {"timestamp": v.isoformat()}
    if isinstance(v, datetime.date):
        return {"date": v.isoformat()}
    if isinstance(v, datetime.time):
        return {"time": v.isoformat()}
    if isinstance(v, Date):
        return {"date": str(v)}
    if isinstance(v, Time):
        return {"time": str(v)}
    if isinstance(v, Duration):
        return {"duration": [v.months, v.days, v.nanoseconds]}
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return {"inet": str(v)}
    if isinstance(v, (OrderedMapSerializedKey, dict)):
        return {"map": [[to_plain(k), to_plain(x)] for k, x in v.items()]}
    if isinstance(v, (SortedSet, set, frozenset)):
        return {"set": [to_plain(x) for x in v]}
    if isinstance(v, tuple):
        return {"tuple": [to_plain(x) for x in v]}
    if isinstance(v, list):
        return [to_plain(x) for x in v]
    return {"repr": repr(v)}


# --- comparing ----------------------------------------------------------------------------

def _close(a, b, tol):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= tol
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    return a == b


def _sort_key(row):
    return json.dumps(row, sort_keys=True)


def compare(st, expected, actual):
    """None when the results agree under the statement's directives, else a short reason."""
    if expected["kind"] != actual["kind"]:
        return f"expected {expected['kind']}, got {actual['kind']}"
    if expected["kind"] == "error":
        if expected["code"] != actual["code"]:
            return f"error class {expected['class']} vs {actual['class']}"
        if "step" in expected and expected["step"] != actual.get("step"):
            return f"refused at {expected['step']}, got {actual.get('step')}"
        for field in ("consistency", "required", "alive"):
            if expected.get(field) != actual.get(field):
                return f"{field} {expected.get(field)} vs {actual.get(field)}"
        return None
    if not st.flag("ignore-columns"):
        if expected["columns"] != actual["columns"]:
            return "column names differ"
        if expected["types"] != actual["types"]:
            return "column types differ"
    exp_rows, act_rows = expected["rows"], actual["rows"]
    if len(exp_rows) != len(act_rows):
        return f"row count {len(exp_rows)} vs {len(act_rows)}"
    if "pages" in expected and expected["pages"] != actual.get("pages"):
        return f"pages of {expected['pages']} rows vs {actual.get('pages')}"
    if st.flag("shape"):
        return None
    tol = float(st.directives.get("tolerance", 0) or 0)
    if st.flag("unordered"):
        exp_rows, act_rows = sorted(exp_rows, key=_sort_key), sorted(act_rows, key=_sort_key)
    if all(_close(e, a, tol) for e, a in zip(exp_rows, act_rows)):
        return None
    if not st.flag("unordered") and sorted(exp_rows, key=_sort_key) == sorted(act_rows, key=_sort_key):
        return "same rows, different order"
    return "row values differ"


# --- accepted differences -----------------------------------------------------------------

def load_known(path=KNOWN_FILE):
    """{(file name, normalized statement): reason} from known_differences.md.

    Entries live under a `## <file>.cql` heading as bullets:
    - `<statement>` — reason
    """
    known, current = {}, None
    if not Path(path).exists():
        return known
    for raw in Path(path).read_text().splitlines():
        heading = re.match(r"^##\s+(\S+\.cql)\s*$", raw)
        if heading:
            current = heading.group(1)
            continue
        entry = re.match(r"^-\s+`([^`]+)`\s*(?:[—–-]+\s*)?(.*)$", raw)
        if entry and current:
            known[(current, normalize_ws(entry.group(1)))] = entry.group(2).strip()
    return known


# --- expectations -------------------------------------------------------------------------

def expected_path(corpus_path):
    return EXPECTED_DIR / (Path(corpus_path).stem + ".json")


def save_expected(corpus_path, results, meta):
    EXPECTED_DIR.mkdir(exist_ok=True)
    doc = {"meta": meta, "corpus": Path(corpus_path).name,
           "results": [dict(st.to_json(), result=res) for st, res in results]}
    expected_path(corpus_path).write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


def load_expected(corpus_path):
    """[(normalized statement, result)] recorded for a corpus file, or None."""
    path = expected_path(corpus_path)
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    return [(normalize_ws(r["statement"]), r["result"]) for r in doc["results"]]


def diff_file(corpus_path, pairs, known):
    """Compares [(Statement, expected, actual)]; returns a list of mismatch dicts."""
    out = []
    name = Path(corpus_path).name
    for st, exp, act in pairs:
        reason = compare(st, exp, act)
        if reason is None:
            continue
        accepted = known.get((name, normalize_ws(st.raw)))
        out.append({"file": name, "line": st.line, "statement": st.text, "reason": reason,
                    "expected": exp, "actual": act, "known": accepted})
    return out


def compare_with_expected(session, corpus_path, known):
    """Runs a corpus file on `session` and diffs it against its recording.

    Returns (mismatches, problems): problems are corpus/recording drift."""
    recorded = load_expected(corpus_path)
    if recorded is None:
        return [], [f"{Path(corpus_path).name}: no recording in expected/ (run record.py)"]
    results = run_file(session, corpus_path)
    keys = [st.key for st, _ in results]
    if keys != [k for k, _ in recorded]:
        return [], [f"{Path(corpus_path).name}: recording is stale (corpus changed); re-run record.py"]
    pairs = [(st, exp, act) for (st, act), (_, exp) in zip(results, recorded)]
    return diff_file(corpus_path, pairs, known), []
