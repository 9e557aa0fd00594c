//! What the `scylla` crate does with the CQL types and features of issue 21,
//! against a real `varve server` process: user-defined types mapped to Rust
//! structs (the crate's derive macros), the driver's schema metadata after
//! ALTER TYPE (refreshed by SCHEMA_CHANGE events), `vector<T, n>` values,
//! query tracing read back with `Session::get_tracing_info`, and JSON.
//!
//! Each test starts its own node (see `support`) and connects a `Session`
//! as an application would. The Python driver covers the same ground in
//! tests/python/test_udt.py, test_vector.py, test_tracing.py and
//! test_json.py; the answers Cassandra 5.0.4 gives are in
//! tests/differential/expected/17_issue21_udt.json, 19_issue21_vector.json,
//! 16_issue21_json.json and 22_issue21_tracing.json.
//! Run `cargo build -p varve` first; the binary is never built here.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::metadata::{ColumnType, NativeType};
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::observability::tracing::TracingInfo;
use scylla::response::query_result::QueryResult;
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::{CellWriter, WrittenCellProof};
use scylla::serialize::SerializationError;
use scylla::statement::unprepared::Statement;
use scylla::value::{CqlValue, Row};
use scylla::{DeserializeValue, SerializeValue};
use support::sessions::{eventually, TestResult};
use support::VarveProcess;

/// The keyspace every test works in.
const KEYSPACE: &str = "ks";
const CREATE_KEYSPACE: &str = "CREATE KEYSPACE ks WITH replication = \
     {'class': 'SimpleStrategy', 'replication_factor': 1}";
/// How long the driver may take to apply a SCHEMA_CHANGE event to its
/// metadata, or a trace to become readable.
const EVENTUALLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a test looks for a trace again.
const TRACE_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// A session on `node`, with the keyspace [`KEYSPACE`] created and in use.
async fn connect(node: &VarveProcess) -> Session {
    let session = SessionBuilder::new()
        .known_node(node.known_node())
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to varve: {e}\n{}", node.log_tail()));
    session
        .query_unpaged(CREATE_KEYSPACE, ())
        .await
        .expect("CREATE KEYSPACE");
    session.use_keyspace(KEYSPACE, false).await.expect("USE ks");
    session
}

/// Runs each schema statement, in order.
async fn run_all(session: &Session, statements: &[&str]) -> TestResult {
    for cql in statements {
        session.query_unpaged(*cql, ()).await?;
    }
    Ok(())
}

/// Stops the node and checks that SIGTERM made it exit cleanly (no panic
/// on the way).
fn stop_cleanly(session: Session, mut node: VarveProcess) {
    drop(session);
    let status = node.stop();
    assert!(
        status.success(),
        "varve exited with {status} on SIGTERM:\n{}",
        node.log_tail()
    );
}

