//! Roles and permissions through the processor: a node with
//! PasswordAuthenticator and CassandraAuthorizer, sessions as roles.

mod common;
use common::*;
use varve_query::auth::AuthSettings;
use varve_query::*;

fn secured() -> Db {
    let p = Processor::new(NodeInfo::single_local());
    p.set_auth(AuthSettings {
        password_authenticator: true,
        cassandra_authorizer: true,
        ..AuthSettings::default()
    });
    assert!(now(p.ensure_default_superuser()).unwrap());
    assert!(!now(p.ensure_default_superuser()).unwrap(), "only once");
    let mut db = Db {
        p,
        state: ClientState {
            user: Some("cassandra".into()),
            ..ClientState::default()
        },
    };
    db.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    db.ok("USE ks");
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    db
}

fn as_user(db: &Db, user: &str) -> Db {
    Db {
        p: db.p.clone(),
        state: ClientState {
            user: Some(user.into()),
            keyspace: Some("ks".into()),
            ..ClientState::default()
        },
    }
}

fn unauthorized(e: QueryError) -> String {
    match e {
        QueryError::Unauthorized(m) => m,
        other => panic!("expected Unauthorized, got {other:?}"),
    }
}

#[test]
fn the_default_superuser_logs_in_and_a_wrong_password_does_not() {
    let db = secured();
    assert!(db.p.auth().credentials.is_empty());
    assert_eq!(db.p.login("cassandra", "cassandra").unwrap(), "cassandra");
    // Remembered for the next login; failures never are.
    assert_eq!(db.p.auth().credentials.len(), 1);
    assert_eq!(db.p.login("cassandra", "cassandra").unwrap(), "cassandra");
    assert!(matches!(
        db.p.login("cassandra", "wrong"),
        Err(auth::LoginError::Incorrect(_))
    ));
    assert_eq!(
        db.p.login("nobody", "x").unwrap_err().to_string(),
        "Provided username nobody and/or password are incorrect"
    );
    assert_eq!(db.p.auth().credentials.len(), 1);
}

