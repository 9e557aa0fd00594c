//! Pipelined statements over real TCP: every request of a burst is
//! answered once, on its stream, whether the burst runs in the connection
//! task, is split across worker threads, or is longer than one reply
//! batch; and when the burst's commitlog write fails (a full disk, periodic
//! mode), none of its writes is answered with success, and every write that
//! was is still there after a restart.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use varve_protocol::{
    decode_envelope, decode_response, encode_request_frame, Compression, Consistency, QueryParams,
    Request, Response,
};

use varve_query::{NodeInfo, Processor};
use varve_server::{Server, ServerConfig, PART_MIN_STATEMENTS, REPLY_BATCH_MAX};
use varve_storage::commitlog::{CommitLogConfig, SyncMode};
use varve_storage::fs_sim::SimFs;
use varve_storage::{Clock, StorageOptions};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `processor` on an ephemeral port; the sender stops it.
async fn serve(processor: Arc<Processor>) -> (std::net::SocketAddr, oneshot::Sender<()>) {
    let config = ServerConfig {
        cql_addr: "127.0.0.1:0".parse().expect("addr"),
        admin_addr: "127.0.0.1:0".parse().expect("addr"),
        shutdown_grace: Duration::from_secs(2),
        ..ServerConfig::default()
    };
    let server = Server::bind(config).await.expect("binds");
    let addr = server.cql_addr();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(server.run(processor, async move {
        let _ = rx.await;
    }));
    (addr, tx)
}

fn query(text: &str) -> Request {
    Request::Query {
        query: text.into(),
        params: QueryParams::new(Consistency::One),
    }
}

async fn connect(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let startup = Request::Startup([("CQL_VERSION".to_string(), "3.0.0".to_string())].into());
    let answers = pipeline(&mut s, &[startup]).await;
    assert!(matches!(answers[&0], Response::Ready), "{answers:?}");
    s
}

/// Sends `requests` on streams 0.. in one write and reads one answer per
/// request; each stream must be answered exactly once.
async fn pipeline(s: &mut TcpStream, requests: &[Request]) -> BTreeMap<i16, Response> {
    let mut bytes = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let stream = i16::try_from(i).expect("stream");
        bytes.extend(encode_request_frame(4, stream, r, None, Compression::None));
    }
    s.write_all(&bytes).await.expect("writes");
    let mut answers = BTreeMap::new();
    let mut buf = BytesMut::new();
    while answers.len() < requests.len() {
        if let Some(frame) = decode_envelope(&mut buf, 1 << 24).expect("valid frame") {
            let stream = frame.header.stream;
            let r = decode_response(&frame, Compression::None).expect("valid response");
            assert!(
                answers.insert(stream, r.response).is_none(),
                "stream {stream} answered twice"
            );
            continue;
        }
        let n = tokio::time::timeout(TIMEOUT, s.read_buf(&mut buf))
            .await
            .expect("answers in time")
            .expect("reads");
        assert!(n > 0, "connection closed after {} answers", answers.len());
    }
    assert!(buf.is_empty(), "more answers than requests");
    answers
}

