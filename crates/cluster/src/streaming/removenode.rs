//! Removing a dead node (`nodetool removenode`): the ranges it replicated
//! are fetched by the nodes that gain them, each from a surviving replica
//! (docs/design/topology.md, section 5).
//!
//! The node that runs the removal has made the dead node `Leaving` (its
//! record, proposed on its behalf); it then asks each gaining node, with
//! STREAM_REQUEST, to pull the range from a live natural replica, and
//! pulls itself what it gains. Every step is safe to repeat.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::bootstrap::{wait_for_epoch, BootstrapReport, StreamTable};
use super::plan::RangeSource;
use super::pull::Puller;
use crate::coordinator::{Coordinator, Topology};
use crate::net::{Failure, FailureReason, HostId, Messaging, Request, Verb};
use crate::verbs::stream::{decode_fetch, encode_fetch, FetchRequest};

/// How long a node may take to fetch one range it was asked for.
pub const STREAM_REQUEST_TIMEOUT: Duration = Duration::from_secs(3600);

/// How often the node that asked a gainer looks whether it is still UP
/// in the generation it was asked in.
pub const GAINER_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Answers STREAM_REQUEST: pulls the range with `puller`.
pub fn serve_fetches(messaging: &Messaging, puller: Arc<Puller>) {
    messaging.register(Verb::STREAM_REQUEST, move |req: Request| {
        let puller = Arc::clone(&puller);
        async move {
            let fetch = match decode_fetch(&req.payload) {
                Ok(f) => f,
                Err(e) => return Some(Err(e.failure())),
            };
            let range = RangeSource {
                start: fetch.start,
                end: fetch.end,
                source: fetch.source,
                address: fetch.address,
            };
            Some(match puller.pull(fetch.table, &range).await {
                Ok(_) => Ok(Bytes::new()),
                Err(e) => Err(Failure::new(FailureReason::UNKNOWN, e)),
            })
        }
    });
}

/// One range of the removed node: who gains it, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    pub table: u128,
    pub gainer: HostId,
    pub gainer_address: std::net::SocketAddr,
    pub gainer_is_local: bool,
    pub from: RangeSource,
}

/// The restores that bring `removed`'s ranges of `table` back to their
/// replication factor, each from one live replica; an error naming a
/// range no live replica holds.
pub fn restores(
    topology: &Topology,
    table: &StreamTable,
    removed: HostId,
    is_up: impl Fn(&crate::coordinator::Host) -> bool,
) -> Result<Vec<Restore>, String> {
    restores_from(topology, table, removed, is_up, false)
}

/// [`restores`], or with `every_source` one restore from each live
/// replica of each range: the Paxos state's, which any one survivor may
/// lack a proposal of (`plan::paxos_sources` says why).
pub fn restores_from(
    topology: &Topology,
    table: &StreamTable,
    removed: HostId,
    is_up: impl Fn(&crate::coordinator::Host) -> bool,
    every_source: bool,
) -> Result<Vec<Restore>, String> {
    let mut out = Vec::new();
    for m in topology.movements(&table.replication) {
        if !m
            .natural
            .iter()
            .any(|&n| topology.host(n).host_id == removed)
        {
            continue;
        }
        let live: Vec<&crate::coordinator::Host> = m
            .natural
            .iter()
            .map(|&n| topology.host(n))
            .filter(|h| h.host_id != removed && is_up(h))
            .collect();
        let sources = match every_source {
            true => &live[..],
            false => &live[..live.len().min(1)],
        };
        for gainer in m.future.iter().filter(|n| !m.natural.contains(n)) {
            if sources.is_empty() {
                return Err(format!(
                    "{}: range ({}, {}] has no live replica left to copy from",
                    table.name, m.start, m.end
                ));
            }
            let g = topology.host(*gainer);
            for source in sources {
                out.push(Restore {
                    table: table.table,
                    gainer: g.host_id,
                    gainer_address: g.address,
                    gainer_is_local: g.is_local,
                    from: RangeSource {
                        start: m.start,
                        end: m.end,
                        source: source.host_id,
                        address: source.address,
                    },
                });
            }
        }
    }
    Ok(out)
}

