//! RESULT bodies (spec section 4.2.5): Void, Rows, Set_keyspace, Prepared,
//! Schema_change; and the column metadata they share.
//!
//! Metadata uses the global-table-spec flag whenever every column has the
//! same keyspace and table (and there is at least one column).

use bytes::Bytes;
use varve_types::CqlType;

use crate::error::{ProtocolError, Result};
use crate::primitives::{put_bytes, put_int, put_short, put_short_bytes, put_string, Reader};
use crate::schema_change::SchemaChange;
use crate::spliced::put_value;
use crate::types::{put_type, read_type};

/// Most rows a decoded result without columns may announce (such rows
/// take no bytes, so the input cannot bound their number).
pub const MAX_ROWS_WITHOUT_COLUMNS: usize = 65_536;

/// Result kinds.
pub mod result_kind {
    pub const VOID: i32 = 0x0001;
    pub const ROWS: i32 = 0x0002;
    pub const SET_KEYSPACE: i32 = 0x0003;
    pub const PREPARED: i32 = 0x0004;
    pub const SCHEMA_CHANGE: i32 = 0x0005;
}

/// Metadata flags.
pub mod metadata_flags {
    pub const GLOBAL_TABLES_SPEC: i32 = 0x0001;
    pub const HAS_MORE_PAGES: i32 = 0x0002;
    pub const NO_METADATA: i32 = 0x0004;
    /// v5 only.
    pub const METADATA_CHANGED: i32 = 0x0008;
    /// ScyllaDB's protocol extension `SCYLLA_LWT_ADD_METADATA_MARK`: in a
    /// PREPARED result's bind metadata, marks a conditional statement, for
    /// a client that asked for the extension at STARTUP (the value
    /// ScyllaDB offers, `LWT_OPTIMIZATION_META_BIT_MASK=2147483648`).
    pub const SCYLLA_LWT_MARK: i32 = i32::MIN;
}

/// Name and type of a result column or bind marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub keyspace: String,
    pub table: String,
    pub name: String,
    pub ty: CqlType,
}

/// Metadata of a result set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultMetadata {
    /// Number of columns of each row. Equals `columns.len()` unless
    /// `no_metadata` is set, when `columns` may be empty.
    pub col_count: usize,
    pub columns: Vec<ColumnSpec>,
    /// Set when more pages follow.
    pub paging_state: Option<Bytes>,
    /// Column specs are left out (the client asked to skip metadata).
    pub no_metadata: bool,
    /// v5: the result metadata changed since the client's EXECUTE; the new id.
    pub new_metadata_id: Option<Bytes>,
}

impl ResultMetadata {
    /// Metadata listing `columns`.
    pub fn new(columns: Vec<ColumnSpec>) -> Self {
        ResultMetadata {
            col_count: columns.len(),
            columns,
            paging_state: None,
            no_metadata: false,
            new_metadata_id: None,
        }
    }

    /// No columns at all (results of non-SELECT prepared statements).
    pub fn empty() -> Self {
        ResultMetadata {
            col_count: 0,
            columns: Vec::new(),
            paging_state: None,
            no_metadata: true,
            new_metadata_id: None,
        }
    }

    fn encode(&self, version: u8, out: &mut Vec<u8>) {
        use metadata_flags as f;
        let global = global_spec(&self.columns);
        let mut flags = 0;
        if self.no_metadata {
            flags |= f::NO_METADATA;
        } else if global.is_some() {
            flags |= f::GLOBAL_TABLES_SPEC;
        }
        if self.paging_state.is_some() {
            flags |= f::HAS_MORE_PAGES;
        }
        let new_id = self.new_metadata_id.as_ref().filter(|_| version >= 5);
        if new_id.is_some() {
            flags |= f::METADATA_CHANGED;
        }
        put_int(out, flags);
        let count = if self.no_metadata {
            self.col_count
        } else {
            self.columns.len()
        };
        put_int(out, i32::try_from(count).unwrap_or(i32::MAX));
        if let Some(p) = &self.paging_state {
            put_bytes(out, Some(p));
        }
        if let Some(id) = new_id {
            put_short_bytes(out, id);
        }
        if !self.no_metadata {
            put_column_specs(out, version, &self.columns, global);
        }
    }

