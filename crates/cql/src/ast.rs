//! The syntax tree the parser produces. Names are already normalised:
//! unquoted identifiers are lower-cased, quoted ones keep their case.

use varve_types::CqlType;

/// A possibly keyspace-qualified name of a table (or type, index, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QualifiedName {
    pub keyspace: Option<String>,
    pub name: String,
}

/// One parsed statement plus the bind markers it contains, in order of
/// appearance. `bind_markers[i]` is `Some(name)` for `:name`, `None` for `?`.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub statement: Statement,
    pub bind_markers: Vec<Option<String>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(Select),
    Insert(Insert),
    Update(Update),
    Delete(Delete),
    Batch(Batch),
    Use(String),
    CreateKeyspace(CreateKeyspace),
    AlterKeyspace(AlterKeyspace),
    DropKeyspace {
        name: String,
        if_exists: bool,
    },
    CreateTable(CreateTable),
    AlterTable(AlterTable),
    DropTable {
        name: QualifiedName,
        if_exists: bool,
    },
    Truncate(QualifiedName),
    CreateType(CreateType),
    AlterType(AlterType),
    DropType {
        name: QualifiedName,
        if_exists: bool,
    },
    Describe(Describe),
    /// A role or permission statement.
    Auth(crate::auth_ast::AuthStatement),
    /// A statement we recognise but do not implement yet (CREATE TYPE,
    /// CREATE INDEX, materialized views, functions, roles, ...). The string
    /// names the feature, e.g. "user types", "secondary indexes".
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A quoted string ('...' or $$...$$).
    String(String),
    /// An integer as written (may exceed i64; the executor converts by type).
    Integer(String),
    /// A floating point number as written, including NaN and Infinity.
    Float(String),
    Boolean(bool),
    Uuid([u8; 16]),
    /// `0x...` hex blob.
    Blob(Vec<u8>),
    /// A duration literal as written (`1h30m`, `P1DT2H`, ...).
    Duration(String),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    Literal(Literal),
    /// Index into [`Parsed::bind_markers`].
    Bind(usize),
    List(Vec<Term>),
    Set(Vec<Term>),
    /// `{k: v, ...}`; an empty `{}` is parsed as an empty map and coerced by type.
    Map(Vec<(Term, Term)>),
    /// `(a, b, ...)`: a tuple value, or the list of an IN relation.
    Tuple(Vec<Term>),
    /// `{field: term, ...}`: a user type value (field names normalised).
    UserType(Vec<(String, Term)>),
    /// `name(args)`, e.g. `now()`, `token(?)`, `toTimestamp(now())`.
    FunctionCall {
        name: String,
        args: Vec<Term>,
    },
    /// `(type) term`
    Cast {
        ty: CqlType,
        term: Box<Term>,
    },
    /// `-term` where term is not a literal number (e.g. `-?`). Rare.
    Negate(Box<Term>),
    /// `left op right`: arithmetic (or text concatenation with `+`).
    Operation {
        op: ArithOp,
        left: Box<Term>,
        right: Box<Term>,
    },
}

