//! The `scylla` crate (crates.io) against a real `varve server` process.
//!
//! Each test starts its own node (see `support`), connects a `Session`
//! exactly as an application written for Cassandra would, and checks one
//! capability: prepared statements with token-aware routing and the ring in
//! the cluster metadata, paging, batches, and lightweight transactions
//! (marked in PREPARED by ScyllaDB's LWT extension, which the driver takes).
//! Run `cargo build -p varve` first; the binary is never built here.

mod support;

use std::collections::BTreeSet;

use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::Compression;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::routing::Token;
use scylla::statement::batch::{Batch, BatchType};
use scylla::value::{CqlValue, Row};
use support::VarveProcess;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Rows written for the paging test: several pages of `PAGE_SIZE`, and a
/// last page that is not full.
const PAGED_ROWS: i32 = 437;
const PAGE_SIZE: i32 = 50;

const CREATE_KEYSPACE: &str = "CREATE KEYSPACE ks WITH replication = \
     {'class': 'SimpleStrategy', 'replication_factor': 1}";
const CREATE_TABLE: &str = "CREATE TABLE ks.t (k1 int, k2 text, c int, v text, \
     PRIMARY KEY ((k1, k2), c))";

/// A session on `node` with the keyspace and table of these tests.
async fn connect_with_schema(node: &VarveProcess, compression: Option<Compression>) -> Session {
    let session = SessionBuilder::new()
        .known_node(node.known_node())
        .compression(compression)
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to varve: {e}\n{}", node.log_tail()));
    session
        .query_unpaged(CREATE_KEYSPACE, ())
        .await
        .expect("CREATE KEYSPACE");
    session
        .query_unpaged(CREATE_TABLE, ())
        .await
        .expect("CREATE TABLE");
    session.use_keyspace("ks", false).await.expect("USE ks");
    session
}

