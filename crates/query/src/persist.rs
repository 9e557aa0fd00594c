//! Keeps the schema on disk: written atomically after every schema change,
//! read back when the node starts.

use crate::error::{QueryError, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use varve_schema::snapshot::Saved;
use varve_schema::Schema;
use varve_storage::fs::Fs;

/// Where the schema file lives under the data directory.
pub const SCHEMA_FILE: &str = "schema.json";

pub struct SchemaStore {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
}

fn io(path: &Path, e: std::io::Error) -> QueryError {
    QueryError::Server(format!("schema file {}: {e}", path.display()))
}

impl SchemaStore {
    pub fn new(fs: Arc<dyn Fs>, dir: &Path) -> Result<SchemaStore> {
        fs.create_dir_all(dir).map_err(|e| io(dir, e))?;
        Ok(SchemaStore {
            fs,
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self) -> PathBuf {
        self.dir.join(SCHEMA_FILE)
    }

    /// The saved keyspaces, schema version and roles, if a schema was saved.
    pub fn load(&self) -> Result<Option<Saved>> {
        let path = self.path();
        if !self.fs.exists(&path) {
            return Ok(None);
        }
        let bytes = self.fs.read_all(&path).map_err(|e| io(&path, e))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            QueryError::Server(format!("schema file {} is not UTF-8", path.display()))
        })?;
        Ok(Some(varve_schema::snapshot::from_json_with_access(&text)?))
    }

    /// Writes the schema durably: a temporary file, fsync, rename, fsync of
    /// the directory. A crash leaves either the old or the new file.
    pub fn save(&self, schema: &Schema) -> Result<()> {
        let path = self.path();
        let tmp = self.dir.join(format!("{SCHEMA_FILE}.tmp"));
        let text = varve_schema::snapshot::to_json(schema);
        let mut f = self.fs.create(&tmp).map_err(|e| io(&tmp, e))?;
        f.write_all(text.as_bytes()).map_err(|e| io(&tmp, e))?;
        f.sync().map_err(|e| io(&tmp, e))?;
        drop(f);
        self.fs.rename(&tmp, &path).map_err(|e| io(&path, e))?;
        self.fs.sync_dir(&self.dir).map_err(|e| io(&self.dir, e))?;
        Ok(())
    }
}
