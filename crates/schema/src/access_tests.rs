//! Tests of roles and permissions as data: how permissions resolve through
//! parents and granted roles, and what dropping forgets.

use super::*;

fn role(name: &str, member_of: &[&str], superuser: bool) -> Role {
    Role {
        name: name.into(),
        can_login: true,
        is_superuser: superuser,
        member_of: member_of.iter().map(|s| s.to_string()).collect(),
        ..Role::default()
    }
}

fn access(roles: &[Role]) -> Access {
    let mut a = Access::default();
    for r in roles {
        a.roles.insert(r.name.clone(), r.clone());
    }
    a
}

fn table() -> Resource {
    Resource::Table("ks".into(), "t".into())
}

#[test]
fn a_permission_on_a_parent_covers_its_children() {
    let mut a = access(&[role("bob", &[], false)]);
    assert!(!a.has_permission("bob", Permission::Select, &table()));
    a.grant(
        "bob",
        &Resource::Keyspace("ks".into()),
        &[Permission::Select],
    );
    assert!(a.has_permission("bob", Permission::Select, &table()));
    assert!(!a.has_permission("bob", Permission::Modify, &table()));
    assert!(!a.has_permission(
        "bob",
        Permission::Select,
        &Resource::Table("other".into(), "t".into())
    ));
    a.grant("bob", &Resource::AllKeyspaces, &[Permission::Modify]);
    assert!(a.has_permission(
        "bob",
        Permission::Modify,
        &Resource::Table("other".into(), "t".into())
    ));
}

#[test]
fn permissions_are_inherited_through_granted_roles_transitively() {
    let mut a = access(&[
        role("bob", &["reader"], false),
        role("reader", &["base"], false),
        role("base", &[], false),
    ]);
    a.grant("base", &table(), &[Permission::Select]);
    assert!(a.has_permission("bob", Permission::Select, &table()));
    assert!(a.has_permission("reader", Permission::Select, &table()));
    // Not the other way round.
    a.grant("bob", &table(), &[Permission::Modify]);
    assert!(!a.has_permission("base", Permission::Modify, &table()));
}

#[test]
fn a_granted_superuser_role_makes_a_superuser() {
    let a = access(&[role("bob", &["admin"], false), role("admin", &[], true)]);
    assert!(a.is_superuser("bob"));
    assert!(a.has_permission("bob", Permission::Drop, &Resource::AllKeyspaces));
    assert!(!a.is_superuser("nobody"));
}

#[test]
fn cycles_in_memberships_end() {
    let a = access(&[role("x", &["y"], false), role("y", &["x"], false)]);
    assert_eq!(a.granted_roles("x").len(), 2);
    assert!(!a.has_permission("x", Permission::Select, &table()));
}

#[test]
fn refusal_names_the_permission_and_the_resource() {
    let a = access(&[role("bob", &[], false)]);
    assert_eq!(
        a.authorize("bob", Permission::Select, &table())
            .unwrap_err(),
        "User bob has no SELECT permission on <table ks.t> or any of its parents"
    );
}

#[test]
fn dropping_a_role_removes_its_grants_memberships_and_permissions_on_it() {
    let mut a = access(&[role("bob", &["r"], false), role("r", &[], false)]);
    a.grant("r", &table(), &[Permission::Select]);
    a.grant("bob", &Resource::Role("r".into()), &[Permission::Alter]);
    a.drop_role("r");
    assert!(a.roles["bob"].member_of.is_empty());
    assert!(a.permissions.is_empty());
}

#[test]
fn forgetting_a_keyspace_forgets_its_tables() {
    let mut a = access(&[role("bob", &[], false)]);
    a.grant("bob", &table(), &[Permission::Select]);
    a.grant(
        "bob",
        &Resource::Keyspace("ks".into()),
        &[Permission::Select],
    );
    a.grant(
        "bob",
        &Resource::Keyspace("ks2".into()),
        &[Permission::Select],
    );
    a.forget_resource(&Resource::Keyspace("ks".into()));
    let left: Vec<_> = a.permissions["bob"].keys().cloned().collect();
    assert_eq!(left, vec![Resource::Keyspace("ks2".into())]);
}

#[test]
fn revoking_the_last_permission_leaves_nothing_behind() {
    let mut a = access(&[role("bob", &[], false)]);
    a.grant("bob", &table(), &[Permission::Select, Permission::Modify]);
    a.revoke("bob", &table(), &[Permission::Select]);
    assert!(a.has_permission("bob", Permission::Modify, &table()));
    a.revoke("bob", &table(), &[Permission::Modify]);
    assert!(a.permissions.is_empty());
}

#[test]
fn stored_resource_names_round_trip() {
    for r in [
        Resource::AllKeyspaces,
        Resource::Keyspace("ks".into()),
        table(),
        Resource::AllRoles,
        Resource::Role("bob".into()),
    ] {
        assert_eq!(Resource::from_stored_name(&r.stored_name()), Some(r));
    }
    assert_eq!(Resource::from_stored_name("data/a/b/c"), None);
    assert_eq!(Resource::from_stored_name("functions"), None);
}

#[test]
fn applicable_permissions_are_cassandras() {
    let names = |r: Resource| {
        r.applicable()
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let data = "ALTER DROP SELECT MODIFY AUTHORIZE UNMASK SELECT_MASKED";
    assert_eq!(
        names(Resource::Keyspace("ks".into())),
        format!("CREATE {data}")
    );
    assert_eq!(names(Resource::AllKeyspaces), format!("CREATE {data}"));
    assert_eq!(names(table()), data);
    assert_eq!(
        names(Resource::AllRoles),
        "CREATE ALTER DROP AUTHORIZE DESCRIBE"
    );
    assert_eq!(
        names(Resource::Role("r".into())),
        "ALTER DROP AUTHORIZE DESCRIBE"
    );
}
