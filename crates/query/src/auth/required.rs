//! What each statement needs, checked before it runs: the permission and
//! the resource (docs/design/security.md, section 6). Role and permission
//! statements check their own needs as they run (they depend on the roles
//! they name); USE and DESCRIBE need nothing.

use varve_cql::ast::{QualifiedName, Statement};
use varve_schema::access::{Access, Permission, Resource};

use crate::error::{QueryError, Result};

/// Keyspaces anyone logged in may read: what drivers and cqlsh read when
/// they connect.
const READABLE_KEYSPACES: [&str; 3] = ["system", "system_schema", "system_virtual_schema"];

/// The message of a statement run without a login under an authorizer.
pub const ANONYMOUS: &str = "You have to be logged in and not anonymous to perform this request";

/// Checks that `user` may run `stmt`, with `keyspace` the session's (or
/// the request's) keyspace. `None` for `user`: nobody logged in.
pub fn check(
    access: &Access,
    user: Option<&str>,
    stmt: &Statement,
    keyspace: Option<&str>,
) -> Result<()> {
    let needs = needs(stmt, keyspace);
    if needs.is_empty() {
        return Ok(());
    }
    let user = user.ok_or_else(|| QueryError::Unauthorized(ANONYMOUS.into()))?;
    for (permission, resource) in needs {
        if !allowed(access, user, permission, &resource) {
            let message = varve_schema::access::refusal(user, permission, &resource);
            return Err(QueryError::Unauthorized(message));
        }
    }
    Ok(())
}

/// The keyspace of roles and permissions: a grant on ALL KEYSPACES does
/// not reach it (as in Cassandra), only one on it or on its tables.
const AUTH_KEYSPACE: &str = "system_auth";

fn allowed(access: &Access, user: &str, permission: Permission, resource: &Resource) -> bool {
    match resource {
        Resource::Table(ks, _) if ks == AUTH_KEYSPACE => {
            let chain = [resource.clone(), Resource::Keyspace(ks.clone())];
            access.has_permission_on(user, permission, &chain)
        }
        _ => access.has_permission(user, permission, resource),
    }
}

