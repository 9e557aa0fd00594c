//! openraft's `RaftStateMachine` (v2 API): committed entries go through
//! our pure [`apply`], each result is published in order
//! ([`AppliedState`]), and the snapshot is the encoded
//! [`ClusterMetadata`] in the snapshot file.
//!
//! The snapshot file holds the version, openraft's snapshot meta (last
//! log id, membership, id) and the metadata's bytes
//! (docs/format/metadata-log.md, section 1.3). At start the state
//! machine is the snapshot's; openraft then applies again the committed
//! entries after it (the log store keeps the committed log id).
// openraft's traits return its `StorageError` (240 bytes); the helpers
// that build it return it too.
#![allow(clippy::result_large_err)]

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{
    AnyError, EntryPayload, OptionalSend, RaftSnapshotBuilder, Snapshot, StorageIOError,
};
use parking_lot::Mutex;

use super::codec::{decode, put_snapshot_meta, read_snapshot_meta, RAFT_PAYLOAD_VERSION};
use super::{ApplyResult, Entry, LogId, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use crate::metadata::applied::AppliedState;
use crate::metadata::codec::{decode_metadata, encode_metadata};
use crate::metadata::limits::MAX_STATE_FILE_BYTES;
use crate::metadata::state::{self, apply, ClusterMetadata};
use crate::metadata::store::state_file::{self, SNAPSHOT_MAGIC};
use crate::metadata::store::{StoreError, StoreResult};
use crate::net::wire::put_bytes;

pub const SNAPSHOT_FILE_NAME: &str = "snapshot";

/// The snapshot on disk and its meta; shared by the state machine and
/// its builders, so an older snapshot never replaces a newer one.
#[derive(Debug, Default)]
struct Stored {
    snapshot: Option<(SnapshotMeta, Vec<u8>)>,
    built: u64,
}

#[derive(Debug)]
pub struct StateMachine {
    dir: PathBuf,
    applied: Arc<AppliedState>,
    last_applied: Option<LogId>,
    last_membership: StoredMembership,
    stored: Arc<Mutex<Stored>>,
}

impl StateMachine {
    /// Recovers the snapshot in `dir`, if any, and publishes its
    /// metadata.
    pub fn open(dir: &Path, applied: Arc<AppliedState>) -> StoreResult<StateMachine> {
        let mut machine = StateMachine {
            dir: dir.to_path_buf(),
            applied,
            last_applied: None,
            last_membership: StoredMembership::default(),
            stored: Arc::default(),
        };
        if let Some(payload) = state_file::read(dir, SNAPSHOT_FILE_NAME, SNAPSHOT_MAGIC)? {
            let path = dir.join(SNAPSHOT_FILE_NAME);
            let (meta, data) = decode(&payload, read_snapshot_file)
                .map_err(|e| StoreError::corruption(&path, 9, e.to_string()))?;
            let metadata = decode_metadata(&data)
                .map_err(|e| StoreError::corruption(&path, 9, e.to_string()))?;
            machine.last_applied = meta.last_log_id;
            machine.last_membership = meta.last_membership.clone();
            machine.stored.lock().snapshot = Some((meta, data));
            machine.applied.publish(Arc::new(metadata));
        }
        Ok(machine)
    }

    fn apply_one(&mut self, metadata: &mut ClusterMetadata, entry: Entry) -> ApplyResult {
        let index = entry.log_id.index;
        let ours = match entry.payload {
            EntryPayload::Blank => state::Entry::Blank,
            EntryPayload::Normal(command) => state::Entry::Command(command),
            EntryPayload::Membership(membership) => {
                let voters = membership.voter_ids().collect();
                self.last_membership = StoredMembership::new(Some(entry.log_id), membership);
                state::Entry::Voters(voters)
            }
        };
        let outcome = apply(metadata, index, &ours);
        self.last_applied = Some(entry.log_id);
        ApplyResult {
            epoch: index,
            outcome,
        }
    }
}

fn read_snapshot_file(
    r: &mut crate::net::wire::Reader<'_>,
) -> Result<(SnapshotMeta, Vec<u8>), crate::net::wire::WireError> {
    let meta = read_snapshot_meta(r)?;
    let data = r.bytes("snapshot metadata", MAX_STATE_FILE_BYTES)?.to_vec();
    Ok((meta, data))
}

/// Writes the snapshot file unless a newer snapshot is stored.
fn store_snapshot(
    dir: &Path,
    stored: &Mutex<Stored>,
    meta: &SnapshotMeta,
    data: &[u8],
) -> Result<(), StorageError> {
    let mut stored = stored.lock();
    if let Some((current, _)) = &stored.snapshot {
        if current.last_log_id > meta.last_log_id {
            return Ok(());
        }
    }
    let mut payload = vec![RAFT_PAYLOAD_VERSION];
    put_snapshot_meta(&mut payload, meta);
    put_bytes(&mut payload, data);
    state_file::write(dir, SNAPSHOT_FILE_NAME, SNAPSHOT_MAGIC, &payload)
        .map_err(|e| StorageError::from(StorageIOError::write_snapshot(None, AnyError::new(&e))))?;
    stored.snapshot = Some((meta.clone(), data.to_vec()));
    Ok(())
}

/// Builds a snapshot of the metadata as applied when it was asked for.
#[derive(Debug)]
pub struct SnapshotBuilder {
    dir: PathBuf,
    metadata: Arc<ClusterMetadata>,
    last_applied: Option<LogId>,
    last_membership: StoredMembership,
    stored: Arc<Mutex<Stored>>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let data = encode_metadata(&self.metadata);
        let built = {
            let mut stored = self.stored.lock();
            stored.built += 1;
            stored.built
        };
        let snapshot_id = match &self.last_applied {
            Some(id) => format!("{}-{}-{built}", id.leader_id.term, id.index),
            None => format!("0-0-{built}"),
        };
        let meta = SnapshotMeta {
            last_log_id: self.last_applied,
            last_membership: self.last_membership.clone(),
            snapshot_id,
        };
        store_snapshot(&self.dir, &self.stored, &meta, &data)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        Ok((self.last_applied, self.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<ApplyResult>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut results = Vec::new();
        for entry in entries {
            let mut metadata = ClusterMetadata::clone(&self.applied.current());
            results.push(self.apply_one(&mut metadata, entry));
            self.applied.publish(Arc::new(metadata));
        }
        Ok(results)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder {
            dir: self.dir.clone(),
            metadata: self.applied.current(),
            last_applied: self.last_applied,
            last_membership: self.last_membership.clone(),
            stored: self.stored.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let metadata = decode_metadata(&data).map_err(|e| {
            StorageError::from(StorageIOError::read_snapshot(None, AnyError::new(&e)))
        })?;
        store_snapshot(&self.dir, &self.stored, meta, &data)?;
        self.last_applied = meta.last_log_id;
        self.last_membership = meta.last_membership.clone();
        self.applied.publish(Arc::new(metadata));
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self
            .stored
            .lock()
            .snapshot
            .clone()
            .map(|(meta, data)| Snapshot {
                meta,
                snapshot: Box::new(Cursor::new(data)),
            }))
    }
}
