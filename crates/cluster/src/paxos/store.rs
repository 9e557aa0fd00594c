//! Where a replica keeps its Paxos state: the node-local table
//! `system.paxos` (Cassandra's layout: partition `row_key`, the user
//! partition's key; clustering `cf_id`, the table's id), one row per
//! partition with LWT traffic, written through the engine with an fsync
//! before the replica answers, every cell expiring after the table's
//! `gc_grace_seconds` (at least [`MIN_STATE_TTL_SECONDS`]) and timestamped
//! with its ballot's micros. State older than that horizon is ignored when
//! read (docs/design/paxos.md, section 4).

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::encoding::{
    decode_partition_v, encode_partition, Reader as PartitionReader, PARTITION_ENCODING_VERSION,
    READABLE_PARTITION_ENCODINGS,
};
use varve_storage::{Engine, Error as StorageError};
use varve_types::data::{
    Cell, CellMap, ClusteringComparator, ClusteringKey, Partition, PartitionKey, Row, Slice,
};

use super::ballot::Ballot;
use super::state::{PaxosState, Proposal};

/// The shortest life of Paxos state, whatever a table's
/// `gc_grace_seconds` (0 is allowed there): three hours, as Cassandra.
pub const MIN_STATE_TTL_SECONDS: i32 = 3 * 3600;

/// The column ids of `system.paxos` (its regular columns in name order,
/// after `row_key` 0 and `cf_id` 1; a test in the server checks them
/// against the table's definition).
pub mod columns {
    pub const IN_PROGRESS_BALLOT: u32 = 2;
    pub const MOST_RECENT_COMMIT: u32 = 3;
    pub const MOST_RECENT_COMMIT_AT: u32 = 4;
    pub const MOST_RECENT_COMMIT_VERSION: u32 = 5;
    pub const PROPOSAL: u32 = 6;
    pub const PROPOSAL_BALLOT: u32 = 7;
    pub const PROPOSAL_VERSION: u32 = 8;
}

/// The Paxos state of every partition of this node.
pub struct PaxosStore {
    engine: Arc<Engine>,
    /// `system.paxos`'s id.
    table: u128,
}

