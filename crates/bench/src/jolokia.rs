//! Cassandra's numbers through a Jolokia agent (`--jolokia`): one HTTP
//! request per node and sample, a bulk read of the JMX attributes that
//! `nodetool compactionstats` and `tablestats` print, answered as JSON by
//! the agent inside the node's JVM.
//!
//! Sampling with nodetool started a JVM per call (two per node and
//! sample, each a few CPU-seconds on two cores), so a Cassandra run had a
//! sample every 20 s or so and paid for it in CPU taken from the nodes
//! under test. The agent answers in milliseconds from the running JVM, so
//! Cassandra is sampled every second, as Varve is (docs/design/bench.md,
//! server.csv).
//!
//! What is read, per node (the MBeans nodetool reads):
//! - `metrics:type=Compaction,name=PendingTasks` (compactionstats' pending
//!   tasks), `CompletedTasks`, `BytesCompacted` (a counter, as a rate);
//! - the table's `LiveSSTableCount` and `LiveDiskSpaceUsed`;
//! - `db:type=Tables,...` `SSTableCountPerLevel` (level 0 is the unleveled
//!   sstables; null off LCS).
//!
//! Cassandra has no counter of bytes its commitlog wrote, so that column
//! stays empty for it.

use serde_json::{json, Value};

use crate::sampler::{sum_present, Rates, ServerRow, TableUnderTest};

/// The path of the agent's bulk request.
pub const PATH: &str = "/jolokia/";
/// Reads in one bulk request, and answers expected back.
pub const READS: usize = 6;

/// One read: the MBean and its attribute.
struct Read {
    mbean: String,
    attribute: &'static str,
}

/// The reads of one sample, in the order [`parse`] expects them.
fn reads(table: &TableUnderTest) -> [Read; READS] {
    let (ks, t) = (&table.keyspace, &table.table);
    let metric = |name: &str, attribute| Read {
        mbean: format!("org.apache.cassandra.metrics:type=Compaction,name={name}"),
        attribute,
    };
    let table_metric = |name: &str, attribute| Read {
        mbean: format!(
            "org.apache.cassandra.metrics:type=Table,keyspace={ks},scope={t},name={name}"
        ),
        attribute,
    };
    [
        metric("PendingTasks", "Value"),
        metric("CompletedTasks", "Value"),
        metric("BytesCompacted", "Count"),
        table_metric("LiveSSTableCount", "Value"),
        table_metric("LiveDiskSpaceUsed", "Count"),
        Read {
            mbean: format!("org.apache.cassandra.db:type=Tables,keyspace={ks},table={t}"),
            attribute: "SSTableCountPerLevel",
        },
    ]
}

/// The JSON body of one node's bulk read.
pub fn request_body(table: &TableUnderTest) -> String {
    let reads: Vec<Value> = reads(table)
        .into_iter()
        .map(|r| json!({"type": "read", "mbean": r.mbean, "attribute": r.attribute}))
        .collect();
    Value::Array(reads).to_string()
}

/// One node's numbers; `None` where the agent had no value (a table not
/// created yet answers 404 for its MBeans).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NodeNumbers {
    pub pending: Option<f64>,
    pub completed: Option<f64>,
    pub bytes_compacted: Option<f64>,
    pub live_sstables: Option<f64>,
    pub space_used: Option<f64>,
    /// `SSTableCountPerLevel[0]`, when the table is on LCS.
    pub level0: Option<f64>,
}