/// Brings every range of `removed` in `tables` back to its replication
/// factor, once every UP node has applied `epoch` (the dead node made
/// `Leaving`).
pub async fn restore(
    coordinator: &Coordinator,
    puller: &Puller,
    tables: &[StreamTable],
    removed: HostId,
    epoch: u64,
) -> Result<BootstrapReport, String> {
    wait_for_epoch(coordinator, puller, epoch).await?;
    let topology = coordinator.topology();
    let mut report = BootstrapReport::default();
    for t in tables {
        let every_source = Some(t.table) == puller.paxos_table();
        let todo = restores_from(
            &topology,
            t,
            removed,
            |h| coordinator.is_up(h),
            every_source,
        )?;
        tracing::info!("removenode: {}: {} ranges to restore", t.name, todo.len());
        let shown = puller.begin("removenode", &t.name, todo.len());
        for r in &todo {
            let mut bytes = 0;
            if r.gainer_is_local {
                let one = puller.pull(r.table, &r.from).await?;
                bytes = one.bytes;
                report.moved += one;
            } else {
                ask(coordinator, r).await?;
            }
            if let Some(s) = &shown {
                s.range_done(bytes);
            }
            report.ranges += 1;
        }
        report.tables += 1;
    }
    Ok(report)
}

/// Asks `r.gainer` to fetch its range, and waits until it has, or until
/// it is DOWN or restarted: its answer would then never come, and the
/// request would wait out [`STREAM_REQUEST_TIMEOUT`] (an hour) for
/// nothing.
async fn ask(coordinator: &Coordinator, r: &Restore) -> Result<(), String> {
    let (messaging, _, clock) = coordinator.parts();
    let (start, end, gainer) = (r.from.start, r.from.end, r.gainer_address);
    let Some(asked_in) = coordinator.up_generation(r.gainer) else {
        return Err(format!(
            "{gainer} is DOWN: it cannot fetch ({start}, {end}]"
        ));
    };
    let payload = encode_fetch(&FetchRequest {
        table: r.table,
        start,
        end,
        source: r.from.source,
        address: r.from.address,
    });
    let pending = messaging
        .request(
            gainer,
            Verb::STREAM_REQUEST,
            payload,
            STREAM_REQUEST_TIMEOUT,
        )
        .map_err(|e| e.to_string())?;
    let lost = async {
        while coordinator.up_generation(r.gainer) == Some(asked_in) {
            clock.sleep(GAINER_CHECK_INTERVAL).await;
        }
    };
    let answer = tokio::select! {
        biased;
        answer = pending => answer
            .map_err(|e| format!("{gainer} could not fetch ({start}, {end}]: {e}"))?,
        () = lost => {
            return Err(format!(
                "{gainer} went DOWN or restarted while it fetched ({start}, {end}]"
            ))
        }
    };
    if answer.from_host != r.gainer {
        return Err(format!(
            "{} answered as {}",
            r.gainer_address, answer.from_host
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::Replication;
    use crate::metadata::NodeState;

    use crate::metadata::state::tests::record;

    #[test]
    fn each_range_of_the_removed_node_goes_to_its_gainer_from_a_survivor() {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(2, &[200], NodeState::Leaving),
            record(3, &[300], NodeState::Normal),
            record(4, &[400], NodeState::Normal),
        ];
        let t = Topology::from_records(records.iter(), HostId([1; 16]));
        let table = StreamTable {
            table: 5,
            name: "ks.t".into(),
            replication: Replication::Simple(2),
        };
        let removed = HostId([2; 16]);
        let got = restores(&t, &table, removed, |_| true).unwrap();
        let seen: Vec<(i64, i64, u8, u8)> = got
            .iter()
            .map(|r| (r.from.start, r.from.end, r.gainer.0[0], r.from.source.0[0]))
            .collect();
        // (400, 100]: 1,2 -> 1,3: 3 gains it from 1. (100, 200]: 2,3 ->
        // 3,4: 4 gains it from 3.
        assert_eq!(seen, vec![(400, 100, 3, 1), (100, 200, 4, 3)]);
        // With the only survivor of (100, 200] down, nothing can restore it.
        let three = HostId([3; 16]);
        let err = restores(&t, &table, removed, |h| h.host_id != three).unwrap_err();
        assert!(err.contains("(100, 200]"), "{err}");
        // The Paxos state comes from every survivor: at RF 3, (100, 200]
        // (2,3,4 -> 3,4,1) goes to 1 from both 3 and 4.
        let rf3 = StreamTable {
            replication: Replication::Simple(3),
            ..table
        };
        let every = restores_from(&t, &rf3, removed, |_| true, true).unwrap();
        let mut from: Vec<u8> = every
            .iter()
            .filter(|r| (r.from.start, r.from.end) == (100, 200))
            .map(|r| r.from.source.0[0])
            .collect();
        from.sort();
        assert_eq!(from, vec![3, 4]);
        let one = restores_from(&t, &rf3, removed, |_| true, false).unwrap();
        assert_eq!(one.len() * 2, every.len(), "{one:?} {every:?}");
    }
}