#[test]
fn role_statements_create_alter_drop_and_list() {
    let mut db = secured();
    db.ok("CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    assert_eq!(db.p.login("bob", "pw").unwrap(), "bob");
    assert!(
        matches!(db.err("CREATE ROLE bob"), QueryError::Invalid(m) if m == "bob already exists")
    );
    db.ok("CREATE ROLE IF NOT EXISTS bob");
    db.ok("ALTER ROLE bob WITH PASSWORD = 'pw2'");
    assert!(db.p.login("bob", "pw").is_err(), "the old password is gone");
    db.ok("ALTER ROLE bob WITH LOGIN = false");
    assert_eq!(
        db.p.login("bob", "pw2").unwrap_err().to_string(),
        "bob is not permitted to log in"
    );
    db.ok("CREATE USER carol WITH PASSWORD 'c' NOSUPERUSER");
    db.ok("CREATE ROLE reader");
    db.ok("GRANT reader TO carol");
    assert!(
        matches!(db.err("GRANT carol TO reader"), QueryError::Invalid(m) if m == "carol is a member of reader")
    );
    assert_eq!(
        db.rows("LIST ROLES OF carol"),
        vec![
            vec!["'carol'", "false", "true", "{}", "'ALL'"],
            vec!["'reader'", "false", "false", "{}", "'ALL'"],
        ]
    );
    let users = db.rows("LIST USERS");
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(
        db.rows("SELECT role, member FROM system_auth.role_members"),
        vec![vec!["'reader'", "'carol'"]]
    );
    db.ok("REVOKE reader FROM carol");
    assert!(db.rows("SELECT * FROM system_auth.role_members").is_empty());
    db.ok("DROP ROLE bob");
    assert!(matches!(db.err("DROP ROLE bob"), QueryError::Invalid(m) if m == "bob doesn't exist"));
    db.ok("DROP ROLE IF EXISTS bob");
    assert!(matches!(
        db.err("DROP ROLE cassandra"),
        QueryError::Invalid(m) if m == "Cannot DROP primary role for current login"
    ));
}

#[test]
fn salted_hash_is_in_system_auth_roles_and_the_password_is_not() {
    let mut db = secured();
    db.ok("CREATE ROLE bob WITH PASSWORD = 'sekrit' AND LOGIN = true");
    let rows = db.rows("SELECT role, salted_hash FROM system_auth.roles WHERE role = 'bob'");
    assert_eq!(rows.len(), 1);
    assert!(rows[0][1].starts_with("'$2a$10$"), "{rows:?}");
    assert!(!rows[0][1].contains("sekrit"));
}

#[test]
fn statements_need_their_permission_and_inherit_it_through_roles() {
    let mut admin = secured();
    admin.ok("CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    admin.ok("CREATE ROLE reader");
    let mut bob = as_user(&admin, "bob");
    assert_eq!(
        unauthorized(bob.err("SELECT * FROM t")),
        "User bob has no SELECT permission on <table ks.t> or any of its parents"
    );
    admin.ok("GRANT SELECT ON KEYSPACE ks TO reader");
    admin.ok("GRANT reader TO bob");
    bob.ok("SELECT * FROM t");
    assert_eq!(
        unauthorized(bob.err("INSERT INTO t (k, v) VALUES (1, 1)")),
        "User bob has no MODIFY permission on <table ks.t> or any of its parents"
    );
    // A batch needs MODIFY for each of its statements.
    let batch = "BEGIN BATCH INSERT INTO t (k, v) VALUES (1, 1); APPLY BATCH";
    assert!(unauthorized(bob.err(batch)).contains("MODIFY"));
    admin.ok("GRANT MODIFY ON ks.t TO bob");
    bob.ok(batch);
    admin.ok("REVOKE reader FROM bob");
    unauthorized(bob.err("SELECT * FROM t"));
    // Reading what drivers read at connect needs nothing.
    bob.ok("SELECT * FROM system.local");
    unauthorized(bob.err("SELECT * FROM system_auth.roles"));
}

#[test]
fn a_creator_gets_every_permission_on_what_it_creates_and_a_drop_forgets_them() {
    let mut admin = secured();
    admin.ok("CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    admin.ok("GRANT CREATE ON ALL KEYSPACES TO bob");
    let mut bob = as_user(&admin, "bob");
    bob.ok("CREATE KEYSPACE kb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    bob.ok("CREATE TABLE kb.t (k int PRIMARY KEY)");
    bob.ok("INSERT INTO kb.t (k) VALUES (1)");
    bob.ok("DROP TABLE kb.t");
    let perms = admin.rows("LIST ALL PERMISSIONS OF bob");
    assert!(perms.iter().all(|r| !r[2].contains("kb.t")), "{perms:?}");
    assert!(perms.iter().any(|r| r[2] == "'<keyspace kb>'"), "{perms:?}");
    bob.ok("DROP KEYSPACE kb");
    let perms = admin.rows("LIST ALL PERMISSIONS OF bob");
    assert_eq!(
        perms,
        vec![vec!["'bob'", "'bob'", "'<all keyspaces>'", "'CREATE'"]]
    );
}

#[test]
fn only_superusers_make_superusers_and_nobody_changes_their_own_status() {
    let mut admin = secured();
    admin.ok("CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    admin.ok("GRANT CREATE ON ALL ROLES TO bob");
    let mut bob = as_user(&admin, "bob");
    assert_eq!(
        unauthorized(bob.err("CREATE ROLE boss WITH SUPERUSER = true")),
        "Only superusers can create a role with superuser status"
    );
    bob.ok("CREATE ROLE minion");
    // The creator of a role may alter and drop it.
    bob.ok("ALTER ROLE minion WITH PASSWORD = 'x'");
    bob.ok("DROP ROLE minion");
    unauthorized(admin.err("ALTER ROLE cassandra WITH SUPERUSER = false"));
    bob.ok("ALTER ROLE bob WITH PASSWORD = 'new'");
    assert_eq!(admin.p.login("bob", "new").unwrap(), "bob");
}

#[test]
fn grant_needs_authorize_and_the_permission_itself() {
    let mut admin = secured();
    admin.ok("CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    admin.ok("CREATE ROLE eve WITH PASSWORD = 'pw' AND LOGIN = true");
    let mut bob = as_user(&admin, "bob");
    assert!(unauthorized(bob.err("GRANT SELECT ON ks.t TO eve")).contains("AUTHORIZE"));
    admin.ok("GRANT AUTHORIZE ON KEYSPACE ks TO bob");
    assert!(unauthorized(bob.err("GRANT SELECT ON ks.t TO eve")).contains("SELECT"));
    admin.ok("GRANT SELECT ON KEYSPACE ks TO bob");
    bob.ok("GRANT SELECT ON ks.t TO eve");
    assert!(matches!(
        admin.err("GRANT DESCRIBE ON ks.t TO eve"),
        QueryError::Syntax(m) if m == "Resource type DataResource does not support any of the requested permissions"
    ));
    assert!(
        matches!(admin.err("GRANT SELECT ON ks.nope TO eve"), QueryError::Invalid(m) if m == "Resource <table ks.nope> doesn't exist")
    );
    assert_eq!(
        unauthorized(bob.err("LIST ALL PERMISSIONS")),
        "You are not authorized to view everyone's permissions"
    );
    assert_eq!(
        unauthorized(bob.err("LIST ALL PERMISSIONS OF eve")),
        "You are not authorized to view eve's permissions"
    );
    admin.ok("GRANT DESCRIBE ON ROLE eve TO bob");
    assert_eq!(bob.rows("LIST ALL PERMISSIONS OF eve").len(), 1);
}

#[test]
fn without_a_login_role_statements_are_refused() {
    let mut db = Db::new();
    assert_eq!(
        unauthorized(db.err("CREATE ROLE r")),
        "You have to be logged in and not anonymous to perform this request"
    );
}

#[test]
fn with_allow_all_authorizer_a_login_may_do_anything_but_grant_permissions() {
    let p = Processor::new(NodeInfo::single_local());
    p.set_auth(AuthSettings {
        password_authenticator: true,
        cassandra_authorizer: false,
        ..AuthSettings::default()
    });
    assert!(now(p.ensure_default_superuser()).unwrap());
    let mut admin = Db {
        p: p.clone(),
        state: ClientState {
            user: Some("cassandra".into()),
            ..ClientState::default()
        },
    };
    admin.ok("CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true");
    let mut bob = Db {
        p,
        state: ClientState {
            user: Some("bob".into()),
            ..ClientState::default()
        },
    };
    bob.ok("CREATE KEYSPACE kb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    bob.ok("CREATE TABLE kb.t (k int PRIMARY KEY)");
    bob.ok("SELECT * FROM system_auth.roles");
    bob.ok("CREATE ROLE minion");
    unauthorized(bob.err("CREATE ROLE boss WITH SUPERUSER = true"));
    for (text, what) in [
        ("GRANT SELECT ON kb.t TO minion", "GRANT"),
        ("REVOKE SELECT ON kb.t FROM minion", "REVOKE"),
        ("LIST ALL PERMISSIONS", "LIST PERMISSIONS"),
    ] {
        let message = format!("{what} operation is not supported by AllowAllAuthorizer");
        assert!(
            matches!(bob.err(text), QueryError::Invalid(m) if m == message),
            "{text}"
        );
    }
    // Nobody is granted anything as creator without an authorizer.
    assert!(bob.p.schema().access.permissions.is_empty());
}

#[test]
fn altering_system_auth_replication_is_accepted_and_changes_nothing() {
    let mut db = secured();
    let out = db.ok("ALTER KEYSPACE system_auth WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}");
    assert_eq!(out.result, QueryResult::Void);
    assert!(
        out.warnings[0].contains("change nothing"),
        "{:?}",
        out.warnings
    );
    assert!(matches!(
        db.err("ALTER KEYSPACE system_auth WITH replication = {'class': 'NoSuchStrategy'}"),
        QueryError::Config(_) | QueryError::Invalid(_)
    ));
    assert!(matches!(
        db.err("ALTER KEYSPACE system_schema WITH durable_writes = true"),
        QueryError::Unauthorized(_)
    ));
}

#[test]
fn an_unknown_role_takes_as_long_as_a_wrong_password() {
    let db = secured();
    let time = |user: &str| {
        let started = std::time::Instant::now();
        assert!(db.p.login(user, "wrong").is_err());
        started.elapsed()
    };
    // Warm the stand-in hash, then compare the two answers' times.
    time("nobody");
    let wrong = time("cassandra");
    let unknown = time("nobody");
    assert!(
        unknown * 3 >= wrong,
        "unknown role {unknown:?}, wrong password {wrong:?}"
    );
}