    fn decode(version: u8, r: &mut Reader<'_>) -> Result<ResultMetadata> {
        use metadata_flags as f;
        let flags = r.read_int()?;
        let col_count = read_count(r)?;
        let paging_state = if flags & f::HAS_MORE_PAGES != 0 {
            r.read_bytes()?
        } else {
            None
        };
        let new_metadata_id = if version >= 5 && flags & f::METADATA_CHANGED != 0 {
            Some(r.read_short_bytes()?)
        } else {
            None
        };
        let no_metadata = flags & f::NO_METADATA != 0;
        let columns = if no_metadata {
            Vec::new()
        } else {
            read_column_specs(r, col_count, flags & f::GLOBAL_TABLES_SPEC != 0)?
        };
        Ok(ResultMetadata {
            col_count,
            columns,
            paging_state,
            no_metadata,
            new_metadata_id,
        })
    }
}

/// Metadata of the bind markers of a prepared statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedMetadata {
    pub columns: Vec<ColumnSpec>,
    /// Index of the bind marker of each partition key column, in key order.
    pub pk_indices: Vec<u16>,
    /// Flag bits beyond the spec's (ScyllaDB's LWT mark,
    /// [`metadata_flags::SCYLLA_LWT_MARK`]), OR'ed into the flags.
    pub extra_flags: i32,
}

/// A Prepared result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub id: Bytes,
    /// Sent in v5 only.
    pub result_metadata_id: Bytes,
    pub bind: PreparedMetadata,
    pub result: ResultMetadata,
}

/// A Rows result. Values are already serialized by the query layer;
/// `None` is a null. Every row must have `metadata.col_count` values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub metadata: ResultMetadata,
    pub rows: Vec<Vec<Option<Bytes>>>,
}

/// The body of a RESULT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultBody {
    Void,
    Rows(Rows),
    SetKeyspace(String),
    Prepared(Prepared),
    SchemaChange(SchemaChange),
}

fn global_spec(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

fn put_column_specs(
    out: &mut Vec<u8>,
    version: u8,
    columns: &[ColumnSpec],
    global: Option<(&str, &str)>,
) {
    if let Some((ks, table)) = global {
        put_string(out, ks);
        put_string(out, table);
    }
    for c in columns {
        if global.is_none() {
            put_string(out, &c.keyspace);
            put_string(out, &c.table);
        }
        put_string(out, &c.name);
        put_type(out, version, &c.ty);
    }
}

fn read_column_specs(r: &mut Reader<'_>, count: usize, global: bool) -> Result<Vec<ColumnSpec>> {
    let count = r.check_count(count, 4)?;
    let shared = if global {
        Some((r.read_string()?, r.read_string()?))
    } else {
        None
    };
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        let (keyspace, table) = match &shared {
            Some((k, t)) => (k.clone(), t.clone()),
            None => (r.read_string()?, r.read_string()?),
        };
        columns.push(ColumnSpec {
            keyspace,
            table,
            name: r.read_string()?,
            ty: read_type(r)?,
        });
    }
    Ok(columns)
}

fn read_count(r: &mut Reader<'_>) -> Result<usize> {
    let n = r.read_int()?;
    usize::try_from(n).map_err(|_| ProtocolError::invalid(format!("negative count {n}")))
}

