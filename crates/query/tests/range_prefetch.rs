//! Range scans over a data path that answers later (as a cluster's
//! replicas do) read partitions ahead (select/prefetch.rs), and over a
//! data path that reads ranges whole (`DataPath::scan_rows`, as a
//! cluster's RANGE_READ of rows) they take partitions in batches cut at
//! arbitrary places; the rows of every page, and where each page ends,
//! must be those of the same scan read one partition at a time (the
//! one-node data path, answered at once).

#[allow(dead_code)]
mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use common::render;
use varve_query::data_path::{
    CasCommand, CasOutcome, DataFuture, KeyScan, PartitionRead, ReadCommand, RowScan,
    ScannedPartitions, WriteCommand,
};
use varve_query::*;
use varve_types::data::PartitionKey;

/// A data path that answers every operation after a yield, and counts the
/// reads in flight at once.
struct Later {
    inner: LocalNode,
    in_flight: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
}

impl Later {
    fn after_a_yield<'a, T: Send + 'a>(&'a self, now: DataFuture<'a, T>) -> DataFuture<'a, T> {
        DataFuture::Boxed(Box::pin(async move {
            tokio::task::yield_now().await;
            now.await
        }))
    }
}

impl DataPath for Later {
    fn write(&self, w: WriteCommand) -> DataFuture<'_, ()> {
        self.after_a_yield(self.inner.write(w))
    }

    fn read<'a>(&'a self, r: ReadCommand<'a>) -> DataFuture<'a, PartitionRead> {
        let (in_flight, most) = (
            Arc::clone(&self.in_flight),
            Arc::clone(&self.most_in_flight),
        );
        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::SeqCst);
        let inner = &self.inner;
        DataFuture::Boxed(Box::pin(async move {
            tokio::task::yield_now().await;
            let found = inner.read(r).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            found
        }))
    }

    fn scan_keys<'a>(&'a self, s: KeyScan<'a>) -> DataFuture<'a, Vec<PartitionKey>> {
        self.after_a_yield(self.inner.scan_keys(s))
    }

    fn truncate(&self, table: u128) -> DataFuture<'_, ()> {
        self.after_a_yield(self.inner.truncate(table))
    }

    fn cas<'a>(&'a self, c: CasCommand<'a>) -> DataFuture<'a, CasOutcome> {
        self.after_a_yield(self.inner.cas(c))
    }
}

/// Partitions of 0 to 29 rows (some with only a static value), a few rows
/// and a range deleted, values that filters split.
fn load() -> Vec<String> {
    let mut statements = vec![
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}".to_string(),
        "CREATE TABLE ks.t (p int, c int, v int, s int static, PRIMARY KEY (p, c))".to_string(),
    ];
    for p in 0..60 {
        let rows = (p * 7) % 30;
        statements.push(format!("INSERT INTO ks.t (p, s) VALUES ({p}, {})", p * 10));
        for c in 0..rows {
            statements.push(format!(
                "INSERT INTO ks.t (p, c, v) VALUES ({p}, {c}, {})",
                (p + c) % 17
            ));
        }
        if p % 5 == 0 {
            statements.push(format!("DELETE FROM ks.t WHERE p = {p} AND c = 1"));
        }
        if p % 9 == 0 {
            statements.push(format!(
                "DELETE FROM ks.t WHERE p = {p} AND c >= 3 AND c < 8"
            ));
        }
    }
    statements
}

const QUERIES: &[&str] = &[
    "SELECT * FROM ks.t",
    "SELECT p, c, v FROM ks.t LIMIT 37",
    "SELECT * FROM ks.t PER PARTITION LIMIT 3",
    "SELECT * FROM ks.t PER PARTITION LIMIT 4 LIMIT 50",
    "SELECT DISTINCT p, s FROM ks.t",
    "SELECT * FROM ks.t WHERE c >= 5 AND c < 12 ALLOW FILTERING",
    "SELECT p, c FROM ks.t WHERE v > 10 ALLOW FILTERING",
    "SELECT count(*) FROM ks.t",
    "SELECT p, c FROM ks.t WHERE token(p) > 0",
];