/// Stops the node and checks that SIGTERM made it exit cleanly.
fn stop_cleanly(mut node: VarveProcess) {
    let status = node.stop();
    assert!(
        status.success(),
        "varve exited with {status} on SIGTERM:\n{}",
        node.log_tail()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_are_token_aware() -> TestResult {
    let node = VarveProcess::start();
    let session = connect_with_schema(&node, None).await;

    let insert = session
        .prepare("INSERT INTO t (k1, k2, c, v) VALUES (?, ?, ?, ?)")
        .await?;
    let select = session
        .prepare("SELECT c, v FROM t WHERE k1 = ? AND k2 = ?")
        .await?;
    assert!(
        insert.is_token_aware(),
        "INSERT must carry partition key indexes"
    );
    assert!(
        select.is_token_aware(),
        "SELECT must carry partition key indexes"
    );
    // Keys with negative, maximal and non-ASCII components.
    let keys = [(7, "seven"), (8, "eight"), (-1, "-"), (i32::MAX, "ünïcode")];
    for (k1, k2) in keys {
        for c in 0..3 {
            session
                .execute_unpaged(&insert, (k1, k2, c, format!("v{c}")))
                .await?;
        }
    }

    let rows: Vec<(i32, String)> = session
        .execute_unpaged(&select, (7, "seven"))
        .await?
        .into_rows_result()?
        .rows::<(i32, String)>()?
        .collect::<Result<_, _>>()?;
    let want: Vec<(i32, String)> = (0..3).map(|c| (c, format!("v{c}"))).collect();
    assert_eq!(rows, want);

    // The driver's Murmur3 token of the bound key is the server's token().
    for (k1, k2) in keys {
        let (server,): (i64,) = session
            .query_unpaged(
                "SELECT token(k1, k2) FROM t WHERE k1 = ? AND k2 = ? LIMIT 1",
                (k1, k2),
            )
            .await?
            .into_rows_result()?
            .single_row::<(i64,)>()?;
        let by_insert = insert
            .calculate_token(&(k1, k2, 0, "x"))?
            .expect("token-aware INSERT");
        let by_select = select
            .calculate_token(&(k1, k2))?
            .expect("token-aware SELECT");
        assert_eq!(by_insert.value(), server, "INSERT token of ({k1}, {k2:?})");
        assert_eq!(by_select.value(), server, "SELECT token of ({k1}, {k2:?})");
    }

    // The ring the driver built from system.local holds exactly the node's tokens.
    session.refresh_metadata().await?;
    let state = session.get_cluster_state();
    let nodes = state.get_nodes_info();
    assert_eq!(nodes.len(), 1, "one node expected, got {nodes:?}");
    let local = &nodes[0];
    assert_eq!(local.address.ip(), node.addr.ip());
    assert_eq!(local.address.port(), node.addr.port());
    assert_eq!(local.datacenter.as_deref(), Some("datacenter1"));
    let (tokens,): (Vec<String>,) = session
        .query_unpaged("SELECT tokens FROM system.local", ())
        .await?
        .into_rows_result()?
        .single_row::<(Vec<String>,)>()?;
    let server_tokens: BTreeSet<i64> =
        tokens.iter().map(|t| t.parse()).collect::<Result<_, _>>()?;
    assert!(!server_tokens.is_empty(), "system.local has no tokens");
    let ring = state.replica_locator().ring();
    let ring_tokens: BTreeSet<i64> = ring.iter().map(|(token, _)| token.value()).collect();
    assert_eq!(
        ring_tokens, server_tokens,
        "driver ring vs system.local tokens"
    );
    assert!(ring.iter().all(|(_, owner)| owner.host_id == local.host_id));

    // Schema metadata: the composite partition key and the clustering key.
    let table = state
        .get_keyspace("ks")
        .and_then(|ks| ks.tables.get("t"))
        .expect("ks.t in the driver's schema metadata");
    assert_eq!(table.partition_key, ["k1", "k2"]);
    assert_eq!(table.clustering_key, ["c"]);
    let computed = state.compute_token("ks", "t", &(7, "seven"))?;
    assert_eq!(
        computed,
        select.calculate_token(&(7, "seven"))?.expect("token")
    );

    // Routing: the replica of the key is the node, and it served the request.
    let token = select.calculate_token(&(7, "seven"))?.expect("token");
    let replicas = state.get_token_endpoints("ks", "t", token);
    assert_eq!(replicas.len(), 1);
    assert_eq!(replicas[0].0.host_id, local.host_id);
    let result = session.execute_unpaged(&select, (7, "seven")).await?;
    assert_eq!(result.request_coordinator().node().host_id, local.host_id);
    assert_eq!(
        state
            .get_token_endpoints("ks", "t", Token::new(i64::MIN + 1))
            .len(),
        1
    );

    drop(session);
    stop_cleanly(node);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_through_many_pages() -> TestResult {
    let node = VarveProcess::start();
    // LZ4 on this session, so compressed frames are exercised too.
    let session = connect_with_schema(&node, Some(Compression::Lz4)).await;

    let insert = session
        .prepare("INSERT INTO t (k1, k2, c, v) VALUES (?, ?, ?, ?)")
        .await?;
    for c in 0..PAGED_ROWS {
        session
            .execute_unpaged(&insert, (1, "p", c, format!("row {c}")))
            .await?;
    }
    // A few more partitions for the full-table scan.
    for k1 in 2..12 {
        session
            .execute_unpaged(&insert, (k1, "q", 0, "other"))
            .await?;
    }

    // execute_iter: the driver follows the paging state to the end.
    let mut select = session
        .prepare("SELECT c, v FROM t WHERE k1 = ? AND k2 = ?")
        .await?;
    select.set_page_size(PAGE_SIZE);
    let rows: Vec<(i32, String)> = session
        .execute_iter(select.clone(), (1, "p"))
        .await?
        .rows_stream::<(i32, String)>()?
        .try_collect()
        .await?;
    let want: Vec<(i32, String)> = (0..PAGED_ROWS).map(|c| (c, format!("row {c}"))).collect();
    assert_eq!(rows, want);

    // One page at a time: every page but the last is full.
    let mut paging_state = PagingState::start();
    let mut pages = Vec::new();
    loop {
        let (result, next) = session
            .execute_single_page(&select, (1, "p"), paging_state)
            .await?;
        pages.push(result.into_rows_result()?.rows_num());
        match next {
            PagingStateResponse::HasMorePages { state } => paging_state = state,
            PagingStateResponse::NoMorePages => break,
        }
        assert!(pages.len() <= 100, "paging does not end: {pages:?}");
    }
    let full_pages = PAGED_ROWS / PAGE_SIZE;
    assert!(pages.len() as i32 > full_pages, "pages: {pages:?}");
    assert_eq!(pages.iter().sum::<usize>(), PAGED_ROWS as usize);
    assert!(
        pages[..full_pages as usize]
            .iter()
            .all(|&n| n == PAGE_SIZE as usize),
        "{pages:?}"
    );

    // An unprepared full scan, paged, across partitions.
    let mut scan = scylla::statement::Statement::new("SELECT k1, k2, c FROM t");
    scan.set_page_size(PAGE_SIZE);
    let all: Vec<(i32, String, i32)> = session
        .query_iter(scan, ())
        .await?
        .rows_stream()?
        .try_collect()
        .await?;
    assert_eq!(all.len(), PAGED_ROWS as usize + 10);
    let partitions: BTreeSet<(i32, String)> =
        all.iter().map(|(k1, k2, _)| (*k1, k2.clone())).collect();
    assert_eq!(partitions.len(), 11);

    drop(session);
    stop_cleanly(node);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logged_and_unlogged_batches() -> TestResult {
    let node = VarveProcess::start();
    let session = connect_with_schema(&node, None).await;
    let insert = session
        .prepare("INSERT INTO t (k1, k2, c, v) VALUES (?, ?, ?, ?)")
        .await?;

    let mut logged = Batch::new(BatchType::Logged);
    logged.append_statement(insert.clone());
    logged.append_statement(insert.clone());
    logged.append_statement("INSERT INTO t (k1, k2, c, v) VALUES (?, ?, ?, 'literal')");
    logged.append_statement("UPDATE t SET v = ? WHERE k1 = ? AND k2 = ? AND c = ?");
    session
        .batch(
            &logged,
            (
                (5, "b", 0, "zero"),
                (6, "b", 0, "six"),
                (5, "b", 1),
                ("one", 5, "b", 2),
            ),
        )
        .await?;

    let mut unlogged = Batch::new(BatchType::Unlogged);
    unlogged.append_statement(insert.clone());
    unlogged.append_statement("DELETE FROM t WHERE k1 = ? AND k2 = ? AND c = ?");
    session
        .batch(&unlogged, ((5, "b", 3, "three"), (5, "b", 0)))
        .await?;

    let rows: Vec<(i32, String)> = session
        .query_unpaged("SELECT c, v FROM t WHERE k1 = 5 AND k2 = 'b'", ())
        .await?
        .into_rows_result()?
        .rows::<(i32, String)>()?
        .collect::<Result<_, _>>()?;
    let want = [(1, "literal"), (2, "one"), (3, "three")].map(|(c, v)| (c, v.to_string()));
    assert_eq!(rows, want);
    let (six,): (String,) = session
        .query_unpaged("SELECT v FROM t WHERE k1 = 6 AND k2 = 'b' AND c = 0", ())
        .await?
        .into_rows_result()?
        .single_row::<(String,)>()?;
    assert_eq!(six, "six");

    drop(session);
    stop_cleanly(node);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_empty_text_is_a_value_not_null() -> TestResult {
    // A zero-length bound value is the empty string for text, never null:
    // Cassandra accepts it in keys and stores it in regular columns.
    let node = VarveProcess::start();
    let session = connect_with_schema(&node, None).await;
    let insert = session
        .prepare("INSERT INTO t (k1, k2, c, v) VALUES (?, ?, ?, ?)")
        .await?;
    let select = session
        .prepare("SELECT k2, v FROM t WHERE k1 = ? AND k2 = ?")
        .await?;

    session.execute_unpaged(&insert, (1, "k", 0, "")).await?;
    let (k2, v): (String, Option<String>) = session
        .execute_unpaged(&select, (1, "k"))
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!(
        (k2.as_str(), v.as_deref()),
        ("k", Some("")),
        "bound '' stored as null"
    );

    session
        .execute_unpaged(&insert, (2, "", 0, "empty key part"))
        .await?;
    let (k2, v): (String, Option<String>) = session
        .execute_unpaged(&select, (2, ""))
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!((k2.as_str(), v.as_deref()), ("", Some("empty key part")));
    let token = insert
        .calculate_token(&(2, "", 0, "x"))?
        .expect("token-aware INSERT");
    let (server,): (i64,) = session
        .query_unpaged("SELECT token(k1, k2) FROM t WHERE k1 = 2 AND k2 = ''", ())
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!(token.value(), server);

    drop(session);
    stop_cleanly(node);
    Ok(())
}

/// The `[applied]` flag and the other columns of a conditional result.
async fn conditional(
    session: &Session,
    cql: &str,
    values: impl scylla::serialize::row::SerializeRow,
) -> Result<(bool, Vec<String>, Vec<Option<CqlValue>>), Box<dyn std::error::Error>> {
    let result = session
        .query_unpaged(cql, values)
        .await?
        .into_rows_result()?;
    let names: Vec<String> = result
        .column_specs()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    assert_eq!(
        names.first().map(String::as_str),
        Some("[applied]"),
        "{cql}: {names:?}"
    );
    let row: Row = result.single_row()?;
    let applied = match row.columns.first() {
        Some(Some(CqlValue::Boolean(b))) => *b,
        other => panic!("{cql}: [applied] is {other:?}"),
    };
    Ok((applied, names, row.columns))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lightweight_transactions_report_applied() -> TestResult {
    let node = VarveProcess::start();
    let session = connect_with_schema(&node, None).await;
    let insert_new = "INSERT INTO t (k1, k2, c, v) VALUES (?, ?, ?, ?) IF NOT EXISTS";

    let (applied, names, _) = conditional(&session, insert_new, (9, "lwt", 0, "first")).await?;
    assert!(applied);
    assert_eq!(names, ["[applied]"]);

    // Not applied: the existing row comes back after [applied].
    let (applied, names, columns) =
        conditional(&session, insert_new, (9, "lwt", 0, "second")).await?;
    assert!(!applied);
    assert_eq!(names, ["[applied]", "k1", "k2", "c", "v"]);
    assert_eq!(columns[4], Some(CqlValue::Text("first".into())));

    let update = "UPDATE t SET v = ? WHERE k1 = 9 AND k2 = 'lwt' AND c = 0 IF v = ?";
    let (applied, names, columns) = conditional(&session, update, ("third", "wrong")).await?;
    assert!(!applied);
    assert_eq!(names, ["[applied]", "v"]);
    assert_eq!(columns[1], Some(CqlValue::Text("first".into())));
    let (applied, _, _) = conditional(&session, update, ("third", "first")).await?;
    assert!(applied);

    // Prepared conditional statements work the same way. The driver took
    // ScyllaDB's LWT mark (SCYLLA_LWT_ADD_METADATA_MARK): it routes them to
    // one replica per partition; a plain statement is not marked.
    let prepared = session.prepare(insert_new).await?;
    assert!(
        prepared.is_confirmed_lwt(),
        "a conditional statement is marked"
    );
    let plain = session
        .prepare("INSERT INTO t (k1, k2, c, v) VALUES (?, ?, ?, ?)")
        .await?;
    assert!(!plain.is_confirmed_lwt(), "a plain statement is not");
    let result = session
        .execute_unpaged(&prepared, (9, "lwt", 0, "fourth"))
        .await?;
    let (applied, ..): (bool, i32, String, i32, String) =
        result.into_rows_result()?.single_row()?;
    assert!(!applied);

    let delete = "DELETE FROM t WHERE k1 = 9 AND k2 = 'lwt' AND c = 0 IF EXISTS";
    let (applied, _, _) = conditional(&session, delete, ()).await?;
    assert!(applied);
    let (applied, _, _) = conditional(&session, delete, ()).await?;
    assert!(!applied);

    drop(session);
    stop_cleanly(node);
    Ok(())
}