impl PaxosStore {
    pub fn new(engine: Arc<Engine>, table: u128) -> PaxosStore {
        PaxosStore { engine, table }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    fn comparator(&self) -> Result<Arc<ClusteringComparator>, StorageError> {
        self.engine.comparator(self.table)
    }

    fn clustering(&self, table: u128) -> Result<ClusteringKey, StorageError> {
        Ok(ClusteringKey::row(
            vec![table_id(table)],
            &self.comparator()?,
        ))
    }

    /// How long the state of `table` lives.
    fn ttl(&self, table: u128) -> Result<i32, StorageError> {
        Ok(self
            .engine
            .gc_grace_seconds(table)?
            .max(MIN_STATE_TTL_SECONDS))
    }

    /// The state of `key` in `table` at `now_seconds`, without anything
    /// older than the table's horizon.
    pub fn load(
        &self,
        table: u128,
        key: &PartitionKey,
        now_seconds: i32,
    ) -> Result<PaxosState, StorageError> {
        let user = self.engine.comparator(table)?;
        let row_key = self.clustering(table)?;
        let slice = Slice::prefix(vec![table_id(table)], &self.comparator()?);
        let found = self
            .engine
            .read_live(self.table, key, &[slice], false, now_seconds, 1)?;
        let Some((partition, _, _)) = found else {
            return Ok(PaxosState::default());
        };
        let Some(row) = partition.rows.get(&row_key) else {
            return Ok(PaxosState::default());
        };
        let state = PaxosState {
            promised: ballot(&row.cells, columns::IN_PROGRESS_BALLOT),
            accepted: proposal(
                &row.cells,
                [
                    columns::PROPOSAL_BALLOT,
                    columns::PROPOSAL,
                    columns::PROPOSAL_VERSION,
                ],
                &user,
            )?,
            committed: proposal(
                &row.cells,
                [
                    columns::MOST_RECENT_COMMIT_AT,
                    columns::MOST_RECENT_COMMIT,
                    columns::MOST_RECENT_COMMIT_VERSION,
                ],
                &user,
            )?,
        };
        let ttl_micros = i64::from(self.ttl(table)?) * 1_000_000;
        let horizon = i64::from(now_seconds) * 1_000_000 - ttl_micros;
        Ok(state.without_older_than(horizon))
    }

    /// Saves `state` for `key` in `table`, durably, before returning.
    pub fn save(
        &self,
        table: u128,
        key: &PartitionKey,
        state: &PaxosState,
        now_seconds: i32,
    ) -> Result<(), StorageError> {
        let ttl = self.ttl(table)?;
        let mut cells = CellMap::new();
        let put = |cells: &mut CellMap, column: u32, at: &Ballot, value: Bytes| {
            cells.insert(
                (column, None),
                Cell::expiring(at.micros(), ttl, now_seconds, value),
            );
        };
        if let Some(promised) = &state.promised {
            put(
                &mut cells,
                columns::IN_PROGRESS_BALLOT,
                promised,
                ballot_bytes(promised),
            );
        }
        let version = Bytes::copy_from_slice(&i32::from(PARTITION_ENCODING_VERSION).to_be_bytes());
        for (p, [at, update, v]) in [
            (
                &state.accepted,
                [
                    columns::PROPOSAL_BALLOT,
                    columns::PROPOSAL,
                    columns::PROPOSAL_VERSION,
                ],
            ),
            (
                &state.committed,
                [
                    columns::MOST_RECENT_COMMIT_AT,
                    columns::MOST_RECENT_COMMIT,
                    columns::MOST_RECENT_COMMIT_VERSION,
                ],
            ),
        ] {
            match p {
                Some(p) => {
                    put(&mut cells, at, &p.ballot, ballot_bytes(&p.ballot));
                    put(&mut cells, update, &p.ballot, encoded(&p.update));
                    put(&mut cells, v, &p.ballot, version.clone());
                }
                None => {
                    // A proposal settled by a commit: gone, as of that commit.
                    if let (Some(c), true) = (&state.committed, at == columns::PROPOSAL_BALLOT) {
                        for column in [at, update, v] {
                            cells.insert(
                                (column, None),
                                Cell::tombstone(c.ballot.micros(), now_seconds),
                            );
                        }
                    }
                }
            }
        }
        let mut update = Partition::default();
        update.rows.insert(
            self.clustering(table)?,
            Row {
                cells,
                ..Row::default()
            },
        );
        self.engine.apply_synced(self.table, key, update)
    }
}

fn table_id(table: u128) -> Bytes {
    Bytes::copy_from_slice(&table.to_be_bytes())
}

fn ballot_bytes(b: &Ballot) -> Bytes {
    Bytes::copy_from_slice(&b.0)
}

fn encoded(update: &Partition) -> Bytes {
    let mut out = Vec::new();
    encode_partition(&mut out, update);
    Bytes::from(out)
}

fn ballot(cells: &CellMap, column: u32) -> Option<Ballot> {
    let value = &cells.get(&(column, None))?.value;
    let bytes: [u8; 16] = value.as_ref().try_into().ok()?;
    Some(Ballot(bytes))
}

/// A proposal from its (ballot, update, version) cells; none when any is
/// missing. An update that does not decode is an error (a damaged file).
fn proposal(
    cells: &CellMap,
    [at, update, version]: [u32; 3],
    cmp: &Arc<ClusteringComparator>,
) -> Result<Option<Proposal>, StorageError> {
    let (Some(ballot), Some(bytes), Some(v)) = (
        ballot(cells, at),
        cells.get(&(update, None)),
        cells.get(&(version, None)),
    ) else {
        return Ok(None);
    };
    let version = match <[u8; 4]>::try_from(v.value.as_ref()) {
        Ok(b) => i32::from_be_bytes(b),
        Err(_) => return Err(corrupt("a proposal's version is not an int")),
    };
    let version = u8::try_from(version)
        .ok()
        .filter(|v| READABLE_PARTITION_ENCODINGS.contains(v))
        .ok_or_else(|| corrupt("a proposal's encoding is not one this node reads"))?;
    let mut reader = PartitionReader::shared(&bytes.value);
    let update = decode_partition_v(&mut reader, cmp, version)
        .map_err(|e| corrupt(&format!("a proposal does not decode: {e}")))?;
    Ok(Some(Proposal { ballot, update }))
}

fn corrupt(what: &str) -> StorageError {
    StorageError::corruption("system.paxos", 0, what)
}
