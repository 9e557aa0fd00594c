//! `nodetool import`: sstables from a directory made live in a table
//! (docs/design/snapshots.md, "Import").
//!
//! 1. Find: every `*.sst` file directly in the directory (a snapshot's,
//!    or sstables an operator copied there), in name order.
//! 2. Validate them all before anything is installed: each is opened
//!    with the table's clustering comparator and read whole with every
//!    checksum checked ([`Sstable::verify_each`]), and each partition must
//!    fit the table as far as the file can tell: rows with exactly the
//!    table's number of clustering columns, range tombstone bounds with
//!    no more, cells of column ids the table has given out. A truncated or
//!    corrupt file fails here with the file and offset in the error.
//! 3. Install, under the table's flush lock: fresh generations from the
//!    table's manifest; each file hard linked (copied when it is on
//!    another device) to `<generation>.sst` in the table's directory, the
//!    directory synced, each opened; then one manifest write makes them
//!    all live together, readable at once and seen by compaction. A
//!    failure before that write removes what was linked, so nothing is
//!    half installed; a crash leaves files the manifest does not list,
//!    which the table's next open deletes.
//! 4. Unless `copy_data`, the source files are removed (Cassandra moves
//!    them by default).
//!
//! The file cannot tell which table wrote it (no table id or column
//! names are stored in an sstable), so data of another table with the
//! same clustering arity and column ids is accepted.

use crate::engine::{sstable_path, Engine, TableDescriptor, TableId, TableStore};
use crate::engine_snapshot::link_or_copy;
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::sstable::Sstable;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How `nodetool import` treats its sources and checks them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Keep the source files (Cassandra's `--copy-data`); by default they
    /// are removed once imported.
    pub copy_data: bool,
    /// The table's next column id: a cell of a column id at or past it is
    /// refused (`None`: not checked).
    pub column_id_limit: Option<u32>,
}

/// What an import installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportResult {
    /// Each source file and the generation it got.
    pub sstables: Vec<(PathBuf, u64)>,
    pub bytes: u64,
    pub partitions: u64,
}

impl Engine {
    /// Imports the sstables of `source` into the table (see the module
    /// doc): all of them or, with an error, none.
    pub fn import_sstables(
        &self,
        id: TableId,
        source: &Path,
        options: &ImportOptions,
    ) -> Result<ImportResult> {
        let table = self.table(id)?;
        let desc = table.desc.read().clone();
        let Some(dir) = table.dir.clone() else {
            return Err(Error::Refused(format!(
                "table {}.{} is kept in memory: sstables cannot be imported into it",
                desc.keyspace, desc.name
            )));
        };
        let sources = self.import_sources(source, &dir)?;
        let mut result = ImportResult::default();
        for src in &sources {
            result.partitions += self.verify_for_import(src, &desc, options)?;
        }
        let flush = table.flush_lock.lock();
        let first = reserve_generations(&table, sources.len() as u64);
        let targets: Vec<u64> = (first..).take(sources.len()).collect();
        let opened = match self.install(&sources, &targets, &dir, &desc) {
            Ok(opened) => opened,
            Err(e) => {
                self.remove_quietly(&dir, &targets);
                return Err(e);
            }
        };
        result.bytes = opened.iter().map(|s| s.size_on_disk()).sum();
        self.publish_imported(&table, &dir, &targets, opened)?;
        drop(flush);
        result.sstables = sources.iter().cloned().zip(targets).collect();
        if !options.copy_data {
            self.remove_sources(source, &sources);
        }
        Ok(result)
    }

