//! User-defined types in a keyspace: who uses a type, and how a changed
//! type reaches the columns and types that hold it.
//!
//! A column's [`CqlType`] carries the resolved [`UserType`] (so values can
//! be encoded and compared without the schema); the keyspace's `types`
//! map is the authority. Invariant: after [`Keyspace::put_type`], every
//! copy of a type inside the keyspace equals the map's entry.

use crate::keyspace::Keyspace;
use std::sync::Arc;
use varve_types::{CqlType, UserType};

/// `ty` with every copy of the user type `new` names replaced by `new`.
pub fn substitute(ty: &CqlType, new: &Arc<UserType>) -> CqlType {
    let sub = |t: &CqlType| Box::new(substitute(t, new));
    match ty {
        CqlType::Udt(u) if u.keyspace == new.keyspace && u.name == new.name => {
            CqlType::Udt(new.clone())
        }
        CqlType::Udt(u) => {
            let mut u = (**u).clone();
            u.field_types = u.field_types.iter().map(|t| substitute(t, new)).collect();
            CqlType::Udt(Arc::new(u))
        }
        CqlType::Frozen(t) => CqlType::Frozen(sub(t)),
        CqlType::List(t) => CqlType::List(sub(t)),
        CqlType::Set(t) => CqlType::Set(sub(t)),
        CqlType::Map(k, v) => CqlType::Map(sub(k), sub(v)),
        CqlType::Tuple(items) => CqlType::Tuple(items.iter().map(|t| substitute(t, new)).collect()),
        other => other.clone(),
    }
}

/// `ty` with every user type replaced by a frozen tuple of its field
/// types, as Cassandra records a dropped column's type.
pub fn expand(ty: &CqlType) -> CqlType {
    let sub = |t: &CqlType| Box::new(expand(t));
    match ty {
        CqlType::Udt(u) => CqlType::Tuple(u.field_types.iter().map(expand).collect()),
        CqlType::Frozen(t) => match expand(t) {
            tuple @ CqlType::Tuple(_) => tuple,
            other => CqlType::Frozen(Box::new(other)),
        },
        CqlType::List(t) => CqlType::List(sub(t)),
        CqlType::Set(t) => CqlType::Set(sub(t)),
        CqlType::Map(k, v) => CqlType::Map(sub(k), sub(v)),
        CqlType::Tuple(items) => CqlType::Tuple(items.iter().map(expand).collect()),
        other => other.clone(),
    }
}

/// Where a user type is used in its keyspace.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TypeUsers {
    /// Tables with a column of the type (or holding it).
    pub tables: Vec<String>,
    /// Tables with the type in a partition key column (a new field would
    /// change the key's bytes).
    pub partition_key_tables: Vec<String>,
    /// Other types with a field of the type.
    pub types: Vec<String>,
}

impl Keyspace {
    /// Who uses the type `name` of this keyspace.
    pub fn type_users(&self, name: &str) -> TypeUsers {
        let mut out = TypeUsers::default();
        for t in self.tables.values() {
            let uses = |c: &&crate::Column| c.ty.references_user_type(&self.name, name);
            if t.columns.iter().any(|c| uses(&c)) {
                out.tables.push(t.name.clone());
            }
            if t.partition_key().any(|c| uses(&c)) {
                out.partition_key_tables.push(t.name.clone());
            }
        }
        out.types = self
            .types
            .values()
            .filter(|u| u.name != name && u.references(&self.name, name))
            .map(|u| u.name.clone())
            .collect();
        out
    }

    /// Stores `new` (added or changed) and updates every column and type
    /// that holds a copy of it.
    pub fn put_type(&mut self, new: Arc<UserType>) {
        self.types.insert(new.name.clone(), new.clone());
        let users = self.type_users(&new.name);
        for name in users.types {
            if let Some(old) = self.types.get(&name) {
                let changed = substitute(&CqlType::Udt(old.clone()), &new);
                if let CqlType::Udt(u) = changed {
                    self.put_type(u);
                }
            }
        }
        for name in users.tables {
            if let Some(t) = self.tables.get(&name) {
                let mut t = (**t).clone();
                for c in &mut t.columns {
                    c.ty = substitute(&c.ty, &new);
                }
                self.tables.insert(name, Arc::new(t));
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::options::{ReplicationParams, TableOptions};
    use crate::table::{Table, TableSpec};
    use std::collections::BTreeMap;

    pub(crate) fn udt(name: &str, fields: &[(&str, CqlType)]) -> Arc<UserType> {
        Arc::new(UserType {
            keyspace: "ks".into(),
            name: name.into(),
            field_names: fields.iter().map(|(n, _)| n.to_string()).collect(),
            field_types: fields.iter().map(|(_, t)| t.clone()).collect(),
        })
    }

    pub(crate) fn frozen(u: &Arc<UserType>) -> CqlType {
        CqlType::Frozen(Box::new(CqlType::Udt(u.clone())))
    }

    /// A keyspace with types `addr` and `person` (a field of `addr`) and
    /// a table `t` keyed by an `addr`, with a list of `person`.
    pub(crate) fn keyspace() -> Keyspace {
        let addr = udt("addr", &[("zip", CqlType::Int)]);
        let person = udt("person", &[("home", frozen(&addr))]);
        let spec = TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: 1,
            columns: vec![
                ("k".into(), frozen(&addr), false),
                ("p".into(), CqlType::List(Box::new(frozen(&person))), false),
            ],
            partition_key: vec!["k".into()],
            clustering: vec![],
            options: TableOptions::default(),
        };
        let table = Table::create(spec).unwrap();
        Keyspace {
            name: "ks".into(),
            replication: ReplicationParams::simple(1),
            durable_writes: true,
            tables: BTreeMap::from([("t".to_string(), Arc::new(table))]),
            types: BTreeMap::from([("addr".to_string(), addr), ("person".to_string(), person)]),
            is_system: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::{frozen, keyspace, udt};
    use super::*;

    #[test]
    fn users_of_a_type_are_found() {
        let ks = keyspace();
        let users = ks.type_users("addr");
        assert_eq!(users.tables, ["t"]);
        assert_eq!(users.partition_key_tables, ["t"]);
        assert_eq!(users.types, ["person"]);
        assert_eq!(
            ks.type_users("person").partition_key_tables,
            Vec::<String>::new()
        );
        assert_eq!(ks.type_users("nope"), TypeUsers::default());
    }

    #[test]
    fn dropped_columns_keep_user_types_as_tuples() {
        let mut ks = keyspace();
        let t = Arc::make_mut(ks.tables.get_mut("t").unwrap());
        t.drop_column("p", 5).unwrap();
        assert_eq!(
            t.dropped["p"].ty.cql_name(),
            "list<frozen<tuple<frozen<tuple<int>>>>>"
        );
        let addr = ks.types["addr"].clone();
        t.add_column("n", CqlType::Udt(addr), false).unwrap();
        let e = t.drop_column("n", 6).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Cannot drop non-frozen column n of user type addr"
        );
    }

    #[test]
    fn a_changed_type_reaches_columns_and_types() {
        let mut ks = keyspace();
        let addr2 = udt("addr", &[("zip", CqlType::Int), ("city", CqlType::Text)]);
        ks.put_type(addr2.clone());
        let t = &ks.tables["t"];
        assert_eq!(t.columns[0].ty, frozen(&addr2));
        let person = &ks.types["person"];
        assert_eq!(person.field_types[0], frozen(&addr2));
        assert_eq!(
            t.column("p").unwrap().ty,
            CqlType::List(Box::new(frozen(person)))
        );
    }
}