fn is_rows(r: &Response) -> bool {
    matches!(r, Response::Result(varve_protocol::ResultBody::Rows(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_burst_is_answered_once_split_or_not() {
    let (addr, stop) = serve(Processor::new(NodeInfo::single_local())).await;
    let mut s = connect(addr).await;
    let sizes = [
        1,
        2 * PART_MIN_STATEMENTS - 1, // runs in the connection task
        2 * PART_MIN_STATEMENTS,     // split into two parts
        REPLY_BATCH_MAX + 1,         // more than one reply batch
        5 * REPLY_BATCH_MAX + 3,
    ];
    for n in sizes {
        let requests = vec![query("SELECT key, release_version FROM system.local"); n];
        let answers = pipeline(&mut s, &requests).await;
        assert_eq!(answers.len(), n);
        assert!(answers.values().all(is_rows), "burst of {n}: {answers:?}");
    }
    let _ = stop.send(());
}

fn options(fs: &Arc<SimFs>) -> StorageOptions {
    StorageOptions {
        data_dir: "/data".into(),
        commitlog_dir: "/data/commitlog".into(),
        commitlog: CommitLogConfig {
            sync: SyncMode::Periodic {
                period: Duration::from_secs(3600),
            },
            ..CommitLogConfig::default()
        },
        memtable_space_bytes: 64 << 20,
        commitlog_total_space_bytes: 1 << 30,
        compaction_throughput_mib_per_sec: 0,
        concurrent_compactors: 1,
        sstable_writes: Default::default(),
        fs: fs.clone(),
        clock: Clock::system(),
    }
}

fn insert(k: usize) -> Request {
    query(&format!("INSERT INTO ks.t (k, v) VALUES ({k}, 'v{k}')"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_burst_write_acknowledges_nothing_and_loses_nothing_acknowledged() {
    let fs = Arc::new(SimFs::new());
    let processor = Processor::open(NodeInfo::single_local(), options(&fs)).expect("opens");
    let (addr, stop) = serve(processor).await;
    let mut s = connect(addr).await;
    let schema = [
        query("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"),
        query("CREATE TABLE ks.t (k int PRIMARY KEY, v text)"),
    ];
    for r in schema {
        let a = pipeline(&mut s, &[r]).await;
        assert!(matches!(a[&0], Response::Result(_)), "{a:?}");
    }
    // A burst that succeeds, then bursts (in place and split) that hit a
    // full disk, then one after the disk has room again.
    let ok: Vec<Request> = (0..10).map(insert).collect();
    let answers = pipeline(&mut s, &ok).await;
    assert!(
        answers.values().all(|r| matches!(r, Response::Result(_))),
        "{answers:?}"
    );
    fs.set_disk_full(true);
    for (first, n) in [(100, 10), (200, 2 * PART_MIN_STATEMENTS)] {
        let burst: Vec<Request> = (first..first + n).map(insert).collect();
        let answers = pipeline(&mut s, &burst).await;
        for (stream, r) in &answers {
            match r {
                Response::Error(e) => {
                    assert!(
                        e.message.contains("No space") || e.message.to_lowercase().contains("full"),
                        "stream {stream}: {}",
                        e.message
                    );
                    assert_eq!(e.code.0, 0x1500, "stream {stream}: a WriteFailure");
                }
                other => panic!("stream {stream} acknowledged on a full disk: {other:?}"),
            }
        }
    }
    fs.set_disk_full(false);
    // The log recovers: writes are acknowledged again.
    let later: Vec<Request> = (1000..1010).map(insert).collect();
    let answers = pipeline(&mut s, &later).await;
    assert!(
        answers.values().all(|r| matches!(r, Response::Result(_))),
        "{answers:?}"
    );
    let _ = stop.send(());
    drop(s);

    // A process crash: everything acknowledged comes back.
    let restarted = Arc::new(fs.kill());
    let processor =
        Processor::open(NodeInfo::single_local(), options(&restarted)).expect("reopens");
    let (addr, stop) = serve(processor).await;
    let mut s = connect(addr).await;
    let reads: Vec<Request> = (0..10)
        .chain(1000..1010)
        .map(|k| query(&format!("SELECT v FROM ks.t WHERE k = {k}")))
        .collect();
    let answers = pipeline(&mut s, &reads).await;
    for (stream, r) in &answers {
        match r {
            Response::Result(varve_protocol::ResultBody::Rows(rows)) => {
                assert_eq!(
                    rows.rows.len(),
                    1,
                    "stream {stream}: an acknowledged write is missing"
                )
            }
            other => panic!("stream {stream}: {other:?}"),
        }
    }
    let _ = stop.send(());
}

/// A data path that answers every operation later: it yields to the
/// runtime first, as a replica's answer over the network would come.
struct Later {
    inner: varve_query::LocalNode,
    /// Operations that were still pending when first polled.
    pended: Arc<std::sync::atomic::AtomicUsize>,
}

impl Later {
    fn after_a_yield<'a, T: Send + 'a>(
        &'a self,
        now: varve_query::data_path::DataFuture<'a, T>,
    ) -> varve_query::data_path::DataFuture<'a, T> {
        let pended = Arc::clone(&self.pended);
        varve_query::data_path::DataFuture::Boxed(Box::pin(async move {
            pended.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tokio::task::yield_now().await;
            now.await
        }))
    }
}

impl varve_query::DataPath for Later {
    fn write(
        &self,
        w: varve_query::data_path::WriteCommand,
    ) -> varve_query::data_path::DataFuture<'_, ()> {
        self.after_a_yield(self.inner.write(w))
    }

    fn read<'a>(
        &'a self,
        r: varve_query::data_path::ReadCommand<'a>,
    ) -> varve_query::data_path::DataFuture<'a, varve_query::data_path::PartitionRead> {
        self.after_a_yield(self.inner.read(r))
    }

    fn scan_keys<'a>(
        &'a self,
        s: varve_query::data_path::KeyScan<'a>,
    ) -> varve_query::data_path::DataFuture<'a, Vec<varve_types::data::PartitionKey>> {
        self.after_a_yield(self.inner.scan_keys(s))
    }

    fn truncate(&self, table: u128) -> varve_query::data_path::DataFuture<'_, ()> {
        self.after_a_yield(self.inner.truncate(table))
    }

    fn cas<'a>(
        &'a self,
        c: varve_query::data_path::CasCommand<'a>,
    ) -> varve_query::data_path::DataFuture<'a, varve_query::data_path::CasOutcome> {
        self.after_a_yield(self.inner.cas(c))
    }
}

