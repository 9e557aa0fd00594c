//! Actions taken when a phase starts: a CQL statement through the runner's
//! session, or `nodetool garbagecollect` in the background (through a Varve
//! admin port, or a `--nodetool` command for Cassandra) while the phase's
//! load continues. Each leaves its marks in events.csv.

use std::time::Duration;

use scylla::client::session::Session;
use tokio::task::JoinHandle;

use crate::events::EventLog;
use crate::external;
use crate::http;
use crate::sampler::Source;

/// Longest a garbagecollect may run before the bench stops waiting for its
/// answer (the node carries on; its end is then not marked).
pub const GARBAGECOLLECT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Runs `statement`; the event is the statement, or its failure.
pub async fn run_cql(session: &Session, statement: &str, events: &EventLog, quiet: bool) {
    let t = events.clock().now_s();
    match session.query_unpaged(statement, ()).await {
        Ok(_) => events.record_at(t, statement, quiet),
        Err(e) => events.record_at(t, &format!("{statement} failed: {e}"), quiet),
    }
}

/// The admin API path of a row-granularity, one-job garbagecollect.
pub fn garbagecollect_path(keyspace: &str, table: &str) -> String {
    format!("/nodetool/garbagecollect?keyspace={keyspace}&tables={table}&granularity=ROW&jobs=1")
}

/// The event labels of a garbagecollect that ended with `outcome`:
/// `(label at its start, label at its end)`; a node without the operation
/// gets one "not supported" mark at the start.
pub fn garbagecollect_labels(what: &str, outcome: &GcOutcome) -> (String, Option<String>) {
    match outcome {
        GcOutcome::Finished => (format!("{what} started"), Some(format!("{what} finished"))),
        GcOutcome::NotSupported(why) => (format!("{what} not supported ({why})"), None),
        GcOutcome::Failed(why) => (
            format!("{what} started"),
            Some(format!("{what} failed: {why}")),
        ),
    }
}

/// How a garbagecollect ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GcOutcome {
    Finished,
    NotSupported(String),
    Failed(String),
}

/// The admin API path of a flush of one table.
pub fn flush_path(keyspace: &str, table: &str) -> String {
    format!("/nodetool/flush?keyspace={keyspace}&tables={table}")
}

/// `nodetool flush keyspace table`, recorded as an event; a failure is
/// recorded too and does not stop the run.
async fn flush_first(source: &Source, keyspace: &str, table: &str, events: &EventLog, quiet: bool) {
    let what = format!("nodetool flush {keyspace}.{table}");
    let result = match source {
        Source::Admin(bases) => {
            let path = flush_path(keyspace, table);
            let flushes = bases.iter().map(|base| async {
                match http::request(base, "POST", &path, GARBAGECOLLECT_TIMEOUT).await {
                    Ok(r) if r.status == 200 => Ok(()),
                    Ok(r) => Err(format!("HTTP {}", r.status)),
                    Err(e) => Err(e.to_string()),
                }
            });
            futures::future::join_all(flushes)
                .await
                .into_iter()
                .collect::<Result<(), String>>()
        }
        Source::Nodetool(prefixes)
        | Source::Jolokia {
            nodetool: prefixes, ..
        } if !prefixes.is_empty() => {
            let args = ["flush", keyspace, table];
            let flushes = prefixes
                .iter()
                .map(|prefix| external::run_nodetool(prefix, &args, GARBAGECOLLECT_TIMEOUT));
            futures::future::join_all(flushes)
                .await
                .into_iter()
                .try_for_each(|r| r.map(|_| ()))
        }
        Source::Nodetool(_) | Source::Jolokia { .. } | Source::None => return,
    };
    match result {
        Ok(()) => events.record(&what, quiet),
        Err(e) => events.record(&format!("{what} failed: {e}"), quiet),
    }
}

/// Starts `nodetool flush` then `nodetool garbagecollect keyspace.table` in
/// the background.
pub fn spawn_garbagecollect(
    source: Source,
    keyspace: String,
    table: String,
    events: EventLog,
    quiet: bool,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let what = format!("nodetool garbagecollect {keyspace}.{table}");
        let t = events.clock().now_s();
        if !quiet {
            eprintln!("[action] {what}");
        }
        // garbagecollect rewrites sstables only: flush first, so that what
        // the load wrote (a seed node holds its data on disk) is collected.
        flush_first(&source, &keyspace, &table, &events, quiet).await;
        let outcome = match source {
            // Every node at once, as `nodetool garbagecollect` run on each.
            Source::Admin(bases) => {
                let path = garbagecollect_path(&keyspace, &table);
                let runs = bases.iter().map(|base| gc_on(base, &path));
                let outcomes = futures::future::join_all(runs).await;
                outcomes
                    .into_iter()
                    .find(|o| *o != GcOutcome::Finished)
                    .unwrap_or(GcOutcome::Finished)
            }
            Source::Nodetool(prefixes)
            | Source::Jolokia {
                nodetool: prefixes, ..
            } if !prefixes.is_empty() => {
                let args = ["garbagecollect", "-g", "ROW", "-j", "1", &keyspace, &table];
                let runs = prefixes
                    .iter()
                    .map(|prefix| external::run_nodetool(prefix, &args, GARBAGECOLLECT_TIMEOUT));
                let failed = futures::future::join_all(runs)
                    .await
                    .into_iter()
                    .find_map(Result::err);
                match failed {
                    None => GcOutcome::Finished,
                    Some(e) => GcOutcome::Failed(e),
                }
            }
            Source::Nodetool(_) | Source::Jolokia { .. } | Source::None => {
                GcOutcome::NotSupported("no admin address and no --nodetool".into())
            }
        };
        let (start, end) = garbagecollect_labels(&what, &outcome);
        events.record_at(t, &start, quiet);
        if let Some(end) = end {
            events.record(&end, quiet);
        }
    })
}

