//! The coordinator over real messaging and gossip on 127.0.0.1: three
//! nodes in one process, each with its own in-memory storage engine,
//! replica handlers and coordinator, as three processes would be. Every
//! wait is for a condition under a generous deadline, never a timing.

mod support;

use support::nodes::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_write_reaches_every_replica_and_reads_merge_the_newest() {
    let nodes = three(|s| s).await;
    let rf3 = Replication::Simple(3);
    nodes[0]
        .coordinator
        .write(write("k", cell(10, "first"), &rf3, Consistency::Quorum))
        .await
        .expect("quorum write");
    wait_for("all three replicas hold the write", || {
        nodes
            .iter()
            .all(|n| n.stored("k").as_deref() == Some("first"))
    })
    .await;
    // A newer value on the third replica only: ALL reads it from anywhere.
    nodes[2]
        .engine
        .apply(TABLE, &key("k"), cell(20, "newer"))
        .unwrap();
    for n in &nodes {
        let v = read_value(n, "k", &rf3, Consistency::All).await.unwrap();
        assert_eq!(v.as_deref(), Some("newer"));
    }
    // A row deletion on the second replica shadows the live cells on the
    // others once merged.
    let mut deletion = Partition::default();
    deletion.rows.insert(
        ClusteringKey::row(ck(1), &cmp()),
        Row {
            deletion: Some(DeletionTime::new(30, NOW)),
            ..Row::default()
        },
    );
    nodes[1].engine.apply(TABLE, &key("k"), deletion).unwrap();
    let v = read_value(&nodes[0], "k", &rf3, Consistency::All)
        .await
        .unwrap();
    assert_eq!(v, None, "the deletion on one replica wins over older data");
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rf1_writes_land_on_the_owner_and_key_scans_find_them_from_any_node() {
    let nodes = three(|s| s).await;
    let rf1 = Replication::Simple(1);
    let keys: Vec<String> = (0..30).map(|i| format!("key{i}")).collect();
    for k in &keys {
        nodes[0]
            .coordinator
            .write(write(k, cell(1, k), &rf1, Consistency::One))
            .await
            .expect("write at ONE");
    }
    for k in &keys {
        let holders = nodes.iter().filter(|n| n.stored(k).is_some()).count();
        assert_eq!(holders, 1, "{k} is on its one replica only");
        let v = read_value(&nodes[2], k, &rf1, Consistency::One)
            .await
            .unwrap();
        assert_eq!(v.as_deref(), Some(k.as_str()), "{k} read from another node");
    }
    let scan = |limit| KeyScan {
        table: TABLE,
        start: &TokenBound::Unbounded,
        end: &TokenBound::Unbounded,
        limit,
        replication: &rf1,
        consistency: Consistency::One,
    };
    let all = nodes[1].coordinator.scan_keys(scan(1000)).await.unwrap();
    let mut expected: Vec<PartitionKey> = keys.iter().map(|k| key(k)).collect();
    expected.sort();
    assert_eq!(all, expected, "every key, in token order, once");
    let first = nodes[1].coordinator.scan_keys(scan(7)).await.unwrap();
    assert_eq!(first, expected[..7]);
    nodes[2]
        .coordinator
        .truncate(TABLE)
        .await
        .expect("truncate");
    assert!(nodes
        .iter()
        .all(|n| keys.iter().all(|k| n.stored(k).is_none())));
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_never_answers_makes_all_time_out_but_not_quorum() {
    let nodes = three(|s| Spec {
        answers_writes: false,
        ..s
    })
    .await;
    let rf3 = Replication::Simple(3);
    let c = &nodes[0].coordinator;
    c.write(write("k", cell(1, "v"), &rf3, Consistency::Quorum))
        .await
        .expect("two of three answer");
    let err = c
        .write(write("k", cell(2, "v"), &rf3, Consistency::All))
        .await
        .unwrap_err();
    let DataError::WriteTimeout(t) = err else {
        panic!("expected a write timeout, got {err:?}");
    };
    assert_eq!((t.received, t.block_for), (2, 3));
    assert_eq!(t.consistency, Consistency::All);
    assert_eq!(t.write_type, WriteType::Simple);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_without_the_table_fails_the_write_at_all() {
    let nodes = three(|s| Spec {
        has_table: false,
        ..s
    })
    .await;
    let rf3 = Replication::Simple(3);
    let err = nodes[0]
        .coordinator
        .write(write("k", cell(1, "v"), &rf3, Consistency::All))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DataError::WriteFailure(m) if m.contains("unknown table")),
        "{err:?}"
    );
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_replicas_down_quorum_is_unavailable_and_one_goes_on() {
    let [a, b, c] = three(|s| s).await;
    let (b_host, c_host) = (b.host, c.host);
    b.stop().await;
    c.stop().await;
    wait_for("the first node sees both others DOWN", || {
        let live = a.gossip.live();
        !live.is_up(b_host) && !live.is_up(c_host)
    })
    .await;
    let rf3 = Replication::Simple(3);
    let err = a
        .coordinator
        .write(write("k", cell(1, "v"), &rf3, Consistency::Quorum))
        .await
        .unwrap_err();
    let DataError::Unavailable(u) = err else {
        panic!("expected Unavailable, got {err:?}");
    };
    assert_eq!((u.required, u.alive), (2, 1));
    let err = read_value(&a, "k", &rf3, Consistency::Quorum)
        .await
        .unwrap_err();
    assert!(matches!(err, DataError::Unavailable(_)), "{err:?}");
    a.coordinator
        .write(write("k", cell(1, "v"), &rf3, Consistency::One))
        .await
        .expect("ONE with one replica up");
    let v = read_value(&a, "k", &rf3, Consistency::One).await.unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_mismatch_reads_full_data_and_repairs_the_stale_replica() {
    let nodes = three(|s| s).await;
    let rf3 = Replication::Simple(3);
    for n in &nodes {
        n.engine.apply(TABLE, &key("k"), cell(10, "old")).unwrap();
    }
    // The two other replicas have a newer value the first lacks.
    for n in &nodes[1..] {
        n.engine.apply(TABLE, &key("k"), cell(20, "new")).unwrap();
    }
    let c = &nodes[0].coordinator;
    // Without read repair: the newest value, and the stale copy stays.
    let v = read_with(
        &nodes[0],
        "k",
        &rf3,
        Consistency::Quorum,
        Speculation::Never,
        false,
    )
    .await
    .unwrap();
    assert_eq!(v.as_deref(), Some("new"));
    assert_eq!(nodes[0].stored("k").as_deref(), Some("old"));
    assert_eq!(
        (c.counts().digest_mismatches, c.counts().read_repairs),
        (1, 0)
    );
    // BLOCKING: repaired before the answer.
    let v = read_value(&nodes[0], "k", &rf3, Consistency::Quorum)
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("new"));
    assert_eq!(
        nodes[0].stored("k").as_deref(),
        Some("new"),
        "repaired before the answer"
    );
    assert_eq!(
        (c.counts().digest_mismatches, c.counts().read_repairs),
        (2, 1)
    );
    // Agreeing replicas: digests match, nothing more.
    read_value(&nodes[0], "k", &rf3, Consistency::Quorum)
        .await
        .unwrap();
    assert_eq!(c.counts().digest_mismatches, 2);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_replica_times_a_read_out_unless_the_table_speculates() {
    let nodes = three(|s| Spec {
        answers_reads: false,
        ..s
    })
    .await;
    let rf3 = Replication::Simple(3);
    // A key owned by the third node: from the first node, the replicas in
    // order of preference are itself, the silent third, then the second.
    let k = (0..1000)
        .map(|i| format!("key{i}"))
        .find(|k| (1..=(1i64 << 62)).contains(&key(k).token))
        .expect("a key in the third node's range");
    nodes[0]
        .coordinator
        .write(write(&k, cell(1, "v"), &rf3, Consistency::All))
        .await
        .expect("every replica takes writes");
    let err = read_with(
        &nodes[0],
        &k,
        &rf3,
        Consistency::Quorum,
        Speculation::Never,
        true,
    )
    .await
    .unwrap_err();
    let DataError::ReadTimeout(t) = err else {
        panic!("expected a read timeout, got {err:?}");
    };
    assert_eq!((t.received, t.block_for, t.data_present), (1, 2, true));
    let fixed = Speculation::Fixed(Duration::from_millis(50));
    let v = read_with(&nodes[0], &k, &rf3, Consistency::Quorum, fixed, true)
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    assert_eq!(nodes[0].coordinator.counts().speculative_retries, 1);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_one_replica_lacks_are_read_on_past_its_row_limit() {
    let nodes = three(|s| s).await;
    let k = key("wide");
    // Node 1 has rows 0-9; node 2 deleted rows 0-4 later; node 3 nothing.
    let mut one = Partition::default();
    for c in 0..10 {
        let (ck, row) = row_at(c, 10, &format!("v{c}"));
        one.rows.insert(ck, row);
    }
    let mut two = Partition::default();
    for c in 0..5 {
        let (ck, row) = row_deleted(c, 20);
        two.rows.insert(ck, row);
    }
    nodes[0].engine.apply(TABLE, &k, one).unwrap();
    nodes[1].engine.apply(TABLE, &k, two).unwrap();
    let all = [Slice::all(&cmp())];
    let got = rows_read(&nodes[2], &k, &all, false, 3).await;
    assert_eq!(got, [(5, "v5".into()), (6, "v6".into()), (7, "v7".into())]);
    assert!(nodes[2].coordinator.counts().short_read_rounds > 0);
    let got = rows_read(&nodes[2], &k, &all, true, 3).await;
    assert_eq!(got, [(7, "v7".into()), (8, "v8".into()), (9, "v9".into())]);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_with_a_row_limit_over_divergent_replicas_answer_as_their_merge() {
    let nodes = three(|s| s).await;
    let slice_sets = [
        vec![Slice::all(&cmp())],
        vec![rows_between(3, 11), rows_between(20, 33)],
    ];
    for seed in 0..8u64 {
        let k = key(&format!("p{seed}"));
        let held = divergent(seed);
        for (n, p) in nodes.iter().zip(&held) {
            n.engine.apply(TABLE, &k, p.clone()).unwrap();
        }
        for slices in &slice_sets {
            for limit in [1, 2, 3, 7, 40, usize::MAX] {
                for reversed in [false, true] {
                    let coordinator = &nodes[(seed % 3) as usize];
                    let got = rows_read(coordinator, &k, slices, reversed, limit).await;
                    let want = expected(&held, slices, reversed, limit);
                    assert_eq!(
                        got, want,
                        "seed {seed}, limit {limit}, reversed {reversed}, slices {slices:?}"
                    );
                }
            }
        }
    }
    for n in nodes {
        n.stop().await;
    }
}
