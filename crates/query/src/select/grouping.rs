//! GROUP BY: one result row per group of rows sharing the partition key and
//! a clustering prefix.
//!
//! As Cassandra 5.0 answers: the GROUP BY columns are primary key columns in
//! their declared order (columns fixed by an EQ restriction may be left
//! out); aggregates run per group; other selected columns show the group's
//! first row; LIMIT, PER PARTITION LIMIT and the page size count groups. A
//! group is closed when a row of the next group comes, or at the end of its
//! partition (the partition key is always part of a group), so a page ends
//! just after a group's last row and the next page starts a new group.

use super::aggregation::Aggregation;
use super::{passes, Run};
use crate::error::{QueryError, Result};
use crate::restrictions::Selection;
use crate::rows::RowView;
use bytes::Bytes;
use varve_schema::{ColumnKind, Table};
use varve_storage::PartitionKey;

/// The open group of a GROUP BY query.
#[derive(Debug, Clone)]
pub struct Grouping {
    /// How many clustering columns a group shares.
    pub prefix_len: usize,
    /// The clustering prefix of the open group, if a row opened one.
    pub open: Option<Vec<Bytes>>,
}

/// The grouping of `group_by`, or `None` without GROUP BY.
pub fn plan(table: &Table, sel: &Selection, group_by: &[String]) -> Result<Option<Grouping>> {
    if group_by.is_empty() {
        return Ok(None);
    }
    let one_partition =
        matches!(&sel.partitions, crate::restrictions::PartitionSelection::Keys(k) if k.len() == 1);
    let mut wanted = group_by.iter().peekable();
    let mut prefix_len = 0;
    for col in table.partition_key().chain(table.clustering()) {
        let Some(name) = wanted.peek() else {
            break;
        };
        if name.as_str() == col.name {
            wanted.next();
            if col.kind == ColumnKind::Clustering {
                prefix_len = col.position as usize + 1;
            }
            continue;
        }
        let fixed = match col.kind {
            ColumnKind::PartitionKey => one_partition,
            _ => (col.position as usize) < sel.clustering.eq_len,
        };
        if !fixed {
            break;
        }
    }
    if let Some(name) = wanted.next() {
        let known = table.column(name).ok_or_else(|| {
            QueryError::Invalid(format!(
                "Undefined column name {name} in table {}.{}",
                table.keyspace, table.name
            ))
        })?;
        return Err(QueryError::Invalid(if known.is_primary_key() {
            "Group by currently only support groups of columns following their declared order in the PRIMARY KEY".into()
        } else {
            format!("Group by is currently only supported on the columns of the PRIMARY KEY, got {name}")
        }));
    }
    Ok(Some(Grouping {
        prefix_len,
        open: None,
    }))
}

impl Run<'_> {
    /// A partition with only a static row is a group of its own (its
    /// clustering columns null). Returns false when the page is full.
    pub(super) fn static_group(
        &mut self,
        view: &RowView,
        key: &PartitionKey,
        key_index: u32,
    ) -> Result<bool> {
        if !self.filters.iter().all(|f| passes(f, view)) {
            return Ok(true);
        }
        self.close_group()?;
        if self.full() {
            return Ok(false);
        }
        self.open_group(&[]);
        self.agg.add(self.projection, view, key.token, self.now)?;
        self.mark(key, key_index, None, None);
        Ok(true)
    }

    /// True when the row with clustering `ck` starts a group: none is
    /// open, or the open one has another prefix.
    pub(super) fn starts_group(&self, ck: &[Bytes]) -> bool {
        let Some(g) = &self.group else {
            return true;
        };
        match &g.open {
            None => true,
            Some(open) => open[..] != ck[..g.prefix_len.min(ck.len())],
        }
    }

    pub(super) fn open_group(&mut self, ck: &[Bytes]) {
        if let Some(g) = &mut self.group {
            g.open = Some(ck[..g.prefix_len.min(ck.len())].to_vec());
        }
    }

    /// Ends the open group, if any: its row joins the page and counts
    /// against LIMIT (also in the paging state, which was marked at the
    /// group's last row).
    pub(super) fn close_group(&mut self) -> Result<()> {
        let Some(open) = self.group.as_mut().and_then(|g| g.open.take()) else {
            return Ok(());
        };
        self.rows.push(self.agg.row(self.projection)?);
        if self.keep_sort_keys {
            self.sort_keys.push(open);
        }
        self.agg = Aggregation::new(self.projection);
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(1);
        }
        if let Some(last) = &mut self.last {
            last.remaining = self.remaining.map(|r| r as i32).unwrap_or(-1);
        }
        Ok(())
    }
}