/// Parses the agent's answer to [`request_body`]: an array with one
/// object per read, in order. `None` when the text is not such an array.
pub fn parse(text: &str) -> Option<NodeNumbers> {
    let Ok(Value::Array(answers)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    if answers.len() != READS {
        return None;
    }
    let value = |i: usize| {
        let a = &answers[i];
        match a.get("status").and_then(Value::as_u64) {
            Some(200) => a.get("value"),
            _ => None,
        }
    };
    let number = |i: usize| value(i).and_then(Value::as_f64);
    let level0 = value(5)
        .and_then(Value::as_array)
        .and_then(|levels| levels.first())
        .and_then(Value::as_f64);
    Some(NodeNumbers {
        pending: number(0),
        completed: number(1),
        bytes_compacted: number(2),
        live_sstables: number(3),
        space_used: number(4),
        level0,
    })
}

/// The row of all nodes at `t`: each number summed over the nodes (empty
/// where none has it), bytes compacted per second from the summed counter.
pub fn row(t: f64, nodes: &[NodeNumbers], table: &TableUnderTest, rates: &mut Rates) -> ServerRow {
    let sum = |f: fn(&NodeNumbers) -> Option<f64>| sum_present(nodes.iter().map(f));
    let level0 = match table.leveled {
        true => sum(|n| n.level0),
        false => None,
    };
    ServerRow {
        t,
        pending_compactions: sum(|n| n.pending),
        compaction_bytes_per_s: rates.compacted.next(t, sum(|n| n.bytes_compacted)),
        live_sstables: sum(|n| n.live_sstables),
        unleveled_sstables: level0,
        space_used_bytes: sum(|n| n.space_used),
        compactions_completed: sum(|n| n.completed),
        ..ServerRow::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(leveled: bool) -> TableUnderTest {
        TableUnderTest {
            keyspace: "ks".into(),
            table: "t".into(),
            leveled,
        }
    }

    /// An answer shaped as Jolokia 2.1 gives it (recorded from Cassandra
    /// 5.0.4's agent, values changed).
    fn answer(bytes: u64, levels: &str) -> String {
        format!(
            r#"[{{"request":{{}},"value":7,"status":200}},
               {{"request":{{}},"value":51,"status":200}},
               {{"request":{{}},"value":{bytes},"status":200}},
               {{"request":{{}},"value":12,"status":200}},
               {{"request":{{}},"value":6842,"status":200}},
               {{"request":{{}},"value":{levels},"status":200}}]"#
        )
    }

    #[test]
    fn the_request_names_the_table_under_test() {
        let body: Value = serde_json::from_str(&request_body(&table(true))).unwrap();
        let reads = body.as_array().unwrap();
        assert_eq!(reads.len(), READS);
        assert_eq!(
            reads[3]["mbean"],
            "org.apache.cassandra.metrics:type=Table,keyspace=ks,scope=t,name=LiveSSTableCount"
        );
        assert_eq!(reads[5]["attribute"], "SSTableCountPerLevel");
        assert!(reads.iter().all(|r| r["type"] == "read"));
    }

    #[test]
    fn answers_parse_and_missing_values_stay_empty() {
        let n = parse(&answer(1000, "[4,10,0]")).unwrap();
        assert_eq!(
            n,
            NodeNumbers {
                pending: Some(7.0),
                completed: Some(51.0),
                bytes_compacted: Some(1000.0),
                live_sstables: Some(12.0),
                space_used: Some(6842.0),
                level0: Some(4.0),
            }
        );
        assert_eq!(parse(&answer(1, "null")).unwrap().level0, None);
        // A table not created yet: its reads fail with 404.
        let missing = answer(1, "null").replace(
            r#""value":12,"status":200"#,
            r#""error":"not found","status":404"#,
        );
        assert_eq!(parse(&missing).unwrap().live_sstables, None);
        // Exactly one answer per read: one fewer or one more is not ours.
        let answers: Vec<Value> = serde_json::from_str(&answer(1, "null")).unwrap();
        let fewer = Value::Array(answers[..READS - 1].to_vec()).to_string();
        let mut more = answers.clone();
        more.push(answers[0].clone());
        assert_eq!(parse(&fewer), None);
        assert_eq!(parse(&Value::Array(more).to_string()), None);
        assert_eq!(parse("[]"), None);
        assert_eq!(parse("{\"status\":200}"), None);
        assert_eq!(parse("not json"), None);
    }

    #[test]
    fn nodes_sum_and_bytes_become_a_rate() {
        let mut rates = Rates::default();
        let a = parse(&answer(1000, "[4,10]")).unwrap();
        let b = parse(&answer(3000, "[1,2]")).unwrap();
        let first = row(0.0, &[a, b], &table(true), &mut rates);
        assert_eq!(first.pending_compactions, Some(14.0));
        assert_eq!(first.live_sstables, Some(24.0));
        assert_eq!(first.unleveled_sstables, Some(5.0));
        assert_eq!(first.compactions_completed, Some(102.0));
        let a2 = parse(&answer(5000, "[4,10]")).unwrap();
        let second = row(2.0, &[a2, b], &table(false), &mut rates);
        assert_eq!(second.compaction_bytes_per_s, Some(2000.0));
        assert_eq!(second.unleveled_sstables, None, "off LCS");
    }
}