/// An arithmetic operator (`+ - * / %`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl ArithOp {
    /// The operator as written.
    pub fn symbol(self) -> char {
        match self {
            ArithOp::Add => '+',
            ArithOp::Sub => '-',
            ArithOp::Mul => '*',
            ArithOp::Div => '/',
            ArithOp::Mod => '%',
        }
    }

    /// Cassandra's name of the native function behind the operator
    /// (it names bind markers `arg0(system._add)`).
    pub fn function_name(self) -> &'static str {
        match self {
            ArithOp::Add => "_add",
            ArithOp::Sub => "_substract",
            ArithOp::Mul => "_multiply",
            ArithOp::Div => "_divide",
            ArithOp::Mod => "_modulo",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Contains,
    ContainsKey,
    Like,
    IsNot,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RelationLhs {
    Column(String),
    /// `(a, b) op ...`
    Columns(Vec<String>),
    /// `token(a, b) op ...`
    Token(Vec<String>),
    /// `m['key'] = ...`
    MapElement {
        column: String,
        key: Term,
    },
}

/// One WHERE relation. For `IN`, `rhs` is a `Term::Tuple` of the values
/// (tuples of tuples for multi-column IN) or a single bind marker. For
/// `IS NOT NULL`, `rhs` is `Literal::Null`.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    pub lhs: RelationLhs,
    pub op: Operator,
    pub rhs: Term,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SelectorExpr {
    Column(String),
    WriteTime(String),
    Ttl(String),
    /// `writetime(c.f)` (`ttl: false`) or `ttl(c.f)`: of one field of a
    /// user type column.
    FieldWriteTime {
        column: String,
        field: String,
        ttl: bool,
    },
    CountStar,
    FunctionCall {
        name: String,
        args: Vec<SelectorExpr>,
    },
    Cast {
        expr: Box<SelectorExpr>,
        ty: CqlType,
    },
    /// `expr.field`: one field of a user type value.
    Field {
        expr: Box<SelectorExpr>,
        field: String,
    },
    /// `expr[key]`: the value of one map key, or one set element.
    Element {
        expr: Box<SelectorExpr>,
        key: Term,
    },
    /// `expr[from..to]`: the map entries or set elements between two keys,
    /// both included; a bound left out is open.
    Slice {
        expr: Box<SelectorExpr>,
        from: Option<Term>,
        to: Option<Term>,
    },
    /// `writetime(...)`, `ttl(...)` or `maxwritetime(...)` of a collection
    /// element or slice, and every `maxwritetime(...)`; plain
    /// `writetime(c)` / `ttl(c)` and fields keep their own variants.
    CellInfo {
        kind: CellInfoKind,
        arg: Box<SelectorExpr>,
    },
    Term(Term),
    /// `left op right`
    Operation {
        op: ArithOp,
        left: Box<SelectorExpr>,
        right: Box<SelectorExpr>,
    },
    /// `-expr` (a negative number literal stays a literal)
    Negate(Box<SelectorExpr>),
    /// `(expr)`: kept for the column name, which shows the parentheses.
    Paren(Box<SelectorExpr>),
}

/// Which cell information a [`SelectorExpr::CellInfo`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellInfoKind {
    WriteTime,
    Ttl,
    MaxWriteTime,
}

