//! Role and permission statements: CREATE / ALTER / DROP ROLE and USER,
//! GRANT and REVOKE of roles and of permissions, LIST ROLES / USERS /
//! PERMISSIONS. The caller has consumed the first word.

use super::Parser;
use crate::ast::Statement;
use crate::auth_ast::{AuthResource, AuthStatement, RoleOptions};
use crate::error::Result;
use crate::lexer::Tok;
use varve_schema::access::Permission;

impl Parser<'_> {
    /// A role name: an identifier (lower-cased unless quoted) or a string.
    fn role_name(&mut self) -> Result<String> {
        if let Tok::Str(s) = self.peek().clone() {
            self.pos += 1;
            return Ok(s);
        }
        self.ident()
    }

    /// After CREATE: `ROLE ...` or `USER ...`.
    pub(super) fn create_role(&mut self, user: bool) -> Result<Statement> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.role_name()?;
        let options = self.role_options(user)?;
        let options = if user {
            RoleOptions {
                login: Some(true),
                ..options
            }
        } else {
            options
        };
        Ok(auth(AuthStatement::CreateRole {
            name,
            if_not_exists,
            options,
        }))
    }

    /// After ALTER: `ROLE ...` or `USER ...`.
    pub(super) fn alter_role(&mut self, user: bool) -> Result<Statement> {
        let if_exists = self.if_exists()?;
        let name = self.role_name()?;
        let options = self.role_options(user)?;
        Ok(auth(AuthStatement::AlterRole {
            name,
            if_exists,
            options,
        }))
    }

    /// After DROP: `ROLE ...` or `USER ...`.
    pub(super) fn drop_role(&mut self) -> Result<Statement> {
        let if_exists = self.if_exists()?;
        let name = self.role_name()?;
        Ok(auth(AuthStatement::DropRole { name, if_exists }))
    }

    /// A role's `WITH opt = v AND ...`, or a user's `WITH PASSWORD 'p'`
    /// and `SUPERUSER` / `NOSUPERUSER`.
    fn role_options(&mut self, user: bool) -> Result<RoleOptions> {
        let mut o = RoleOptions::default();
        if user {
            if self.eat_kw("with") {
                self.expect_kw("password")?;
                o.password = Some(self.string()?);
            }
            if self.eat_kw("superuser") {
                o.superuser = Some(true);
            } else if self.eat_kw("nosuperuser") {
                o.superuser = Some(false);
            }
            return Ok(o);
        }
        if !self.eat_kw("with") {
            return Ok(o);
        }
        loop {
            self.role_option(&mut o)?;
            if !self.eat_kw("and") {
                return Ok(o);
            }
        }
    }

    fn role_option(&mut self, o: &mut RoleOptions) -> Result<()> {
        let known = ["password", "login", "superuser", "options"];
        if !known.iter().any(|k| self.is_kw(k)) {
            // Cassandra's grammar knows only these words here.
            return Err(self.no_viable());
        }
        let name = self.ident()?;
        let duplicate = |set: bool| {
            if set {
                Some(format!(
                    "Multiple definition for property '{}'",
                    name.to_ascii_uppercase()
                ))
            } else {
                None
            }
        };
        let repeated = match name.as_str() {
            "password" => duplicate(o.password.is_some()),
            "login" => duplicate(o.login.is_some()),
            "superuser" => duplicate(o.superuser.is_some()),
            _ => duplicate(o.options.is_some()),
        };
        if let Some(message) = repeated {
            return Err(self.syntax_error(message));
        }
        self.expect_punct(crate::lexer::Punct::Eq)?;
        match name.as_str() {
            "password" => o.password = Some(self.string()?),
            "login" => o.login = Some(self.boolean()?),
            "superuser" => o.superuser = Some(self.boolean()?),
            _ => {
                let crate::ast::PropertyValue::Map(m) = self.property_map()? else {
                    return Err(self.expecting("map"));
                };
                o.options = Some(m);
            }
        }
        Ok(())
    }

    fn string(&mut self) -> Result<String> {
        match self.peek().clone() {
            Tok::Str(s) => {
                self.pos += 1;
                Ok(s)
            }
            _ => Err(self.expecting("STRING_LITERAL")),
        }
    }

    fn boolean(&mut self) -> Result<bool> {
        if self.eat_kw("true") {
            return Ok(true);
        }
        if self.eat_kw("false") {
            return Ok(false);
        }
        Err(self.expecting("BOOLEAN"))
    }

    /// After GRANT or REVOKE (`grant` tells which).
    pub(super) fn grant_or_revoke(&mut self, grant: bool) -> Result<Statement> {
        if self.is_permission_grant() {
            let permissions = self.permissions()?;
            self.expect_kw("on")?;
            let resource = self.resource()?;
            self.expect_kw(if grant { "to" } else { "from" })?;
            let role = self.role_name()?;
            return Ok(auth(if grant {
                AuthStatement::GrantPermissions {
                    permissions,
                    resource,
                    role,
                }
            } else {
                AuthStatement::RevokePermissions {
                    permissions,
                    resource,
                    role,
                }
            }));
        }
        let role = self.role_name()?;
        self.expect_kw(if grant { "to" } else { "from" })?;
        let other = self.role_name()?;
        Ok(auth(if grant {
            AuthStatement::GrantRole {
                role,
                grantee: other,
            }
        } else {
            AuthStatement::RevokeRole {
                role,
                revokee: other,
            }
        }))
    }

    /// Whether the words after GRANT / REVOKE name permissions (`SELECT
    /// ON`, `ALL PERMISSIONS ON`) rather than a role.
    fn is_permission_grant(&mut self) -> bool {
        let is_permission_word = match self.peek() {
            Tok::Ident(w) => w == "all" || w == "execute" || Permission::from_name(w).is_some(),
            _ => false,
        };
        is_permission_word
            && (self.is_kw_at(1, "on")
                || self.is_kw_at(1, "permission")
                || self.is_kw_at(1, "permissions"))
    }

    /// `ALL [PERMISSIONS]` or one permission `[PERMISSION]`.
    fn permissions(&mut self) -> Result<Vec<Permission>> {
        if self.eat_kw("all") {
            self.eat_kw("permissions");
            return Ok(Permission::ALL.to_vec());
        }
        let word = match self.peek().clone() {
            Tok::Ident(w) => w,
            _ => return Err(self.expecting("permission")),
        };
        if word == "execute" {
            return Err(self.unsupported("user-defined functions are not supported by Varve yet"));
        }
        let Some(p) = Permission::from_name(&word) else {
            return Err(self.expecting("permission"));
        };
        self.pos += 1;
        self.eat_kw("permission");
        Ok(vec![p])
    }

    /// `ALL KEYSPACES`, `KEYSPACE k`, `[TABLE] k.t`, `ALL ROLES`, `ROLE r`.
    fn resource(&mut self) -> Result<AuthResource> {
        if self.eat_kw("all") {
            if self.eat_kw("keyspaces") {
                return Ok(AuthResource::AllKeyspaces);
            }
            if self.eat_kw("roles") {
                return Ok(AuthResource::AllRoles);
            }
            if self.is_kw("functions") || self.is_kw("mbeans") {
                return Err(self.unsupported("functions and MBeans are not supported by Varve"));
            }
            return Err(self.expecting("KEYSPACES or ROLES"));
        }
        if self.eat_kw("keyspace") {
            return Ok(AuthResource::Keyspace(self.ident()?));
        }
        if self.eat_kw("role") {
            return Ok(AuthResource::Role(self.role_name()?));
        }
        if self.is_kw("function") || self.is_kw("mbean") || self.is_kw("mbeans") {
            return Err(self.unsupported("functions and MBeans are not supported by Varve"));
        }
        if self.is_kw("table") && self.is_ident_at(1) {
            self.pos += 1;
        }
        Ok(AuthResource::Table(self.qualified_name()?))
    }

    /// After LIST: `ROLES`, `USERS`, or permissions.
    pub(super) fn list(&mut self) -> Result<Statement> {
        if self.eat_kw("roles") || self.is_kw("users") {
            let users = self.eat_kw("users");
            let of = if !users && self.eat_kw("of") {
                Some(self.role_name()?)
            } else {
                None
            };
            let recursive = users || !self.eat_kw("norecursive");
            return Ok(auth(AuthStatement::ListRoles {
                of,
                recursive,
                users,
            }));
        }
        let permissions = self.permissions()?;
        let resource = if self.eat_kw("on") {
            Some(self.resource()?)
        } else {
            None
        };
        let of = if self.eat_kw("of") {
            Some(self.role_name()?)
        } else {
            None
        };
        let recursive = !self.eat_kw("norecursive");
        Ok(auth(AuthStatement::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        }))
    }
}

fn auth(s: AuthStatement) -> Statement {
    Statement::Auth(s)
}