/// Statements whose data path answers later (a cluster's replicas) are
/// not answered on their first poll: each becomes a task that answers on
/// its own, once, with the right result, while the burst goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_waiting_on_their_data_path_answer_from_a_task() {
    let pended = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&pended);
    let processor = Processor::with_data_path(NodeInfo::single_local(), move |inner| {
        Arc::new(Later {
            inner,
            pended: counter,
        })
    });
    let (addr, stop) = serve(processor).await;
    let mut s = connect(addr).await;
    let setup = [
        query("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"),
        query("CREATE TABLE ks.t (k int PRIMARY KEY, v text)"),
    ];
    for r in setup {
        let answers = pipeline(&mut s, &[r]).await;
        assert!(matches!(answers[&0], Response::Result(_)), "{answers:?}");
    }
    let n = 2 * PART_MIN_STATEMENTS + 5; // split across workers, too
    let writes: Vec<Request> = (0..n).map(insert).collect();
    let answers = pipeline(&mut s, &writes).await;
    assert_eq!(answers.len(), n);
    assert!(
        answers
            .values()
            .all(|r| matches!(r, Response::Result(varve_protocol::ResultBody::Void))),
        "{answers:?}"
    );
    let reads: Vec<Request> = (0..n)
        .map(|k| query(&format!("SELECT v FROM ks.t WHERE k = {k}")))
        .collect();
    let answers = pipeline(&mut s, &reads).await;
    for (stream, r) in &answers {
        let Response::Result(varve_protocol::ResultBody::Rows(rows)) = r else {
            panic!("stream {stream}: {r:?}");
        };
        let want = format!("v{stream}");
        assert_eq!(
            rows.rows,
            [[Some(bytes::Bytes::from(want))]],
            "stream {stream}"
        );
    }
    assert!(
        pended.load(std::sync::atomic::Ordering::Relaxed) >= 2 * n,
        "every write and read went through the pending path"
    );
    let _ = stop.send(());
}
