//! The rows of `system_auth.roles`, `role_members`, `role_permissions` and
//! `resource_role_permissons_index` (Cassandra's spelling), built from the
//! schema's access data.

use super::VRow;
use varve_schema::access::Access;
use varve_types::Value;

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// The rows of `system_auth.<table>`.
pub fn rows(table: &str, access: &Access) -> Vec<VRow> {
    match table {
        "roles" => access
            .roles
            .values()
            .map(|r| {
                let mut row = VRow::new();
                row.insert("role", text(&r.name));
                row.insert("can_login", Value::Boolean(r.can_login));
                row.insert("is_superuser", Value::Boolean(r.is_superuser));
                if !r.member_of.is_empty() {
                    row.insert(
                        "member_of",
                        Value::Set(r.member_of.iter().map(|m| text(m)).collect()),
                    );
                }
                if let Some(h) = &r.salted_hash {
                    row.insert("salted_hash", text(h));
                }
                row
            })
            .collect(),
        "role_members" => access
            .roles
            .values()
            .flat_map(|member| {
                member
                    .member_of
                    .iter()
                    .map(|role| VRow::from([("role", text(role)), ("member", text(&member.name))]))
            })
            .collect(),
        "role_permissions" => access
            .permissions
            .iter()
            .flat_map(|(role, grants)| {
                grants.iter().map(move |(resource, perms)| {
                    VRow::from([
                        ("role", text(role)),
                        ("resource", text(&resource.stored_name())),
                        (
                            "permissions",
                            Value::Set(perms.iter().map(|p| text(p.name())).collect()),
                        ),
                    ])
                })
            })
            .collect(),
        "resource_role_permissons_index" => access
            .permissions
            .iter()
            .flat_map(|(role, grants)| {
                grants.keys().map(move |resource| {
                    VRow::from([
                        ("resource", text(&resource.stored_name())),
                        ("role", text(role)),
                    ])
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_schema::access::{Permission, Resource, Role};

    #[test]
    fn roles_members_and_permissions_become_rows() {
        let mut a = Access::default();
        for (name, of) in [("bob", vec!["reader"]), ("reader", vec![])] {
            a.roles.insert(
                name.into(),
                Role {
                    name: name.into(),
                    salted_hash: Some("$2a$10$x".into()),
                    can_login: true,
                    member_of: of.into_iter().map(String::from).collect(),
                    ..Role::default()
                },
            );
        }
        a.grant(
            "reader",
            &Resource::Table("ks".into(), "t".into()),
            &[Permission::Select],
        );
        let roles = rows("roles", &a);
        assert_eq!(roles.len(), 2);
        assert_eq!(roles[0]["member_of"], Value::Set(vec![text("reader")]));
        assert_eq!(roles[0]["salted_hash"], text("$2a$10$x"));
        let members = rows("role_members", &a);
        assert_eq!(
            members,
            vec![VRow::from([
                ("role", text("reader")),
                ("member", text("bob"))
            ])]
        );
        let perms = rows("role_permissions", &a);
        assert_eq!(perms[0]["resource"], text("data/ks/t"));
        assert_eq!(perms[0]["permissions"], Value::Set(vec![text("SELECT")]));
        let index = rows("resource_role_permissons_index", &a);
        assert_eq!(
            index,
            vec![VRow::from([
                ("resource", text("data/ks/t")),
                ("role", text("reader"))
            ])]
        );
    }
}