fn count_int(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl ResultBody {
    /// Appends the RESULT body for `version`.
    pub fn encode(&self, version: u8, out: &mut Vec<u8>) {
        self.encode_spliced(version, out, None);
    }

    /// [`ResultBody::encode`], with the long values of rows recorded in
    /// `splices` (when given) rather than copied (see [`crate::spliced`]).
    pub(crate) fn encode_spliced(
        &self,
        version: u8,
        out: &mut Vec<u8>,
        mut splices: Option<&mut Vec<(usize, Bytes)>>,
    ) {
        match self {
            ResultBody::Void => put_int(out, result_kind::VOID),
            ResultBody::Rows(rows) => {
                put_int(out, result_kind::ROWS);
                rows.metadata.encode(version, out);
                put_int(out, count_int(rows.rows.len()));
                for row in &rows.rows {
                    debug_assert_eq!(
                        row.len(),
                        rows.metadata.col_count.max(rows.metadata.columns.len())
                    );
                    for v in row {
                        put_value(out, v.as_ref(), splices.as_deref_mut());
                    }
                }
            }
            ResultBody::SetKeyspace(ks) => {
                put_int(out, result_kind::SET_KEYSPACE);
                put_string(out, ks);
            }
            ResultBody::Prepared(p) => {
                put_int(out, result_kind::PREPARED);
                put_short_bytes(out, &p.id);
                if version >= 5 {
                    put_short_bytes(out, &p.result_metadata_id);
                }
                let global = global_spec(&p.bind.columns);
                let spec_flags = if global.is_some() {
                    metadata_flags::GLOBAL_TABLES_SPEC
                } else {
                    0
                };
                put_int(out, spec_flags | p.bind.extra_flags);
                put_int(out, count_int(p.bind.columns.len()));
                // The partition key's bind indexes came in v4.
                if version >= 4 {
                    put_int(out, count_int(p.bind.pk_indices.len()));
                    for i in &p.bind.pk_indices {
                        put_short(out, *i);
                    }
                }
                put_column_specs(out, version, &p.bind.columns, global);
                p.result.encode(version, out);
            }
            ResultBody::SchemaChange(sc) => {
                put_int(out, result_kind::SCHEMA_CHANGE);
                sc.encode(version, out);
            }
        }
    }

    /// Reads a RESULT body of `version`.
    pub fn decode(version: u8, r: &mut Reader<'_>) -> Result<ResultBody> {
        Ok(match r.read_int()? {
            result_kind::VOID => ResultBody::Void,
            result_kind::ROWS => {
                let metadata = ResultMetadata::decode(version, r)?;
                let n = read_count(r)?;
                let width = metadata.col_count;
                // Each value takes at least 4 bytes; zero-width rows take
                // none, so their count is capped instead.
                let n = if width == 0 {
                    if n > MAX_ROWS_WITHOUT_COLUMNS {
                        return Err(ProtocolError::invalid(format!("{n} rows without columns")));
                    }
                    n
                } else {
                    r.check_count(n, width.saturating_mul(4))?
                };
                let mut rows = Vec::new();
                for _ in 0..n {
                    rows.push(
                        (0..width)
                            .map(|_| r.read_bytes())
                            .collect::<Result<Vec<_>>>()?,
                    );
                }
                ResultBody::Rows(Rows { metadata, rows })
            }
            result_kind::SET_KEYSPACE => ResultBody::SetKeyspace(r.read_string()?),
            result_kind::PREPARED => {
                let id = r.read_short_bytes()?;
                let result_metadata_id = if version >= 5 {
                    r.read_short_bytes()?
                } else {
                    Bytes::new()
                };
                let flags = r.read_int()?;
                let col_count = read_count(r)?;
                let pk_count = if version >= 4 {
                    let n = read_count(r)?;
                    r.check_count(n, 2)?
                } else {
                    0
                };
                let pk_indices = (0..pk_count)
                    .map(|_| r.read_short())
                    .collect::<Result<Vec<_>>>()?;
                let columns = read_column_specs(
                    r,
                    col_count,
                    flags & metadata_flags::GLOBAL_TABLES_SPEC != 0,
                )?;
                let result = ResultMetadata::decode(version, r)?;
                ResultBody::Prepared(Prepared {
                    id,
                    result_metadata_id,
                    bind: PreparedMetadata {
                        columns,
                        pk_indices,
                        extra_flags: flags & !metadata_flags::GLOBAL_TABLES_SPEC,
                    },
                    result,
                })
            }
            result_kind::SCHEMA_CHANGE => ResultBody::SchemaChange(SchemaChange::decode(r)?),
            k => return Err(ProtocolError::invalid(format!("unknown result kind {k}"))),
        })
    }
}