    /// The `*.sst` files directly in `source`, in name order; refused when
    /// there are none or `source` is the table's own directory.
    fn import_sources(&self, source: &Path, table_dir: &Path) -> Result<Vec<PathBuf>> {
        let same = source == table_dir
            || matches!(
                (std::fs::canonicalize(source), std::fs::canonicalize(table_dir)),
                (Ok(a), Ok(b)) if a == b
            );
        if same {
            return Err(Error::Refused(format!(
                "{} is the table's own directory: import from another one",
                source.display()
            )));
        }
        let entries = self.fs.list(source).map_err(|e| Error::io(source, e))?;
        let sources: Vec<PathBuf> = entries
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "sst"))
            .filter(|p| !self.fs.metadata(p).is_ok_and(|m| m.is_dir))
            .collect();
        if sources.is_empty() {
            return Err(Error::Refused(format!(
                "no sstables (*.sst files) in {}",
                source.display()
            )));
        }
        Ok(sources)
    }

    /// Opens `src` and reads it whole, checking every checksum and that
    /// each partition fits the table; returns its partition count.
    fn verify_for_import(
        &self,
        src: &Path,
        desc: &TableDescriptor,
        options: &ImportOptions,
    ) -> Result<u64> {
        let sstable = Sstable::open(self.fs.clone(), src, desc.comparator.clone(), 1.0)?;
        let arity = desc.comparator.columns.len();
        let mut partitions = 0u64;
        sstable.verify_each(|_, p| {
            partitions += 1;
            fits_table(p, arity, options.column_id_limit).map_err(|why| {
                Error::Refused(format!(
                    "{}: {why}: it is not an sstable of {}.{}",
                    src.display(),
                    desc.keyspace,
                    desc.name
                ))
            })
        })?;
        Ok(partitions)
    }

    /// Links (or copies) each source to its generation's file, syncs the
    /// directory and opens them.
    fn install(
        &self,
        sources: &[PathBuf],
        generations: &[u64],
        dir: &Path,
        desc: &TableDescriptor,
    ) -> Result<Vec<Arc<Sstable>>> {
        for (src, g) in sources.iter().zip(generations) {
            link_or_copy(self.fs.as_ref(), src, &sstable_path(dir, *g))?;
        }
        self.fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
        let now = i64::from(self.now_seconds());
        generations
            .iter()
            .map(|g| {
                let s = self.open_sstable(&sstable_path(dir, *g), desc)?;
                s.set_created_at_seconds(now);
                Ok(Arc::new(s))
            })
            .collect()
    }

    /// One manifest write makes the imported sstables live. If it fails,
    /// the live set in memory is as before and the files stay: the
    /// manifest on disk may or may not list them (a rename that happened
    /// before a failed directory sync), and the next open keeps them or
    /// deletes them accordingly.
    pub(crate) fn publish_imported(
        &self,
        table: &TableStore,
        dir: &Path,
        generations: &[u64],
        opened: Vec<Arc<Sstable>>,
    ) -> Result<()> {
        let mut state = table.state.write();
        state.manifest.live.extend_from_slice(generations);
        if let Err(e) = state.manifest.store(self.fs.as_ref(), dir) {
            state.manifest.live.retain(|g| !generations.contains(g));
            return Err(e);
        }
        let chance = table.desc.read().params.crc_check_chance;
        for s in &opened {
            s.set_crc_check_chance(chance);
        }
        state.sstables.extend(opened);
        Ok(())
    }

    /// Removes what an import that failed had linked (best effort: the
    /// next open deletes files the manifest does not list).
    fn remove_quietly(&self, dir: &Path, generations: &[u64]) {
        for g in generations {
            let path = sstable_path(dir, *g);
            if self.fs.exists(&path) {
                if let Err(e) = self.fs.remove(&path) {
                    tracing::warn!("removing {} of a failed import: {e}", path.display());
                }
            }
        }
    }

    /// Removes the imported files from the source directory (a failure is
    /// logged: the data is live either way).
    fn remove_sources(&self, source: &Path, sources: &[PathBuf]) {
        for src in sources {
            if let Err(e) = self.fs.remove(src) {
                tracing::warn!("imported {} but could not remove it: {e}", src.display());
            }
        }
        if let Err(e) = self.fs.sync_dir(source) {
            tracing::warn!("syncing {} after an import: {e}", source.display());
        }
    }
}

/// Takes `n` generations for the table; they are recorded in its manifest
/// on its next write.
pub(crate) fn reserve_generations(table: &TableStore, n: u64) -> u64 {
    let mut state = table.state.write();
    let first = state.manifest.next_generation.max(1);
    state.manifest.next_generation = first.saturating_add(n);
    first
}

/// Whether a partition read from an sstable can belong to a table of
/// `arity` clustering columns whose column ids are below `column_id_limit`;
/// the error says what does not fit.
pub fn fits_table(
    p: &Partition,
    arity: usize,
    column_id_limit: Option<u32>,
) -> std::result::Result<(), String> {
    if let Some(key) = p.rows.keys().find(|k| k.values.len() != arity) {
        return Err(format!(
            "a row has {} clustering values where the table has {arity} clustering columns",
            key.values.len()
        ));
    }
    let bounds = p
        .range_tombstones
        .iter()
        .flat_map(|rt| [&rt.slice.start, &rt.slice.end]);
    if let Some(b) = bounds.into_iter().find(|b| b.values.len() > arity) {
        return Err(format!(
            "a range tombstone bound has {} clustering values where the table has {arity} \
             clustering columns",
            b.values.len()
        ));
    }
    let Some(limit) = column_id_limit else {
        return Ok(());
    };
    for row in p.rows.values().chain(p.static_row.iter()) {
        let ids = row
            .cells
            .keys()
            .map(|(c, _)| *c)
            .chain(row.complex_deletions.keys().copied());
        if let Some(c) = ids.into_iter().find(|c| *c >= limit) {
            return Err(format!(
                "a cell of column id {c}, where the table's column ids are below {limit}"
            ));
        }
    }
    Ok(())
}
