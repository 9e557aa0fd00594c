//! Golden tests: role and permission statements.

mod common;
use common::*;
use varve_cql::auth_ast::{AuthResource, AuthStatement as A, RoleOptions};
use varve_schema::access::Permission as P;

fn a(s: A) -> Statement {
    Statement::Auth(s)
}

fn opts(password: Option<&str>, login: Option<bool>, superuser: Option<bool>) -> RoleOptions {
    RoleOptions {
        password: password.map(str::to_string),
        login,
        superuser,
        options: None,
    }
}

#[test]
fn role_statements() {
    golden(vec![
        (
            "CREATE ROLE IF NOT EXISTS Bob WITH PASSWORD = 'pw' AND LOGIN = true AND SUPERUSER = false",
            a(A::CreateRole {
                name: "bob".into(),
                if_not_exists: true,
                options: opts(Some("pw"), Some(true), Some(false)),
            }),
        ),
        (
            "CREATE ROLE 'Mixed'",
            a(A::CreateRole {
                name: "Mixed".into(),
                if_not_exists: false,
                options: RoleOptions::default(),
            }),
        ),
        (
            "CREATE ROLE r WITH OPTIONS = {'a': 'b'}",
            a(A::CreateRole {
                name: "r".into(),
                if_not_exists: false,
                options: RoleOptions {
                    options: Some(vec![("a".into(), "b".into())]),
                    ..RoleOptions::default()
                },
            }),
        ),
        (
            "ALTER ROLE r WITH LOGIN = false",
            a(A::AlterRole {
                name: "r".into(),
                if_exists: false,
                options: opts(None, Some(false), None),
            }),
        ),
        (
            "DROP ROLE IF EXISTS r;",
            a(A::DropRole {
                name: "r".into(),
                if_exists: true,
            }),
        ),
        (
            "CREATE USER u WITH PASSWORD 'p' SUPERUSER",
            a(A::CreateRole {
                name: "u".into(),
                if_not_exists: false,
                options: opts(Some("p"), Some(true), Some(true)),
            }),
        ),
        (
            "ALTER USER u WITH PASSWORD 'q' NOSUPERUSER",
            a(A::AlterRole {
                name: "u".into(),
                if_exists: false,
                options: opts(Some("q"), None, Some(false)),
            }),
        ),
        (
            "DROP USER u",
            a(A::DropRole {
                name: "u".into(),
                if_exists: false,
            }),
        ),
        (
            "GRANT reader TO bob",
            a(A::GrantRole {
                role: "reader".into(),
                grantee: "bob".into(),
            }),
        ),
        (
            "REVOKE reader FROM bob",
            a(A::RevokeRole {
                role: "reader".into(),
                revokee: "bob".into(),
            }),
        ),
        (
            "LIST ROLES OF bob NORECURSIVE",
            a(A::ListRoles {
                of: Some("bob".into()),
                recursive: false,
                users: false,
            }),
        ),
        (
            "LIST USERS",
            a(A::ListRoles {
                of: None,
                recursive: true,
                users: true,
            }),
        ),
    ]);
}

#[test]
fn permission_statements() {
    golden(vec![
        (
            "GRANT SELECT ON ALL KEYSPACES TO r",
            a(A::GrantPermissions {
                permissions: vec![P::Select],
                resource: AuthResource::AllKeyspaces,
                role: "r".into(),
            }),
        ),
        (
            "GRANT ALL PERMISSIONS ON KEYSPACE ks TO r",
            a(A::GrantPermissions {
                permissions: P::ALL.to_vec(),
                resource: AuthResource::Keyspace("ks".into()),
                role: "r".into(),
            }),
        ),
        (
            "REVOKE modify PERMISSION ON TABLE ks.t FROM r",
            a(A::RevokePermissions {
                permissions: vec![P::Modify],
                resource: AuthResource::Table(qname("ks", "t")),
                role: "r".into(),
            }),
        ),
        (
            "REVOKE ALL ON t FROM r",
            a(A::RevokePermissions {
                permissions: P::ALL.to_vec(),
                resource: AuthResource::Table(name("t")),
                role: "r".into(),
            }),
        ),
        (
            "GRANT ALTER ON ROLE bob TO r",
            a(A::GrantPermissions {
                permissions: vec![P::Alter],
                resource: AuthResource::Role("bob".into()),
                role: "r".into(),
            }),
        ),
        (
            "GRANT AUTHORIZE ON ALL ROLES TO r",
            a(A::GrantPermissions {
                permissions: vec![P::Authorize],
                resource: AuthResource::AllRoles,
                role: "r".into(),
            }),
        ),
        (
            "LIST ALL PERMISSIONS ON ks.t OF r NORECURSIVE",
            a(A::ListPermissions {
                permissions: P::ALL.to_vec(),
                resource: Some(AuthResource::Table(qname("ks", "t"))),
                of: Some("r".into()),
                recursive: false,
            }),
        ),
        (
            "LIST SELECT",
            a(A::ListPermissions {
                permissions: vec![P::Select],
                resource: None,
                of: None,
                recursive: true,
            }),
        ),
    ]);
}

#[test]
fn bad_role_and_permission_statements_are_errors() {
    for text in [
        "CREATE ROLE r WITH PASSWORD = 'a' AND PASSWORD = 'b'",
        "CREATE ROLE r WITH COLOUR = 'red'",
        "CREATE ROLE r WITH LOGIN = 'yes'",
        "CREATE USER u WITH PASSWORD = 'p'",
        "GRANT SELECT ON ALL FUNCTIONS TO r",
        "GRANT EXECUTE ON ALL KEYSPACES TO r",
        "GRANT reader",
        "LIST",
        "REVOKE SELECT ON ks.t TO r",
    ] {
        assert!(parse(text).is_err(), "{text}");
    }
}
