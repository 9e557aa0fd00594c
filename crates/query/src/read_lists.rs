//! The lists a write reads before it is planned.
//!
//! Most writes are planned from the statement alone. A few need a list
//! column's current elements (removing values from a list, setting or
//! deleting an element by index), as Cassandra reads them before it builds
//! the mutation. Planning stays synchronous: when it needs a list it lacks,
//! it stops with an error and [`ReadLists`] remembers which list
//! ([`ReadLists::take_missing`]); the caller reads it and plans again with
//! it. So the common write's future holds no read, and the rare one pays
//! one planning pass per list it reads.

use bytes::Bytes;
use varve_schema::Column;
use varve_types::data::PartitionKey;

use crate::collections::ListElements;
use crate::error::QueryError;

/// A list column's value in one row (`prefix`: its clustering; `None`:
/// the static row) of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRef {
    pub key: PartitionKey,
    pub prefix: Option<Vec<Bytes>>,
    pub column: String,
}

/// Lists read so far for one statement, and the one planning lacked.
#[derive(Debug, Default)]
pub struct ReadLists {
    entries: Vec<(ListRef, ListElements)>,
    missing: std::cell::RefCell<Option<ListRef>>,
}

impl ReadLists {
    /// The elements read for `col` of the row (`key`, `prefix`); else an
    /// error that stops planning, the list remembered as the one to read.
    pub fn need(
        &self,
        key: &PartitionKey,
        prefix: Option<&Vec<Bytes>>,
        col: &Column,
    ) -> Result<&ListElements, QueryError> {
        let found = self
            .entries
            .iter()
            .find(|(r, _)| r.key == *key && r.prefix.as_ref() == prefix && r.column == col.name);
        if let Some((_, elements)) = found {
            return Ok(elements);
        }
        *self.missing.borrow_mut() = Some(ListRef {
            key: key.clone(),
            prefix: prefix.cloned(),
            column: col.name.clone(),
        });
        Err(QueryError::Server(format!(
            "planning needs the current elements of list {}",
            col.name
        )))
    }

    /// The list planning stopped for, if it stopped for one.
    pub fn take_missing(&mut self) -> Option<ListRef> {
        self.missing.get_mut().take()
    }

    pub fn insert(&mut self, list: ListRef, elements: ListElements) {
        self.entries.push((list, elements));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_types::CqlType;

    fn list_column() -> Column {
        let t = varve_schema::Table::create(varve_schema::table::TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: 1,
            columns: vec![
                ("k".into(), CqlType::Int, false),
                ("l".into(), CqlType::List(Box::new(CqlType::Int)), false),
            ],
            partition_key: vec!["k".into()],
            clustering: vec![],
            options: Default::default(),
        })
        .expect("valid table");
        t.column("l").expect("column l").clone()
    }

    #[test]
    fn a_missing_list_stops_planning_once_and_is_found_after_it_is_read() {
        let col = list_column();
        let key = PartitionKey::new(Bytes::from_static(&[0, 0, 0, 1]));
        let mut lists = ReadLists::default();
        assert!(lists.take_missing().is_none());
        assert!(lists.need(&key, None, &col).is_err());
        let missing = lists.take_missing().expect("remembered");
        assert_eq!(missing.column, "l");
        assert!(lists.take_missing().is_none(), "taken once");
        lists.insert(
            missing,
            vec![(
                Bytes::from_static(b"p"),
                varve_types::data::Cell::live(1, Bytes::new()),
            )],
        );
        assert_eq!(lists.need(&key, None, &col).expect("read").len(), 1);
        let other_row = Some(vec![Bytes::from_static(b"c")]);
        assert!(
            lists.need(&key, other_row.as_ref(), &col).is_err(),
            "another row's list"
        );
    }
}
