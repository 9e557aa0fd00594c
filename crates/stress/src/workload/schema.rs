//! The CQL text of each workload: CREATE statements and the statements
//! prepared for its operations. Kept as pure functions of the config so they
//! can be checked without a server.

use crate::config::{StressConfig, Workload};
use crate::values::column_names;

/// `CREATE KEYSPACE IF NOT EXISTS`: NetworkTopologyStrategy with the
/// replication factor in data centre `dc` (the contact node's, as the seeds
/// ran `'DC1': 3`), or SimpleStrategy when the data centre is not known.
pub fn create_keyspace(c: &StressConfig, dc: Option<&str>) -> String {
    match dc {
        Some(dc) => format!(
            "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': 'NetworkTopologyStrategy', '{}': {}}}",
            c.keyspace,
            dc.replace('\'', "''"),
            c.replication_factor
        ),
        None => format!(
            "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {}}}",
            c.keyspace, c.replication_factor
        ),
    }
}

/// `CREATE TABLE IF NOT EXISTS` for the workload, with the compaction map.
pub fn create_table(c: &StressConfig) -> String {
    let name = qualified(c);
    let (columns, mut options) = match c.workload {
        Workload::Kv => {
            let cols: Vec<String> = column_names(c.column_count).into_iter().map(|n| format!("{n} blob")).collect();
            (format!("key blob PRIMARY KEY, {}", cols.join(", ")), Vec::new())
        }
        Workload::LargeBlob => (
            "key text, column_0 blob, column_1 blob, value blob, PRIMARY KEY (key, column_0, column_1)".to_string(),
            Vec::new(),
        ),
        Workload::TimeSeries => (
            "series blob, ts bigint, value blob, PRIMARY KEY (series, ts)".to_string(),
            vec!["CLUSTERING ORDER BY (ts DESC)".to_string()],
        ),
        Workload::Lwt => ("key blob PRIMARY KEY, v bigint".to_string(), Vec::new()),
    };
    if let Some(compaction) = &c.compaction {
        options.push(format!("compaction = {}", compaction.trim()));
    }
    let with = if options.is_empty() {
        String::new()
    } else {
        format!(" WITH {}", options.join(" AND "))
    };
    format!("CREATE TABLE IF NOT EXISTS {name} ({columns}){with}")
}

/// `keyspace.table`.
pub fn qualified(c: &StressConfig) -> String {
    format!("{}.{}", c.keyspace, c.workload.table())
}

/// The statements prepared for a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementText {
    pub write: String,
    pub read: String,
    pub delete: Option<String>,
    /// LWT: the conditional update.
    pub update_if: Option<String>,
}

/// The statements of `c.workload`.
pub fn statements(c: &StressConfig) -> StatementText {
    let t = qualified(c);
    match c.workload {
        Workload::Kv => {
            let names = column_names(c.column_count);
            let marks = vec!["?"; c.column_count].join(", ");
            StatementText {
                write: format!(
                    "INSERT INTO {t} (key, {}) VALUES (?, {marks})",
                    names.join(", ")
                ),
                read: format!("SELECT {} FROM {t} WHERE key = ?", names.join(", ")),
                delete: Some(format!("DELETE FROM {t} WHERE key = ?")),
                update_if: None,
            }
        }
        Workload::LargeBlob => StatementText {
            write: format!("INSERT INTO {t} (key, column_0, column_1, value) VALUES (?, ?, ?, ?)"),
            read: format!("SELECT value FROM {t} WHERE key = ? AND column_0 = ? AND column_1 = ?"),
            delete: Some(format!(
                "DELETE FROM {t} WHERE key = ? AND column_0 = ? AND column_1 = ?"
            )),
            update_if: None,
        },
        Workload::TimeSeries => StatementText {
            write: format!("INSERT INTO {t} (series, ts, value) VALUES (?, ?, ?)"),
            read: format!(
                "SELECT ts, value FROM {t} WHERE series = ? LIMIT {}",
                c.timeseries_read_rows
            ),
            delete: None,
            update_if: None,
        },
        Workload::Lwt => StatementText {
            write: format!("INSERT INTO {t} (key, v) VALUES (?, ?) IF NOT EXISTS"),
            read: format!("SELECT v FROM {t} WHERE key = ?"),
            delete: None,
            update_if: Some(format!("UPDATE {t} SET v = ? WHERE key = ? IF v = ?")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_schema_is_cassandra_stress_default() {
        let c = StressConfig::default();
        assert_eq!(
            create_table(&c),
            "CREATE TABLE IF NOT EXISTS keyspace1.standard1 (key blob PRIMARY KEY, \"C0\" blob, \"C1\" blob, \
             \"C2\" blob, \"C3\" blob, \"C4\" blob)"
        );
        assert!(create_keyspace(&c, None).contains("'replication_factor': 1"));
        let nts = create_keyspace(&c, Some("dc1"));
        assert!(
            nts.contains("'class': 'NetworkTopologyStrategy', 'dc1': 1"),
            "{nts}"
        );
        assert!(create_keyspace(&c, Some("it's")).contains("'it''s': 1"));
        let s = statements(&c);
        assert_eq!(s.write.matches('?').count(), 6);
    }

    #[test]
    fn options_are_joined() {
        let c = StressConfig {
            workload: Workload::TimeSeries,
            compaction: Some("{'class':'LeveledCompactionStrategy'}".into()),
            ..StressConfig::default()
        };
        assert!(create_table(&c).ends_with(
            " WITH CLUSTERING ORDER BY (ts DESC) AND compaction = {'class':'LeveledCompactionStrategy'}"
        ));
    }
}
