//! Column definitions.

use varve_types::CqlType;

/// The role of a column in its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ColumnKind {
    PartitionKey,
    Clustering,
    Static,
    Regular,
}

impl ColumnKind {
    /// The `kind` value of system_schema.columns.
    pub fn schema_name(&self) -> &'static str {
        match self {
            ColumnKind::PartitionKey => "partition_key",
            ColumnKind::Clustering => "clustering",
            ColumnKind::Static => "static",
            ColumnKind::Regular => "regular",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: CqlType,
    pub kind: ColumnKind,
    /// Position within the partition key or clustering; -1 otherwise
    /// (as system_schema.columns.position shows it).
    pub position: i32,
    /// Only for clustering columns: declared `DESC`.
    pub descending: bool,
    /// Stable id used by storage to address the column's cells.
    pub id: u32,
    /// A column COMPACT STORAGE adds that CQL never names (see
    /// [`crate::compact`]): shown in system_schema.columns, invisible to
    /// every statement.
    pub hidden: bool,
}

impl Column {
    pub fn is_primary_key(&self) -> bool {
        matches!(self.kind, ColumnKind::PartitionKey | ColumnKind::Clustering)
    }

    /// The `clustering_order` value of system_schema.columns.
    pub fn clustering_order(&self) -> &'static str {
        match (self.kind, self.descending) {
            (ColumnKind::Clustering, true) => "desc",
            (ColumnKind::Clustering, false) => "asc",
            _ => "none",
        }
    }
}