/// The server's error code and message, or `None` if `error` is not an
/// error answer from the server.
fn db_error(error: &ExecutionError) -> Option<(&DbError, &str)> {
    match error {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(code, message)) => {
            Some((code, message.as_str()))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// User-defined types

const CREATE_ADDRESS: &str = "CREATE TYPE address (street text, zip int)";
const CREATE_PERSON: &str =
    "CREATE TYPE person (name text, home frozen<address>, past list<frozen<address>>)";
/// A frozen UDT in the clustering key, a frozen nested one, a non-frozen
/// one, and UDTs inside a map and a tuple.
const CREATE_PEOPLE: &str = "CREATE TABLE people (k int, c frozen<address>, \
     p frozen<person>, addr address, by_tag map<text, frozen<address>>, \
     pair tuple<int, frozen<address>>, PRIMARY KEY (k, c))";

/// `address`, its fields declared in the other order than the type's: the
/// derived code matches them by name.
#[derive(Clone, Debug, PartialEq, SerializeValue, DeserializeValue)]
struct Address {
    zip: Option<i32>,
    street: Option<String>,
}

/// `person`: a nested UDT and a list of UDTs.
#[derive(Clone, Debug, PartialEq, SerializeValue, DeserializeValue)]
struct Person {
    name: String,
    home: Address,
    past: Vec<Address>,
}

/// One row of `people` past its partition key.
type PeopleRow = (
    Address,
    Person,
    Option<Address>,
    BTreeMap<String, Address>,
    (i32, Address),
);

fn address(street: Option<&str>, zip: Option<i32>) -> Address {
    Address {
        zip,
        street: street.map(str::to_string),
    }
}

/// A row of `people` for clustering key `c`, its values made from `seed`.
fn people_row(c: Address, seed: i32) -> PeopleRow {
    let person = Person {
        name: format!("person {seed}"),
        home: address(Some("home st"), Some(seed)),
        past: vec![address(Some("old st"), None), address(None, Some(-seed))],
    };
    let tags = BTreeMap::from([
        ("work".to_string(), address(Some("office"), Some(seed))),
        ("é".to_string(), address(None, None)),
    ]);
    (
        c,
        person,
        Some(address(Some("mail st"), Some(seed))),
        tags,
        (seed, address(Some("pair"), Some(1))),
    )
}

/// The field names of a UDT value read as a `CqlValue`.
fn udt_field_names(value: &CqlValue) -> Vec<&str> {
    match value {
        CqlValue::UserDefinedType { fields, .. } => {
            fields.iter().map(|(name, _)| name.as_str()).collect()
        }
        other => panic!("not a UDT value: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_defined_types_map_to_derived_structs() -> TestResult {
    let node = VarveProcess::start();
    let session = connect(&node).await;
    run_all(&session, &[CREATE_ADDRESS, CREATE_PERSON, CREATE_PEOPLE]).await?;

    let insert = session
        .prepare("INSERT INTO people (k, c, p, addr, by_tag, pair) VALUES (?, ?, ?, ?, ?, ?)")
        .await?;
    // The marker of `c` is the UDT, its fields in the type's order.
    match insert
        .get_variable_col_specs()
        .get_by_index(1)
        .map(|s| s.typ())
    {
        Some(ColumnType::UserDefinedType { definition, .. }) => {
            assert_eq!(
                (definition.keyspace.as_ref(), definition.name.as_ref()),
                (KEYSPACE, "address")
            );
            let names: Vec<&str> = definition
                .field_types
                .iter()
                .map(|(n, _)| n.as_ref())
                .collect();
            assert_eq!(names, ["street", "zip"]);
        }
        other => panic!("marker of c: {other:?}"),
    }
    let keys = [
        address(Some("b"), Some(2)),
        address(Some("a"), Some(9)),
        address(Some("a"), None),
    ];
    let written: Vec<PeopleRow> = keys
        .iter()
        .zip(1..)
        .map(|(c, seed)| people_row(c.clone(), seed))
        .collect();
    for (c, p, addr, by_tag, pair) in &written {
        session
            .execute_unpaged(&insert, (1, c, p, addr, by_tag, pair))
            .await?;
    }

    let select = session
        .prepare("SELECT c, p, addr, by_tag, pair FROM people WHERE k = ?")
        .await?;
    let read: Vec<PeopleRow> = session
        .execute_unpaged(&select, (1,))
        .await?
        .into_rows_result()?
        .rows::<PeopleRow>()?
        .collect::<Result<_, _>>()?;
    // Clustering order compares field by field, a null field first.
    let mut want = written.clone();
    want.sort_by_key(|row| (row.0.street.clone(), row.0.zip));
    assert_eq!(read, want);

    // One field of the non-frozen UDT, bound; the other field stays.
    let update = session
        .prepare("UPDATE people SET addr.zip = ? WHERE k = ? AND c = ?")
        .await?;
    session.execute_unpaged(&update, (99, 1, &keys[0])).await?;
    let fields = session
        .prepare("SELECT addr, addr.zip, p.home.street FROM people WHERE k = ? AND c = ?")
        .await?;
    let (addr, zip, home_street): (Address, i32, String) = session
        .execute_unpaged(&fields, (1, &keys[0]))
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!(addr, address(Some("mail st"), Some(99)));
    assert_eq!((zip, home_street.as_str()), (99, "home st"));

    // Read without a Rust type: names and order are the type's.
    let row: Row = session
        .query_unpaged(
            "SELECT p FROM people WHERE k = 1 AND c = {street: 'b', zip: 2}",
            (),
        )
        .await?
        .into_rows_result()?
        .single_row()?;
    let person = row.columns[0].as_ref().expect("p is set");
    let CqlValue::UserDefinedType {
        keyspace,
        name,
        fields,
    } = person
    else {
        panic!("p read as {person:?}");
    };
    assert_eq!((keyspace.as_str(), name.as_str()), (KEYSPACE, "person"));
    assert_eq!(udt_field_names(person), ["name", "home", "past"]);
    assert_eq!(fields[0].1, Some(CqlValue::Text("person 1".into())));
    let home = fields[1].1.as_ref().expect("home is set");
    assert_eq!(udt_field_names(home), ["street", "zip"]);
    match &fields[2].1 {
        Some(CqlValue::List(past)) => {
            assert_eq!(past.len(), 2);
            assert!(past.iter().all(|a| udt_field_names(a) == ["street", "zip"]));
        }
        other => panic!("past read as {other:?}"),
    }

    stop_cleanly(session, node);
    Ok(())
}

// ---------------------------------------------------------------------------
// Schema metadata after ALTER TYPE

const CREATE_VERSIONED: &str = "CREATE TYPE versioned (f int)";
const CREATE_HOLDERS: &str =
    "CREATE TABLE holders (k int PRIMARY KEY, v frozen<versioned>, loose versioned)";
const ALTER_ADD: &str = "ALTER TYPE versioned ADD f2 int";
const ALTER_RENAME: &str = "ALTER TYPE versioned RENAME f TO g";

/// How often the second session of [`schema_metadata_follows_alter_type`]
/// re-reads the keyspaces that SCHEMA_CHANGE events named.
const WATCHER_REFRESH_INTERVAL: Duration = Duration::from_millis(300);

/// `versioned` as created.
#[derive(Clone, Debug, PartialEq, SerializeValue, DeserializeValue)]
struct VersionedV1 {
    f: Option<i32>,
}

/// `versioned` after [`ALTER_ADD`] and [`ALTER_RENAME`].
#[derive(Clone, Debug, PartialEq, SerializeValue, DeserializeValue)]
struct VersionedV2 {
    g: Option<i32>,
    f2: Option<i32>,
}

/// `versioned` after the ALTERs, as code that does not know of `f2` yet
/// has it.
#[derive(Clone, Debug, PartialEq, SerializeValue, DeserializeValue)]
struct VersionedG {
    g: Option<i32>,
}

/// `(name, type)` of each field of `ks.udt` in the driver's metadata, or
/// `None` if the driver does not know the type.
fn metadata_fields(session: &Session, udt: &str) -> Option<Vec<(String, ColumnType<'static>)>> {
    let state = session.get_cluster_state();
    let definition = state
        .get_keyspace(KEYSPACE)?
        .user_defined_types
        .get(udt)?
        .clone();
    Some(
        definition
            .field_types
            .iter()
            .map(|(name, typ)| (name.to_string(), typ.clone()))
            .collect(),
    )
}

/// `[(name, int)]` for each of `names`.
fn int_fields(names: &[&str]) -> Vec<(String, ColumnType<'static>)> {
    names
        .iter()
        .map(|n| (n.to_string(), ColumnType::Native(NativeType::Int)))
        .collect()
}

/// The UDT fields and frozenness of column `column` of `ks.table` in the
/// driver's metadata.
fn column_udt(session: &Session, table: &str, column: &str) -> (Vec<String>, bool) {
    let state = session.get_cluster_state();
    let typ = &state
        .get_keyspace(KEYSPACE)
        .and_then(|ks| ks.tables.get(table))
        .and_then(|t| t.columns.get(column))
        .unwrap_or_else(|| panic!("{table}.{column} not in the driver's metadata"))
        .typ;
    match typ {
        ColumnType::UserDefinedType { frozen, definition } => (
            definition
                .field_types
                .iter()
                .map(|(n, _)| n.to_string())
                .collect(),
            *frozen,
        ),
        other => panic!("{table}.{column} has type {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_metadata_follows_alter_type() -> TestResult {
    let node = VarveProcess::start();
    let session = connect(&node).await;
    run_all(&session, &[CREATE_VERSIONED, CREATE_HOLDERS]).await?;
    // The session that ran the DDL refreshed its metadata once the schema
    // agreed (the driver's default). A second application instance, which
    // runs no DDL, learns of changes from SCHEMA_CHANGE events alone: the
    // driver notes the keyspace each event names and re-reads just those
    // keyspaces at its next metadata tick (60 s by default, shortened here;
    // with no event, a tick reads nothing).
    let watcher = SessionBuilder::new()
        .known_node(node.known_node())
        .cluster_metadata_refresh_interval(WATCHER_REFRESH_INTERVAL)
        .build()
        .await?;
    for s in [&session, &watcher] {
        assert_eq!(metadata_fields(s, "versioned"), Some(int_fields(&["f"])));
        assert_eq!(column_udt(s, "holders", "v"), (vec!["f".into()], true));
        assert_eq!(column_udt(s, "holders", "loose"), (vec!["f".into()], false));
    }

    let old = VersionedV1 { f: Some(7) };
    session
        .query_unpaged(
            "INSERT INTO holders (k, v, loose) VALUES (?, ?, ?)",
            (1, &old, &old),
        )
        .await?;
    // Prepared before the ALTER, as an application prepares at startup.
    let select_early = session
        .prepare("SELECT v, loose FROM holders WHERE k = ?")
        .await?;

    run_all(&session, &[ALTER_ADD, ALTER_RENAME]).await?;
    let want = int_fields(&["g", "f2"]);
    assert_eq!(metadata_fields(&session, "versioned").as_ref(), Some(&want));
    let followed = eventually(EVENTUALLY_TIMEOUT, || {
        std::future::ready(metadata_fields(&watcher, "versioned").as_ref() == Some(&want))
    })
    .await;
    assert!(
        followed,
        "after ALTER TYPE the other session's metadata still shows {:?}",
        metadata_fields(&watcher, "versioned")
    );
    session.refresh_metadata().await?;
    let new_names = vec!["g".to_string(), "f2".to_string()];
    for s in [&session, &watcher] {
        assert_eq!(metadata_fields(s, "versioned").as_ref(), Some(&want));
        assert_eq!(column_udt(s, "holders", "v"), (new_names.clone(), true));
        assert_eq!(
            column_udt(s, "holders", "loose"),
            (new_names.clone(), false)
        );
    }

    // The row written before the ALTER reads with the new names, the added
    // field null; the old struct no longer matches the result's type.
    let result = session
        .query_unpaged("SELECT v, loose FROM holders WHERE k = 1", ())
        .await?
        .into_rows_result()?;
    let (v, loose): (VersionedV2, VersionedV2) = result.single_row()?;
    let upgraded = VersionedV2 {
        g: Some(7),
        f2: None,
    };
    assert_eq!((&v, &loose), (&upgraded, &upgraded));
    assert!(result.single_row::<(VersionedV1, VersionedV1)>().is_err());
    // The statement prepared before the ALTER answers with the type as it
    // is now (Cassandra invalidates it; the driver prepares it again).
    let (v, loose): (VersionedV2, VersionedV2) = session
        .execute_unpaged(&select_early, (1,))
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!((&v, &loose), (&upgraded, &upgraded));
    // The added field of the non-frozen value, set on its own.
    session
        .query_unpaged("UPDATE holders SET loose.f2 = ? WHERE k = ?", (5, 1))
        .await?;
    let (v, loose): (VersionedV2, VersionedV2) = session
        .execute_unpaged(&select_early, (1,))
        .await?
        .into_rows_result()?
        .single_row()?;
    let set_f2 = VersionedV2 {
        g: Some(7),
        f2: Some(5),
    };
    assert_eq!((v, loose), (upgraded.clone(), set_f2));

    let new = VersionedV2 {
        g: Some(1),
        f2: Some(2),
    };
    let insert = session
        .prepare("INSERT INTO holders (k, v, loose) VALUES (?, ?, ?)")
        .await?;
    session.execute_unpaged(&insert, (2, &new, &new)).await?;
    let (v, loose): (VersionedV2, VersionedV2) = session
        .query_unpaged("SELECT v, loose FROM holders WHERE k = 2", ())
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!((v, loose), (new.clone(), new));

    // A struct without the added field: the driver leaves the trailing
    // field out of the value it sends, which means null.
    let short = VersionedG { g: Some(3) };
    session
        .execute_unpaged(&insert, (3, &short, &short))
        .await?;
    let (v, loose): (VersionedV2, VersionedV2) = session
        .query_unpaged("SELECT v, loose FROM holders WHERE k = 3", ())
        .await?
        .into_rows_result()?
        .single_row()?;
    let padded = VersionedV2 {
        g: Some(3),
        f2: None,
    };
    assert_eq!((v, loose), (padded.clone(), padded));

    // Dropped, the type leaves the metadata of both sessions.
    run_all(&session, &["DROP TABLE holders", "DROP TYPE versioned"]).await?;
    assert_eq!(metadata_fields(&session, "versioned"), None);
    let dropped = eventually(EVENTUALLY_TIMEOUT, || {
        std::future::ready(metadata_fields(&watcher, "versioned").is_none())
    })
    .await;
    assert!(
        dropped,
        "the other session's metadata still has the dropped type"
    );

    drop(watcher);
    stop_cleanly(session, node);
    Ok(())
}

// ---------------------------------------------------------------------------
// Vectors

const CREATE_VECS: &str =
    "CREATE TABLE vecs (k int PRIMARY KEY, v vector<float, 3>, t vector<text, 2>)";
/// The dimension of `vecs.v`.
const V_DIMENSIONS: u16 = 3;

/// A cell of raw bytes, whatever the marker's type: lets a test send what
/// the driver itself would refuse to serialize.
struct RawCell(Vec<u8>);

impl SerializeValue for RawCell {
    fn serialize<'b>(
        &self,
        _typ: &ColumnType,
        writer: CellWriter<'b>,
    ) -> Result<WrittenCellProof<'b>, SerializationError> {
        writer.set_value(&self.0).map_err(SerializationError::new)
    }
}

/// `vector<elem, dimensions>` as the driver types it.
fn vector_type(elem: NativeType, dimensions: u16) -> ColumnType<'static> {
    ColumnType::Vector {
        typ: Box::new(ColumnType::Native(elem)),
        dimensions,
    }
}

/// The rows of `vecs`, by key.
async fn vecs_rows(session: &Session) -> Result<Vec<(i32, Vec<f32>)>, Box<dyn std::error::Error>> {
    let mut rows: Vec<(i32, Vec<f32>)> = session
        .query_unpaged("SELECT k, v FROM vecs", ())
        .await?
        .into_rows_result()?
        .rows::<(i32, Vec<f32>)>()?
        .collect::<Result<_, _>>()?;
    rows.sort_by_key(|(k, _)| *k);
    Ok(rows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_bind_and_decode() -> TestResult {
    let node = VarveProcess::start();
    let session = connect(&node).await;
    run_all(&session, &[CREATE_VECS]).await?;

    let insert = session
        .prepare("INSERT INTO vecs (k, v, t) VALUES (?, ?, ?)")
        .await?;
    let markers: Vec<ColumnType> = insert
        .get_variable_col_specs()
        .iter()
        .map(|s| s.typ().clone())
        .collect();
    assert_eq!(markers[1], vector_type(NativeType::Float, V_DIMENSIONS));
    assert_eq!(markers[2], vector_type(NativeType::Text, 2));

    let texts = vec!["".to_string(), "é and more".to_string()];
    session
        .execute_unpaged(&insert, (1, vec![1.0f32, 2.0, 3.0], &texts))
        .await?;
    session
        .execute_unpaged(
            &insert,
            (2, [1.5f32, 2.5, 3.5].as_slice(), None::<Vec<String>>),
        )
        .await?;

    let (v, t): (Vec<f32>, Vec<String>) = session
        .query_unpaged("SELECT v, t FROM vecs WHERE k = 1", ())
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!((v, t), (vec![1.0, 2.0, 3.0], texts.clone()));
    // Without a Rust type: CqlValue::Vector of the element values.
    let row: Row = session
        .query_unpaged("SELECT v, t FROM vecs WHERE k = 2", ())
        .await?
        .into_rows_result()?
        .single_row()?;
    let floats = [1.5f32, 2.5, 3.5].map(CqlValue::Float).to_vec();
    assert_eq!(row.columns, [Some(CqlValue::Vector(floats)), None]);

    // The table's column types in the driver's metadata.
    session.refresh_metadata().await?;
    let state = session.get_cluster_state();
    let table = state
        .get_keyspace(KEYSPACE)
        .and_then(|ks| ks.tables.get("vecs"))
        .expect("vecs in the driver's metadata");
    assert_eq!(
        table.columns["v"].typ,
        vector_type(NativeType::Float, V_DIMENSIONS)
    );
    assert_eq!(table.columns["t"].typ, vector_type(NativeType::Text, 2));

    // The query vector of a similarity function, bound from Rust.
    let similar = session
        .prepare("SELECT k, similarity_cosine(v, ?) FROM vecs WHERE k IN (1, 2)")
        .await?;
    let scores: Vec<(i32, f32)> = session
        .execute_unpaged(&similar, (vec![1.0f32, 2.0, 3.0],))
        .await?
        .into_rows_result()?
        .rows::<(i32, f32)>()?
        .collect::<Result<_, _>>()?;
    // Recorded from Cassandra 5.0.4 (tests/python/test_vector.py).
    assert_eq!(scores, [(1, 1.0), (2, 0.998_707_4)]);

    stop_cleanly(session, node);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_of_the_wrong_dimension_are_refused() -> TestResult {
    let node = VarveProcess::start();
    let session = connect(&node).await;
    run_all(&session, &[CREATE_VECS]).await?;
    let insert = session
        .prepare("INSERT INTO vecs (k, v) VALUES (?, ?)")
        .await?;
    session
        .execute_unpaged(&insert, (1, vec![1.0f32, 2.0, 3.0]))
        .await?;

    // The driver checks the dimension itself, before sending.
    let error = session
        .execute_unpaged(&insert, (2, vec![1.0f32, 2.0]))
        .await
        .expect_err("a 2-element vector bound to vector<float, 3>");
    assert!(matches!(error, ExecutionError::BadQuery(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("does not match the number of declared dimensions"),
        "{error}"
    );

    // The server checks raw bytes: 8 bytes are two floats, not three.
    let two_floats: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|f| f.to_be_bytes()).collect();
    let error = session
        .execute_unpaged(&insert, (3, RawCell(two_floats.clone())))
        .await
        .expect_err("8 bytes bound to vector<float, 3>");
    let (code, message) =
        db_error(&error).unwrap_or_else(|| panic!("not a server error: {error:?}"));
    assert_eq!(code, &DbError::Invalid, "{message}");
    assert!(message.contains("expected 12 bytes"), "{message}");
    // The same for the bound query vector of a similarity function.
    let similar = session
        .prepare("SELECT similarity_cosine(v, ?) FROM vecs WHERE k = 1")
        .await?;
    let error = session
        .execute_unpaged(&similar, (RawCell(two_floats),))
        .await
        .expect_err("8 bytes bound as a vector<float, 3> argument");
    let (code, message) =
        db_error(&error).unwrap_or_else(|| panic!("not a server error: {error:?}"));
    assert_eq!(code, &DbError::Invalid, "{message}");

    // And a literal of the wrong dimension.
    let error = session
        .query_unpaged("INSERT INTO vecs (k, v) VALUES (4, [1.0, 2.0])", ())
        .await
        .expect_err("a 2-element literal for vector<float, 3>");
    let (code, message) =
        db_error(&error).unwrap_or_else(|| panic!("not a server error: {error:?}"));
    assert_eq!(code, &DbError::Invalid, "{message}");
    assert!(
        message.contains("expected 3 elements, but given 2"),
        "{message}"
    );

    // Nothing was written, and the node keeps serving.
    assert_eq!(vecs_rows(&session).await?, [(1, vec![1.0, 2.0, 3.0])]);
    stop_cleanly(session, node);
    Ok(())
}

// ---------------------------------------------------------------------------
// Tracing

const CREATE_TRACED: &str = "CREATE TABLE traced (k int PRIMARY KEY, v text)";
const TRACED_INSERT: &str = "INSERT INTO traced (k, v) VALUES (1, 'one')";

/// The trace of the traced request that answered `result`, once
/// `get_tracing_info` finds it (Varve writes it before answering,
/// Cassandra a little later).
async fn trace_of(session: &Session, result: &QueryResult) -> TracingInfo {
    let id = result
        .tracing_id()
        .expect("a traced request's answer carries its id");
    let deadline = Instant::now() + EVENTUALLY_TIMEOUT;
    loop {
        match session.get_tracing_info(&id).await {
            Ok(info) => return info,
            Err(e) if Instant::now() > deadline => {
                panic!("no trace of session {id} in system_traces: {e}")
            }
            Err(_) => tokio::time::sleep(TRACE_POLL_INTERVAL).await,
        }
    }
}

/// The activity of each event of `info`.
fn activities(info: &TracingInfo) -> Vec<&str> {
    info.events
        .iter()
        .filter_map(|e| e.activity.as_deref())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traced_requests_are_readable_from_system_traces() -> TestResult {
    let node = VarveProcess::start();
    let session = connect(&node).await;
    run_all(&session, &[CREATE_TRACED]).await?;

    let mut insert = Statement::new(TRACED_INSERT);
    insert.set_tracing(true);
    let result = session.query_unpaged(insert, ()).await?;
    let info = trace_of(&session, &result).await;
    assert_eq!(info.command.as_deref(), Some("QUERY"));
    assert_eq!(info.request.as_deref(), Some("Execute CQL3 query"));
    assert_eq!(info.coordinator, Some(node.addr.ip()));
    assert_eq!(info.client, Some(node.addr.ip()));
    assert!(
        info.started_at.is_some() && info.duration.is_some(),
        "{info:?}"
    );
    let parameters = info.parameters.clone().unwrap_or_default();
    assert_eq!(
        parameters.get("query").map(String::as_str),
        Some(TRACED_INSERT)
    );
    // The driver's default consistency.
    assert_eq!(
        parameters.get("consistency_level").map(String::as_str),
        Some("LOCAL_QUORUM")
    );
    let steps = activities(&info);
    assert!(steps.iter().any(|a| a.starts_with("Parsing ")), "{steps:?}");
    assert!(steps.contains(&"Adding to traced memtable"), "{steps:?}");
    assert_eq!(info.nodes(), [node.addr.ip()]);

    // A traced prepared read: the bound value is a parameter.
    let mut select = session.prepare("SELECT v FROM traced WHERE k = ?").await?;
    select.set_tracing(true);
    let result = session.execute_unpaged(&select, (1,)).await?;
    let info = trace_of(&session, &result).await;
    let (v,): (String,) = result.into_rows_result()?.single_row()?;
    assert_eq!(v, "one");
    assert_eq!(info.request.as_deref(), Some("Execute CQL3 prepared query"));
    let parameters = info.parameters.clone().unwrap_or_default();
    assert_eq!(
        parameters.get("bound_var_0_k").map(String::as_str),
        Some("1")
    );
    let steps = activities(&info);
    assert!(
        steps.contains(&"Executing single-partition query on traced"),
        "{steps:?}"
    );
    assert!(
        steps.contains(&"Read 1 live rows and 0 tombstone cells"),
        "{steps:?}"
    );

    // An untraced request has no id.
    let plain = session
        .query_unpaged("SELECT v FROM traced WHERE k = 1", ())
        .await?;
    assert_eq!(plain.tracing_id(), None);

    stop_cleanly(session, node);
    Ok(())
}

// ---------------------------------------------------------------------------
// JSON

const CREATE_DOCS: &str = "CREATE TABLE docs (k int PRIMARY KEY, tx text, l list<int>, \
     m map<int, text>, a frozen<address>, v vector<float, 3>)";

/// The one text value of `cql` (a `SELECT JSON`, unprepared).
async fn json_text(session: &Session, cql: &str) -> Result<String, Box<dyn std::error::Error>> {
    let (text,): (String,) = session
        .query_unpaged(cql, ())
        .await?
        .into_rows_result()?
        .single_row()?;
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_in_and_out_as_text() -> TestResult {
    let node = VarveProcess::start();
    let session = connect(&node).await;
    run_all(&session, &[CREATE_ADDRESS, CREATE_DOCS]).await?;

    // INSERT ... JSON ?: one text marker named [json].
    let insert = session.prepare("INSERT INTO docs JSON ?").await?;
    let specs: Vec<(String, ColumnType)> = insert
        .get_variable_col_specs()
        .iter()
        .map(|s| (s.name().to_string(), s.typ().clone()))
        .collect();
    assert_eq!(
        specs,
        [("[json]".to_string(), ColumnType::Native(NativeType::Text))]
    );
    let doc = serde_json::json!({
        "k": 1,
        "tx": "q\"é",
        "l": [3, 1],
        "m": {"2": "b"},
        "a": {"street": "x", "zip": 1},
        "v": [1.0, 2.5, 3.0],
    });
    session.execute_unpaged(&insert, (doc.to_string(),)).await?;

    let select = session
        .prepare("SELECT JSON * FROM docs WHERE k = ?")
        .await?;
    let text = json_text(&session, "SELECT JSON * FROM docs WHERE k = 1").await?;
    let read: serde_json::Value = serde_json::from_str(&text)?;
    let read = read
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {text}"));
    for (field, want) in doc.as_object().expect("an object") {
        assert_eq!(read.get(field), Some(want), "field {field} of {text}");
    }
    assert_eq!(read.len(), doc.as_object().map_or(0, |d| d.len()), "{text}");
    // Prepared, the same text in the one text column [json].
    let guard = select.get_current_result_set_col_specs();
    let columns: Vec<(String, ColumnType)> = guard
        .get()
        .iter()
        .map(|s| (s.name().to_string(), s.typ().clone()))
        .collect();
    assert_eq!(columns, specs);
    let (prepared_text,): (String,) = session
        .execute_unpaged(&select, (1,))
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!(prepared_text, text);

    // toJson() of a UDT and a vector, as Cassandra writes them.
    let (a, v): (String, String) = session
        .query_unpaged("SELECT toJson(a), toJson(v) FROM docs WHERE k = 1", ())
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!(a, r#"{"street": "x", "zip": 1}"#);
    assert_eq!(v, "[1.0, 2.5, 3.0]");

    // fromJson(?) of a UDT and a vector, read back typed.
    let from_json = session
        .prepare("INSERT INTO docs (k, a, v) VALUES (?, fromJson(?), fromJson(?))")
        .await?;
    session
        .execute_unpaged(&from_json, (2, r#"{"zip": 5}"#, "[-1.5, 0.25, 3000]"))
        .await?;
    let (a, v): (Address, Vec<f32>) = session
        .query_unpaged("SELECT a, v FROM docs WHERE k = 2", ())
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!((a, v), (address(None, Some(5)), vec![-1.5, 0.25, 3000.0]));
    let text = json_text(&session, "SELECT JSON k, a, v FROM docs WHERE k = 2").await?;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text)?,
        serde_json::json!({"k": 2, "a": {"street": null, "zip": 5}, "v": [-1.5, 0.25, 3000.0]}),
        "{text}"
    );

    stop_cleanly(session, node);
    Ok(())
}