/// Every page of `q` at `page_size`: its rows, and whether another follows.
async fn pages(p: &Processor, q: &str, page_size: Option<i32>) -> Vec<(Vec<Vec<String>>, bool)> {
    let mut state = ClientState::default();
    let mut out = Vec::new();
    let mut paging_state = None;
    loop {
        let options = QueryOptions {
            page_size,
            paging_state: paging_state.take(),
            ..QueryOptions::default()
        };
        let outcome = p
            .query(&mut state, q, &options)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e:?}"));
        let QueryResult::Rows(rows) = &outcome.result else {
            panic!("{q}: not rows")
        };
        paging_state = rows.paging_state.clone();
        out.push((render(&outcome), paging_state.is_some()));
        if paging_state.is_none() || out.len() > 2_000 {
            return out;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_that_read_ahead_page_as_scans_that_read_one_partition_at_a_time() {
    let at_once = Processor::new(NodeInfo::single_local());
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let most_seen = Arc::clone(&most);
    let later = Processor::with_data_path(NodeInfo::single_local(), move |inner| {
        Arc::new(Later {
            inner,
            in_flight,
            most_in_flight: most,
        })
    });
    for p in [&at_once, &later] {
        let mut state = ClientState::default();
        for s in load() {
            p.query(&mut state, &s, &QueryOptions::default())
                .await
                .unwrap_or_else(|e| panic!("{s}: {e:?}"));
        }
    }
    for q in QUERIES {
        for page_size in [None, Some(1), Some(7), Some(50), Some(5000)] {
            let want = pages(&at_once, q, page_size).await;
            let got = pages(&later, q, page_size).await;
            assert_eq!(got, want, "{q} with pages of {page_size:?}");
        }
    }
    assert!(
        most_seen.load(Ordering::SeqCst) > 1,
        "the scans never read ahead"
    );
}

/// A data path that reads ranges whole, as a cluster's coordinator does,
/// but stops each answer after a random number of partitions and cuts
/// random partitions short (incomplete), as limits and short read
/// protection do; it counts the scans it answered.
struct Ranges {
    inner: LocalNode,
    dice: AtomicU64,
    scans: Arc<AtomicUsize>,
}

impl Ranges {
    fn roll(&self, n: u64) -> u64 {
        let mut x = self.dice.load(Ordering::SeqCst);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.dice.store(x, Ordering::SeqCst);
        x % n
    }

    /// `read` with its rows cut to `keep`, in the read's order.
    fn cut(mut read: PartitionRead, keep: usize, reversed: bool) -> PartitionRead {
        if let Some(p) = &mut read.partition {
            let boundary = match reversed {
                false => p.rows.keys().nth(keep).cloned(),
                true => p.rows.keys().rev().nth(keep).cloned(),
            };
            if let Some(b) = boundary {
                p.rows.retain(|k, _| if reversed { *k > b } else { *k < b });
                read.complete = false;
            }
        }
        read
    }

    async fn scan(
        &self,
        s: RowScan<'_>,
    ) -> std::result::Result<ScannedPartitions, varve_types::data_error::DataError> {
        self.scans.fetch_add(1, Ordering::SeqCst);
        let stop_after = 1 + self.roll(6) as usize;
        let keys = self
            .inner
            .scan_keys(KeyScan {
                table: s.table,
                start: s.start,
                end: s.end,
                limit: s.limit.min(stop_after) + 1,
                consistency: s.consistency,
            })
            .await?;
        let mut found = ScannedPartitions::default();
        let mut rows = 0;
        for key in keys {
            if found.partitions.len() >= s.limit.min(stop_after) || rows >= s.total_rows {
                found.more = true;
                break;
            }
            let read = self
                .inner
                .read(ReadCommand {
                    table: s.table,
                    key: &key,
                    slices: s.slices,
                    reversed: s.reversed,
                    now_seconds: s.now_seconds,
                    row_limit: s.row_limit,
                    consistency: s.consistency,
                })
                .await?;
            let read = match self.roll(4) {
                0 => Self::cut(read, self.roll(3) as usize, s.reversed),
                _ => read,
            };
            rows += read.partition.as_ref().map_or(0, |p| p.rows.len().max(1));
            found.partitions.push((key, read));
        }
        Ok(found)
    }
}

impl DataPath for Ranges {
    fn write(&self, w: WriteCommand) -> DataFuture<'_, ()> {
        self.inner.write(w)
    }

    fn read<'a>(&'a self, r: ReadCommand<'a>) -> DataFuture<'a, PartitionRead> {
        self.inner.read(r)
    }

    fn scan_keys<'a>(&'a self, s: KeyScan<'a>) -> DataFuture<'a, Vec<PartitionKey>> {
        self.inner.scan_keys(s)
    }

    fn scan_rows<'a>(&'a self, s: RowScan<'a>) -> Option<DataFuture<'a, ScannedPartitions>> {
        Some(DataFuture::Boxed(Box::pin(self.scan(s))))
    }

    fn truncate(&self, table: u128) -> DataFuture<'_, ()> {
        self.inner.truncate(table)
    }

    fn cas<'a>(&'a self, c: CasCommand<'a>) -> DataFuture<'a, CasOutcome> {
        self.inner.cas(c)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_over_range_reads_cut_anywhere_page_as_scans_that_read_one_partition_at_a_time() {
    let at_once = Processor::new(NodeInfo::single_local());
    let scans = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&scans);
    let ranges = Processor::with_data_path(NodeInfo::single_local(), move |inner| {
        Arc::new(Ranges {
            inner,
            dice: AtomicU64::new(0x9e37_79b9_7f4a_7c15),
            scans: counted,
        })
    });
    for p in [&at_once, &ranges] {
        let mut state = ClientState::default();
        for s in load() {
            p.query(&mut state, &s, &QueryOptions::default())
                .await
                .unwrap_or_else(|e| panic!("{s}: {e:?}"));
        }
    }
    let mut queries: Vec<String> = QUERIES.iter().map(|q| q.to_string()).collect();
    queries.push("SELECT p, s, v FROM ks.t WHERE s > 200 ALLOW FILTERING".into());
    for q in &queries {
        for page_size in [None, Some(1), Some(7), Some(50), Some(5000)] {
            let want = pages(&at_once, q, page_size).await;
            let got = pages(&ranges, q, page_size).await;
            assert_eq!(got, want, "{q} with pages of {page_size:?}");
        }
    }
    assert!(
        scans.load(Ordering::SeqCst) > 100,
        "the scans never read ranges"
    );
}