impl CellInfoKind {
    /// The function's name, as Cassandra shows it in column names.
    pub fn name(self) -> &'static str {
        match self {
            CellInfoKind::WriteTime => "writetime",
            CellInfoKind::Ttl => "ttl",
            CellInfoKind::MaxWriteTime => "maxwritetime",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub expr: SelectorExpr,
    pub alias: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    Wildcard,
    Items(Vec<Selector>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub table: QualifiedName,
    pub json: bool,
    pub distinct: bool,
    pub selection: Selection,
    pub where_clause: Vec<Relation>,
    /// Columns, the last of them possibly inside a function
    /// (`GROUP BY k, floor(t, 1h)`).
    pub group_by: Vec<SelectorExpr>,
    pub order_by: Vec<(String, Order)>,
    pub per_partition_limit: Option<Term>,
    pub limit: Option<Term>,
    pub allow_filtering: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Using {
    pub ttl: Option<Term>,
    pub timestamp: Option<Term>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub column: String,
    /// `IF m['k'] = ...` or `IF l[0] = ...`
    pub element: Option<Term>,
    /// `IF c.field = ...`
    pub field: Option<String>,
    pub op: Operator,
    pub rhs: Term,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Conditions {
    #[default]
    None,
    IfExists,
    IfNotExists,
    If(Vec<Condition>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    pub table: QualifiedName,
    pub columns: Vec<String>,
    pub values: Vec<Term>,
    /// `INSERT ... JSON '...'`: the JSON term; `columns`/`values` are empty.
    pub json: Option<Term>,
    /// `INSERT ... JSON ... DEFAULT UNSET`: columns the JSON leaves out are
    /// left as they are (by default, `DEFAULT NULL`, they are set to null).
    pub json_default_unset: bool,
    pub using: Using,
    /// `Conditions::None` or `Conditions::IfNotExists`.
    pub conditions: Conditions,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Assignment {
    /// `c = v`
    Set { column: String, value: Term },
    /// `c[k] = v`
    SetElement {
        column: String,
        key: Term,
        value: Term,
    },
    /// `c = c + v` (collections append / counters increment)
    Add { column: String, value: Term },
    /// `c = v + c` (list prepend)
    Prepend { column: String, value: Term },
    /// `c = c - v`
    Remove { column: String, value: Term },
    /// `c.field = v` (a non-frozen user type's field)
    SetField {
        column: String,
        field: String,
        value: Term,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub table: QualifiedName,
    pub using: Using,
    pub assignments: Vec<Assignment>,
    pub where_clause: Vec<Relation>,
    pub conditions: Conditions,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeleteTarget {
    pub column: String,
    /// `DELETE m['k'] FROM ...`, `DELETE l[0] FROM ...`
    pub element: Option<Term>,
    /// `DELETE c.field FROM ...` (a non-frozen user type's field)
    pub field: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    pub table: QualifiedName,
    /// Empty for a whole-row / range / partition delete.
    pub targets: Vec<DeleteTarget>,
    pub using: Using,
    pub where_clause: Vec<Relation>,
    pub conditions: Conditions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchKind {
    Logged,
    Unlogged,
    Counter,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub kind: BatchKind,
    pub using: Using,
    /// Only Insert, Update and Delete.
    pub statements: Vec<Statement>,
}

/// A property value in `WITH name = value` or keyspace options.
#[derive(Debug, Clone, PartialEq)]
pub enum PropertyValue {
    String(String),
    /// A number as written.
    Number(String),
    Boolean(bool),
    Identifier(String),
    /// `{'k': v, ...}`; values rendered to text as Cassandra stores them
    /// (numbers and booleans as written, strings unquoted).
    Map(Vec<(String, String)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateKeyspace {
    pub name: String,
    pub if_not_exists: bool,
    pub properties: Vec<(String, PropertyValue)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterKeyspace {
    pub name: String,
    pub if_exists: bool,
    pub properties: Vec<(String, PropertyValue)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: CqlType,
    pub is_static: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    pub name: QualifiedName,
    pub if_not_exists: bool,
    pub columns: Vec<ColumnDef>,
    pub partition_key: Vec<String>,
    pub clustering_key: Vec<String>,
    /// From `WITH CLUSTERING ORDER BY (...)`; empty when not given.
    pub clustering_order: Vec<(String, Order)>,
    pub compact_storage: bool,
    /// Every other `WITH name = value` option, in the order written.
    pub properties: Vec<(String, PropertyValue)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterTableOp {
    Add {
        if_not_exists: bool,
        columns: Vec<ColumnDef>,
    },
    Drop {
        if_exists: bool,
        columns: Vec<String>,
        /// `USING TIMESTAMP t`: the drop's time (micros); cells written
        /// after it come back if the column is added again.
        timestamp: Option<i64>,
    },
    Rename {
        if_exists: bool,
        renames: Vec<(String, String)>,
    },
    AlterType {
        column: String,
        ty: CqlType,
    },
    With(Vec<(String, PropertyValue)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterTable {
    pub name: QualifiedName,
    pub if_exists: bool,
    pub op: AlterTableOp,
}

/// Server-side DESCRIBE (Cassandra 4.0+), which cqlsh sends as CQL.
#[derive(Debug, Clone, PartialEq)]
pub enum Describe {
    Cluster,
    Keyspaces,
    /// `DESCRIBE [FULL] SCHEMA`
    Schema {
        full: bool,
    },
    /// `DESCRIBE KEYSPACE [name]` (`None`: the current keyspace)
    Keyspace {
        name: Option<String>,
        only: bool,
    },
    Tables,
    Table(QualifiedName),
    Types,
    /// `DESCRIBE TYPE name`
    Type(QualifiedName),
    Functions,
    Aggregates,
    /// `DESCRIBE name`: a keyspace or table, whichever exists.
    Name(QualifiedName),
}

/// `CREATE TYPE [IF NOT EXISTS] name (field type, ...)`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateType {
    pub name: QualifiedName,
    pub if_not_exists: bool,
    pub fields: Vec<(String, CqlType)>,
}

/// `ALTER TYPE [IF EXISTS] name ...`
#[derive(Debug, Clone, PartialEq)]
pub struct AlterType {
    pub name: QualifiedName,
    pub if_exists: bool,
    pub op: AlterTypeOp,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterTypeOp {
    /// `ADD [IF NOT EXISTS] field type`
    Add {
        if_not_exists: bool,
        field: String,
        ty: CqlType,
    },
    /// `RENAME [IF EXISTS] a TO b [AND c TO d ...]`
    Rename {
        if_exists: bool,
        renames: Vec<(String, String)>,
    },
    /// `ALTER field TYPE t`: refused, as Cassandra refuses it.
    AlterField,
}
