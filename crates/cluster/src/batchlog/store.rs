//! The batches this node keeps for other coordinators (or itself): one
//! file per batch in `<data directory>/batchlog`, named by the batch id,
//! holding the BATCH_STORE payload and a CRC32 of it, written to a
//! temporary name, synced and renamed before the store is acknowledged
//! (docs/format/batchlog.md). A file that does not check is set aside
//! with a warning, never replayed half.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::verbs::batch::{decode_store, encode_store, BatchId, StoredBatch};

/// The batch files of one node.
#[derive(Debug)]
pub struct BatchlogStore {
    dir: PathBuf,
}

fn hex(id: &BatchId) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl BatchlogStore {
    /// Opens (creating) `dir`; leftovers of an interrupted store go.
    pub fn open(dir: PathBuf) -> io::Result<BatchlogStore> {
        fs::create_dir_all(&dir)?;
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "tmp") {
                let _ = fs::remove_file(&path);
            }
        }
        Ok(BatchlogStore { dir })
    }

    fn path(&self, id: &BatchId) -> PathBuf {
        self.dir.join(format!("{}.batch", hex(id)))
    }

    /// Keeps `batch` durably (synced before this returns).
    pub fn store(&self, batch: &StoredBatch) -> io::Result<()> {
        let payload = encode_store(batch);
        let final_path = self.path(&batch.id);
        let tmp = final_path.with_extension("tmp");
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&payload)?;
        f.write_all(&crc32fast::hash(&payload).to_be_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &final_path)?;
        fs::File::open(&self.dir)?.sync_all()
    }

    /// Forgets a batch (its writes are done).
    pub fn remove(&self, id: &BatchId) {
        match fs::remove_file(self.path(id)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("removing batch {}: {e}", hex(id)),
        }
    }

    /// Every batch kept, by id; damaged files are set aside.
    pub fn list(&self) -> Vec<StoredBatch> {
        let mut out = Vec::new();
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return out;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "batch"))
            .collect();
        paths.sort();
        for path in paths {
            match read(&path) {
                Ok(b) => out.push(b),
                Err(e) => {
                    tracing::warn!("batch file {} is damaged, set aside: {e}", path.display());
                    let _ = fs::rename(&path, path.with_extension("damaged"));
                }
            }
        }
        out
    }
}

fn read(path: &Path) -> io::Result<StoredBatch> {
    let bytes = fs::read(path)?;
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    if bytes.len() < 4 {
        return Err(bad("too short".into()));
    }
    let (payload, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(payload).to_be_bytes() != crc {
        return Err(bad("checksum mismatch".into()));
    }
    decode_store(&Bytes::copy_from_slice(payload)).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_kept_listed_removed_and_damage_is_set_aside() {
        let dir = std::env::temp_dir().join(format!("varve-batchlog-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let store = BatchlogStore::open(dir.clone()).unwrap();
        let b = |n: u8| StoredBatch {
            id: [n; 16],
            created_micros: i64::from(n),
            mutations: vec![Bytes::from(vec![n; 3])],
        };
        store.store(&b(1)).unwrap();
        store.store(&b(2)).unwrap();
        assert_eq!(store.list(), vec![b(1), b(2)]);
        store.remove(&[1; 16]);
        store.remove(&[1; 16]);
        assert_eq!(store.list(), vec![b(2)]);
        let path = store.path(&[2; 16]);
        let mut bytes = fs::read(&path).unwrap();
        bytes[20] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert!(store.list().is_empty(), "a damaged batch is never replayed");
        assert!(path.with_extension("damaged").exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
