//! Range scans that return rows (RANGE_READ of rows) through three
//! coordinators in one process over real messaging: pages of partitions
//! over replicas that disagree answer as the replicas' merge, at any
//! partition, row and per-partition limit; read repair leaves the
//! replicas equal; and spans of a ring whose ranges have different
//! replicas come back in token order, at every level that has replicas.

mod support;

use std::collections::BTreeMap;

use varve_cluster::coordinator::{RowScan, ScannedRows};
use varve_types::data::RangeTombstone;

use support::nodes::*;

/// A scanned partition: its key, its rows as listed, whether complete.
type Scanned = (PartitionKey, Vec<(i32, String)>, bool);

/// What a replica holds of each key (none: nothing).
type Held = BTreeMap<PartitionKey, [Option<Partition>; 3]>;

/// 40 keys; per key and replica: `divergent` data, sometimes nothing,
/// sometimes a partition deletion that shadows older rows elsewhere.
fn held() -> Held {
    let mut out = Held::new();
    for seed in 0..40u64 {
        let mut dice = Dice(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
        let data = divergent(seed);
        let per_replica: [Option<Partition>; 3] =
            std::array::from_fn(|replica| match dice.below(7) {
                0 => None,
                1 => {
                    let mut p = data[replica].clone();
                    p.deletion = DeletionTime::new(1 + dice.below(50) as i64, NOW - 10);
                    Some(p)
                }
                _ => Some(data[replica].clone()),
            });
        out.insert(key(&format!("r{seed}")), per_replica);
    }
    out
}

/// Each key's merged live rows, in token order.
fn merged(held: &Held) -> Vec<(PartitionKey, Vec<(i32, String)>)> {
    held.iter()
        .map(|(k, versions)| {
            let present: Vec<Partition> = versions.iter().flatten().cloned().collect();
            let rows = expected(&present, &[Slice::all(&cmp())], false, usize::MAX);
            (k.clone(), rows)
        })
        .collect()
}

fn store(nodes: &[Node; 3], held: &Held) {
    for (k, versions) in held {
        for (n, p) in nodes.iter().zip(versions) {
            if let Some(p) = p {
                n.engine.apply(TABLE, k, p.clone()).unwrap();
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Limits {
    partitions: usize,
    total_rows: usize,
    row_limit: usize,
}

async fn scan_page(
    n: &Node,
    from: &TokenBound,
    limits: Limits,
    replication: &Replication,
    consistency: Consistency,
    blocking_repair: bool,
) -> Result<ScannedRows, DataError> {
    let slices = [Slice::all(&cmp())];
    n.coordinator
        .scan_rows(RowScan {
            table: TABLE,
            start: from,
            end: &TokenBound::Unbounded,
            slices: &slices,
            reversed: false,
            now_seconds: NOW,
            row_limit: limits.row_limit,
            total_rows: limits.total_rows,
            limit: limits.partitions,
            replication,
            consistency,
            blocking_repair,
        })
        .await
}

/// Every page of a whole-ring scan: each partition's rows as listed and
/// whether they were complete, in the order the pages gave them.
async fn scan_all(
    n: &Node,
    limits: Limits,
    replication: &Replication,
    consistency: Consistency,
    blocking_repair: bool,
) -> Result<Vec<Scanned>, DataError> {
    let mut from = TokenBound::Unbounded;
    let mut out: Vec<Scanned> = Vec::new();
    for _ in 0..10_000 {
        let page = scan_page(n, &from, limits, replication, consistency, blocking_repair).await?;
        assert!(
            page.partitions.len() <= limits.partitions,
            "{:?}",
            page.partitions.iter().map(|(k, _)| k).collect::<Vec<_>>()
        );
        for (k, r) in &page.partitions {
            out.push((k.clone(), listed(r.partition.as_ref()), r.complete));
        }
        match page.partitions.last() {
            Some((k, _)) if page.more => from = TokenBound::AfterKey(k.clone()),
            _ => return Ok(out),
        }
    }
    panic!("the scan never ended");
}

/// Checks a scan's partitions against the merge: keys in token order,
/// each once; every key with live rows present; each partition's rows a
/// prefix of its merged rows of at most `row_limit`, all of them when it
/// says it is complete.
fn check(got: &[Scanned], want: &[(PartitionKey, Vec<(i32, String)>)], limits: Limits, what: &str) {
    for w in got.windows(2) {
        assert!(w[0].0 < w[1].0, "{what}: keys out of order or twice");
    }
    let by_key: BTreeMap<&PartitionKey, &Vec<(i32, String)>> =
        want.iter().map(|(k, rows)| (k, rows)).collect();
    for (k, rows, complete) in got {
        let all = by_key
            .get(k)
            .unwrap_or_else(|| panic!("{what}: a key never written"));
        assert!(rows.len() <= limits.row_limit, "{what}: past the row limit");
        assert_eq!(&all[..rows.len()], &rows[..], "{what}: rows of {k:?}");
        if *complete {
            assert_eq!(rows.len(), all.len(), "{what}: {k:?} said complete");
        }
    }
    for (k, rows) in want.iter().filter(|(_, rows)| !rows.is_empty()) {
        let found = got.iter().find(|(g, _, _)| g == k);
        let found =
            found.unwrap_or_else(|| panic!("{what}: {k:?} with {} rows missing", rows.len()));
        assert!(
            !found.1.is_empty() || !found.2,
            "{what}: {k:?} empty and complete"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_at_all_over_divergent_replicas_page_as_their_merge() {
    let nodes = three(|s| s).await;
    let held = held();
    store(&nodes, &held);
    let want = merged(&held);
    let rf3 = Replication::Simple(3);
    let mut case = 0;
    for partitions in [1, 3, 100] {
        for total_rows in [1, 5, usize::MAX] {
            for row_limit in [1, 2, usize::MAX] {
                let limits = Limits {
                    partitions,
                    total_rows,
                    row_limit,
                };
                let coordinator = &nodes[case % 3];
                case += 1;
                let got = scan_all(coordinator, limits, &rf3, Consistency::All, false)
                    .await
                    .expect("a scan at ALL");
                let what = format!(
                    "partitions {partitions}, rows {total_rows}, per partition {row_limit}"
                );
                check(&got, &want, Limits { ..limits }, &what);
            }
        }
    }
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_with_read_repair_leaves_every_replica_with_the_merge() {
    let nodes = three(|s| s).await;
    let held = held();
    store(&nodes, &held);
    let want = merged(&held);
    let rf3 = Replication::Simple(3);
    let whole = Limits {
        partitions: 7,
        total_rows: usize::MAX,
        row_limit: usize::MAX,
    };
    let got = scan_all(&nodes[1], whole, &rf3, Consistency::All, true)
        .await
        .expect("a scan at ALL");
    check(&got, &want, whole, "repairing scan");
    assert!(nodes[1].coordinator.counts().read_repairs > 0);
    for n in &nodes {
        for (k, rows) in &want {
            let here = n
                .engine
                .read_live(TABLE, k, &[Slice::all(&cmp())], false, NOW, usize::MAX)
                .unwrap();
            assert_eq!(
                &listed(here.as_ref().map(|h| &h.0)),
                rows,
                "{k:?} after repair"
            );
        }
    }
    // Equal replicas: any two of them answer the merge.
    for n in &nodes {
        let got = scan_all(n, whole, &rf3, Consistency::Quorum, false)
            .await
            .expect("a scan at QUORUM");
        check(&got, &want, whole, "QUORUM after repair");
        assert_eq!(got.len(), want.len());
    }
    for n in nodes {
        n.stop().await;
    }
}

/// A row deletion range over every clustering (an empty partition's
/// tombstones still travel and shadow).
fn wiped(ts: i64) -> Partition {
    let mut p = Partition::default();
    p.range_tombstones.push(RangeTombstone {
        slice: rows_between(-1, 100),
        deletion: DeletionTime::new(ts, NOW - 10),
    });
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_of_rf2_come_back_in_token_order_at_each_level_and_none_is_unavailable_silently() {
    let nodes = three(|s| s).await;
    let rf2 = Replication::Simple(2);
    let mut want = Vec::new();
    for i in 0..60 {
        let k = format!("s{i}");
        let update = if i % 10 == 9 {
            wiped(20)
        } else {
            cell(10, &format!("v{i}"))
        };
        nodes[i % 3]
            .coordinator
            .write(write(&k, update, &rf2, Consistency::All))
            .await
            .expect("a write at ALL");
        let rows = if i % 10 == 9 {
            vec![]
        } else {
            vec![(1, format!("v{i}"))]
        };
        want.push((key(&k), rows));
    }
    want.sort();
    let limits = Limits {
        partitions: 4,
        total_rows: usize::MAX,
        row_limit: usize::MAX,
    };
    for n in &nodes {
        for cl in [Consistency::One, Consistency::Quorum, Consistency::All] {
            let got = scan_all(n, limits, &rf2, cl, false).await.expect("a scan");
            check(&got, &want, limits, &format!("{cl:?}"));
        }
    }
    let [a, b, c] = nodes;
    c.stop().await;
    wait_for("the others see the third node down", || {
        a.gossip.live().len() == 1 && b.gossip.live().len() == 1
    })
    .await;
    for cl in [Consistency::Quorum, Consistency::All] {
        let err = scan_all(&a, limits, &rf2, cl, false).await.unwrap_err();
        assert!(matches!(err, DataError::Unavailable(_)), "{cl:?}: {err:?}");
    }
    let got = scan_all(&a, limits, &rf2, Consistency::One, false)
        .await
        .expect("ONE with a node down");
    check(&got, &want, limits, "ONE with a node down");
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contacts_holding_different_keys_never_send_a_page_past_its_limit() {
    let nodes = three(|s| s).await;
    let mut keys: Vec<PartitionKey> = (0..6).map(|i| key(&format!("d{i}"))).collect();
    keys.sort();
    // Node 1 holds the first two keys (all it has: it says no more),
    // node 2 the last four (it stops at the limit after two of them).
    for (i, k) in keys.iter().enumerate() {
        let holder = usize::from(i >= 2);
        nodes[holder]
            .engine
            .apply(TABLE, k, cell(10, &format!("v{i}")))
            .unwrap();
    }
    let rf3 = Replication::Simple(3);
    let limits = Limits {
        partitions: 2,
        total_rows: usize::MAX,
        row_limit: usize::MAX,
    };
    let got = scan_all(&nodes[2], limits, &rf3, Consistency::All, false)
        .await
        .expect("a scan at ALL");
    let scanned: Vec<&PartitionKey> = got.iter().map(|(k, _, _)| k).collect();
    assert_eq!(scanned, keys.iter().collect::<Vec<_>>());
    for n in nodes {
        n.stop().await;
    }
}