/// A garbagecollect through one node's admin port.
async fn gc_on(base: &http::BaseUrl, path: &str) -> GcOutcome {
    match http::request(base, "POST", path, GARBAGECOLLECT_TIMEOUT).await {
        Ok(r) if r.status == 200 => GcOutcome::Finished,
        Ok(r) if r.status == 404 => GcOutcome::NotSupported("the admin API answered 404".into()),
        Ok(r) => GcOutcome::Failed(format!("HTTP {}: {}", r.status, r.body.trim())),
        Err(e) => GcOutcome::Failed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;

    #[test]
    fn labels_and_path() {
        assert_eq!(
            garbagecollect_path("tlp_stress", "keyvaluelargeblob_2"),
            "/nodetool/garbagecollect?keyspace=tlp_stress&tables=keyvaluelargeblob_2&granularity=ROW&jobs=1"
        );
        let what = "nodetool garbagecollect ks.t";
        assert_eq!(
            garbagecollect_labels(what, &GcOutcome::Finished),
            (format!("{what} started"), Some(format!("{what} finished")))
        );
        let (start, end) = garbagecollect_labels(what, &GcOutcome::NotSupported("404".into()));
        assert_eq!(
            (start.as_str(), end),
            ("nodetool garbagecollect ks.t not supported (404)", None)
        );
    }

    /// An admin port that answers 200 to everything; the requests it got.
    async fn admin_answering_ok() -> (http::BaseUrl, std::sync::Arc<std::sync::Mutex<Vec<String>>>)
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = http::BaseUrl::parse(&listener.local_addr().unwrap().to_string()).unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = std::sync::Arc::clone(&seen);
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 512];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let line = String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                log.lock().unwrap().push(line);
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        (base, seen)
    }

    #[tokio::test]
    async fn a_cluster_is_flushed_and_collected_on_every_node() {
        let (a, seen_a) = admin_answering_ok().await;
        let (b, seen_b) = admin_answering_ok().await;
        let events = EventLog::new(Clock::start());
        spawn_garbagecollect(
            Source::Admin(vec![a, b]),
            "ks".into(),
            "t".into(),
            events.clone(),
            true,
        )
        .await
        .unwrap();
        for seen in [seen_a, seen_b] {
            let seen = seen.lock().unwrap().clone();
            assert_eq!(seen.len(), 2, "{seen:?}");
            assert!(
                seen[0].contains("/nodetool/flush") && seen[1].contains("/nodetool/garbagecollect")
            );
        }
        let labels: Vec<String> = events.snapshot().into_iter().map(|e| e.label).collect();
        assert!(
            labels
                .iter()
                .any(|l| l.ends_with("garbagecollect ks.t finished")),
            "{labels:?}"
        );
    }

    #[tokio::test]
    async fn a_404_is_marked_not_supported() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = http::BaseUrl::parse(&listener.local_addr().unwrap().to_string()).unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            // Every request (the flush, then the garbagecollect) gets a 404.
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 404 Not Found\r\n\r\nnot found\n")
                    .await;
            }
        });
        let events = EventLog::new(Clock::start());
        spawn_garbagecollect(
            Source::Admin(vec![base]),
            "ks".into(),
            "t".into(),
            events.clone(),
            true,
        )
        .await
        .unwrap();
        let labels: Vec<String> = events.snapshot().into_iter().map(|e| e.label).collect();
        assert_eq!(
            labels,
            [
                "nodetool flush ks.t failed: HTTP 404",
                "nodetool garbagecollect ks.t not supported (the admin API answered 404)"
            ]
        );
    }

    /// With Jolokia sampling, the actions still go through nodetool; with
    /// no nodetool given they are not supported, never reported done.
    #[tokio::test]
    async fn with_jolokia_the_actions_run_through_nodetool_or_not_at_all() {
        let agents = vec![http::BaseUrl::parse("127.0.0.1:1").unwrap()];
        let labels = |events: &EventLog| -> Vec<String> {
            events.snapshot().into_iter().map(|e| e.label).collect()
        };
        let with_nodetool = EventLog::new(Clock::start());
        spawn_garbagecollect(
            Source::Jolokia {
                agents: agents.clone(),
                // `true flush ks t` and `true garbagecollect ...` succeed.
                nodetool: vec![vec!["true".to_string()]],
            },
            "ks".into(),
            "t".into(),
            with_nodetool.clone(),
            true,
        )
        .await
        .unwrap();
        let got = labels(&with_nodetool);
        assert!(got.iter().any(|l| l == "nodetool flush ks.t"), "{got:?}");
        assert!(
            got.iter()
                .any(|l| l.ends_with("garbagecollect ks.t finished")),
            "{got:?}"
        );
        let without = EventLog::new(Clock::start());
        spawn_garbagecollect(
            Source::Jolokia {
                agents,
                nodetool: Vec::new(),
            },
            "ks".into(),
            "t".into(),
            without.clone(),
            true,
        )
        .await
        .unwrap();
        let got = labels(&without);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].contains("not supported"), "{got:?}");
    }
}