/// The permissions `stmt` needs. A table whose keyspace is unknown (no
/// USE) needs nothing here: the statement fails on that before it runs.
pub fn needs(stmt: &Statement, keyspace: Option<&str>) -> Vec<(Permission, Resource)> {
    let table = |name: &QualifiedName| {
        let ks = name.keyspace.as_deref().or(keyspace)?;
        Some(Resource::Table(ks.to_string(), name.name.clone()))
    };
    let on_table = |p: Permission, name: &QualifiedName| table(name).map(|r| vec![(p, r)]);
    // A user type's statements need the permission on its keyspace.
    let on_keyspace = |p: Permission, name: &QualifiedName| {
        let ks = name.keyspace.as_deref().or(keyspace)?;
        Some(vec![(p, Resource::Keyspace(ks.to_string()))])
    };
    let found = match stmt {
        Statement::Select(s) => {
            let readable = s
                .table
                .keyspace
                .as_deref()
                .or(keyspace)
                .is_some_and(|ks| READABLE_KEYSPACES.contains(&ks));
            if readable {
                None
            } else {
                on_table(Permission::Select, &s.table)
            }
        }
        Statement::Insert(i) => on_table(Permission::Modify, &i.table),
        Statement::Update(u) => on_table(Permission::Modify, &u.table),
        Statement::Delete(d) => on_table(Permission::Modify, &d.table),
        Statement::Truncate(name) => on_table(Permission::Modify, name),
        Statement::Batch(b) => Some(
            b.statements
                .iter()
                .flat_map(|s| needs(s, keyspace))
                .collect(),
        ),
        Statement::CreateKeyspace(_) => Some(vec![(Permission::Create, Resource::AllKeyspaces)]),
        Statement::AlterKeyspace(a) => Some(vec![(
            Permission::Alter,
            Resource::Keyspace(a.name.clone()),
        )]),
        Statement::DropKeyspace { name, .. } => {
            Some(vec![(Permission::Drop, Resource::Keyspace(name.clone()))])
        }
        Statement::CreateTable(c) => c
            .name
            .keyspace
            .as_deref()
            .or(keyspace)
            .map(|ks| vec![(Permission::Create, Resource::Keyspace(ks.to_string()))]),
        Statement::AlterTable(a) => on_table(Permission::Alter, &a.name),
        Statement::CreateType(c) => on_keyspace(Permission::Create, &c.name),
        Statement::AlterType(a) => on_keyspace(Permission::Alter, &a.name),
        Statement::DropType { name, .. } => on_keyspace(Permission::Drop, name),
        Statement::DropTable { name, .. } => on_table(Permission::Drop, name),
        Statement::Use(_)
        | Statement::Describe(_)
        | Statement::Auth(_)
        | Statement::Unsupported(_) => None,
    };
    found.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_schema::access::Role;

    fn parse(text: &str) -> Statement {
        varve_cql::parse(text).unwrap().statement
    }

    fn access_with_bob() -> Access {
        let mut a = Access::default();
        a.roles.insert(
            "bob".into(),
            Role {
                name: "bob".into(),
                can_login: true,
                ..Role::default()
            },
        );
        a
    }

    fn table(ks: &str, t: &str) -> Resource {
        Resource::Table(ks.into(), t.into())
    }

    #[test]
    fn each_statement_kind_needs_its_permission() {
        let ks = Some("ks");
        let cases = [
            ("SELECT * FROM t", vec![(Permission::Select, table("ks", "t"))]),
            ("INSERT INTO o.t (k) VALUES (1)", vec![(Permission::Modify, table("o", "t"))]),
            ("UPDATE t SET v = 1 WHERE k = 1", vec![(Permission::Modify, table("ks", "t"))]),
            ("DELETE FROM t WHERE k = 1", vec![(Permission::Modify, table("ks", "t"))]),
            ("TRUNCATE t", vec![(Permission::Modify, table("ks", "t"))]),
            (
                "BEGIN BATCH INSERT INTO a (k) VALUES (1); DELETE FROM b WHERE k = 1; APPLY BATCH",
                vec![
                    (Permission::Modify, table("ks", "a")),
                    (Permission::Modify, table("ks", "b")),
                ],
            ),
            (
                "CREATE KEYSPACE n WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                vec![(Permission::Create, Resource::AllKeyspaces)],
            ),
            (
                "ALTER KEYSPACE n WITH durable_writes = false",
                vec![(Permission::Alter, Resource::Keyspace("n".into()))],
            ),
            ("DROP KEYSPACE n", vec![(Permission::Drop, Resource::Keyspace("n".into()))]),
            (
                "CREATE TABLE t2 (k int PRIMARY KEY)",
                vec![(Permission::Create, Resource::Keyspace("ks".into()))],
            ),
            ("ALTER TABLE t ADD v int", vec![(Permission::Alter, table("ks", "t"))]),
            ("DROP TABLE t", vec![(Permission::Drop, table("ks", "t"))]),
            (
                "CREATE TYPE a (f int)",
                vec![(Permission::Create, Resource::Keyspace("ks".into()))],
            ),
            (
                "ALTER TYPE o.a ADD g int",
                vec![(Permission::Alter, Resource::Keyspace("o".into()))],
            ),
            ("DROP TYPE a", vec![(Permission::Drop, Resource::Keyspace("ks".into()))]),
            ("USE ks", vec![]),
            ("SELECT * FROM system.local", vec![]),
            ("SELECT * FROM system_schema.tables", vec![]),
            (
                "SELECT * FROM system_auth.roles",
                vec![(Permission::Select, table("system_auth", "roles"))],
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(needs(&parse(text), ks), expected, "{text}");
        }
    }

    #[test]
    fn a_missing_permission_is_unauthorized_naming_it() {
        let mut a = access_with_bob();
        let stmt = parse("SELECT * FROM ks.t");
        let err = check(&a, Some("bob"), &stmt, None).unwrap_err();
        assert_eq!(
            err,
            QueryError::Unauthorized(
                "User bob has no SELECT permission on <table ks.t> or any of its parents".into()
            )
        );
        a.grant(
            "bob",
            &Resource::Keyspace("ks".into()),
            &[Permission::Select],
        );
        check(&a, Some("bob"), &stmt, None).unwrap();
    }

    #[test]
    fn a_batch_needs_every_statements_permission() {
        let mut a = access_with_bob();
        a.grant("bob", &table("ks", "a"), &[Permission::Modify]);
        let stmt = parse(
            "BEGIN BATCH INSERT INTO a (k) VALUES (1); INSERT INTO b (k) VALUES (1); APPLY BATCH",
        );
        let err = check(&a, Some("bob"), &stmt, Some("ks")).unwrap_err();
        assert!(err.to_string().contains("<table ks.b>"), "{err}");
        a.grant("bob", &table("ks", "b"), &[Permission::Modify]);
        check(&a, Some("bob"), &stmt, Some("ks")).unwrap();
    }

    #[test]
    fn nobody_logged_in_is_refused_where_a_permission_is_needed() {
        let a = access_with_bob();
        let err = check(&a, None, &parse("SELECT * FROM ks.t"), None).unwrap_err();
        assert_eq!(err, QueryError::Unauthorized(ANONYMOUS.into()));
        check(&a, None, &parse("SELECT * FROM system.local"), None).unwrap();
    }

    #[test]
    fn all_keyspaces_does_not_reach_the_auth_tables() {
        let mut a = access_with_bob();
        a.grant("bob", &Resource::AllKeyspaces, &[Permission::Select]);
        let stmt = parse("SELECT * FROM system_auth.roles");
        assert!(check(&a, Some("bob"), &stmt, None).is_err());
        a.grant(
            "bob",
            &Resource::Keyspace("system_auth".into()),
            &[Permission::Select],
        );
        check(&a, Some("bob"), &stmt, None).unwrap();
    }
}
