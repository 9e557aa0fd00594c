//! Where a replica keeps its Paxos state: the node-local table
//! `system.paxos` (Cassandra's layout: partition `row_key`, the user
//! partition's key; clustering `cf_id`, the table's id), one row per
//! partition with LWT traffic, written through the engine with an fsync
//! before the replica answers, every cell expiring after the table's
//! `gc_grace_seconds` (at least [`MIN_STATE_TTL_SECONDS`]). State older than
//! that horizon is ignored when read (docs/design/paxos.md, section 4).
//!
//! Each save writes the parts of the state that changed since it was
//! loaded (the promise, the accepted proposal, the latest commit: each
//! known by its ballot), as Cassandra writes each on its own, so an entry
//! carries at most one update and a conditional update fits wherever a
//! plain write of it does. It writes them with one timestamp, one more
//! than the newest timestamp the row holds (tombstones and expired cells
//! included): the row's own version counter. Not the ballots' micros: two ballots of
//! one micro (two coordinators in the same microsecond) would give cells of
//! equal timestamps, and storage would then keep either value, so a replica
//! could forget a promise (found by the simulation, seed 0).

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

/// An update whose estimated size is under the commitlog's mutation
/// limit divided by this fits without an exact check
/// ([`PaxosStore::check_fits`]).
pub const SURELY_FITS_FRACTION: u64 = 4;

/// A partition's state as loaded, and what its row held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    pub state: PaxosState,
    pub written: Written,
}

/// What a loaded row held, for the save that follows: the newest
/// timestamp (the save writes above it) and the ballot of each part of
/// the state as loaded (the save writes only the parts whose ballot
/// changed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    pub version: i64,
    pub promised: Option<Ballot>,
    pub accepted: Option<Ballot>,
    pub committed: Option<Ballot>,
}

impl Written {
    fn of(state: &PaxosState, version: i64) -> Written {
        Written {
            version,
            promised: state.promised,
            accepted: state.accepted.as_ref().map(|p| p.ballot),
            committed: state.committed.as_ref().map(|p| p.ballot),
        }
    }
}

/// The Paxos state of every partition of this node.
pub struct PaxosStore {
    engine: Arc<Engine>,
    /// `system.paxos`'s id.
    table: u128,
    /// This node's clock, in seconds: the state's expiry and horizon are
    /// the acceptor's own, never a coordinator's.
    clock: Arc<dyn Fn() -> i32 + Send + Sync>,
}

impl PaxosStore {
    /// The store over `engine`, on the engine's clock.
    pub fn new(engine: Arc<Engine>, table: u128) -> PaxosStore {
        let on = Arc::clone(&engine);
        PaxosStore::with_clock(engine, table, Arc::new(move || on.now_seconds()))
    }

    /// The store over `engine` on `clock` (a simulation's time).
    pub fn with_clock(
        engine: Arc<Engine>,
        table: u128,
        clock: Arc<dyn Fn() -> i32 + Send + Sync>,
    ) -> PaxosStore {
        PaxosStore {
            engine,
            table,
            clock,
        }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// `system.paxos`' id.
    pub fn table(&self) -> u128 {
        self.table
    }

    /// Now, in seconds, on this node's clock.
    pub fn now_seconds(&self) -> i32 {
        (self.clock)()
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
    /// older than the table's horizon, and the row's version.
    pub fn load(
        &self,
        table: u128,
        key: &PartitionKey,
        now_seconds: i32,
    ) -> Result<Loaded, StorageError> {
        let user = self.engine.comparator(table)?;
        let row_key = self.clustering(table)?;
        let slice = Slice::prefix(vec![table_id(table)], &self.comparator()?);
        let mut cost = varve_storage::ReadCost::default();
        let found = self
            .engine
            .read_partition_costed(self.table, key, &[slice], &mut cost)?;
        let Some(raw) = found else {
            return Ok(Loaded::default());
        };
        let version = raw
            .rows
            .get(&row_key)
            .and_then(|row| row.cells.values().map(|c| c.timestamp).max())
            .unwrap_or(0);
        let (partition, _) = raw.resolve(now_seconds);
        let Some(row) = partition.rows.get(&row_key) else {
            return Ok(Loaded {
                state: PaxosState::default(),
                written: Written::of(&PaxosState::default(), version),
            });
        };
        let state = decode_state(&row.cells, &user)?;
        let ttl_micros = i64::from(self.ttl(table)?) * 1_000_000;
        let horizon = i64::from(now_seconds) * 1_000_000 - ttl_micros;
        let state = state.without_older_than(horizon);
        Ok(Loaded {
            written: Written::of(&state, version),
            state,
        })
    }

    /// The states another replica's `system.paxos` partition of `key`
    /// holds (streamed here), by user table; tables this node does not
    /// know are left out.
    pub fn decode_streamed(
        &self,
        streamed: &Partition,
        now_seconds: i32,
    ) -> Result<Vec<(u128, PaxosState)>, StorageError> {
        let (resolved, _) = streamed.clone().resolve(now_seconds);
        let mut out = Vec::new();
        for (clustering, row) in &resolved.rows {
            let Some(table) = clustering
                .values
                .first()
                .and_then(|v| <[u8; 16]>::try_from(v.as_ref()).ok())
                .map(u128::from_be_bytes)
            else {
                continue;
            };
            let Ok(user) = self.engine.comparator(table) else {
                continue;
            };
            out.push((table, decode_state(&row.cells, &user)?));
        }
        Ok(out)
    }

    /// What a repair compares of a `system.paxos` partition
    /// (docs/design/topology.md, section 6), appended to `out`: per user
    /// table, the newest commit and a proposal accepted after it, each as
    /// its ballot and update. Promises are left out (a promise is no data,
    /// and replicas differ in them by design), so are the cells' own
    /// timestamps and expiry, which each replica writes for itself: two
    /// replicas that hold the same proposals give the same bytes.
    pub fn repair_digest(
        &self,
        partition: &Partition,
        now_seconds: i32,
        out: &mut Vec<u8>,
    ) -> Result<(), StorageError> {
        for (table, state) in self.decode_streamed(partition, now_seconds)? {
            out.extend_from_slice(&table.to_be_bytes());
            let committed = state.committed.as_ref();
            let open = state
                .accepted
                .as_ref()
                .filter(|a| committed.is_none_or(|c| a.ballot > c.ballot));
            for (tag, p) in [(b'c', committed), (b'a', open)] {
                if let Some(p) = p {
                    out.push(tag);
                    out.extend_from_slice(&p.ballot.0);
                    encode_partition(out, &p.update);
                }
            }
        }
        Ok(())
    }

    /// Whether every write a round of `proposal` makes here would pass
    /// the commitlog's size limit: the update into `table`, and the
    /// state's largest entry (the commit: its three columns, the
    /// proposal's tombstones, and a promise). The limit's error when not;
    /// writes nothing.
    pub fn check_fits(
        &self,
        table: u128,
        key: &PartitionKey,
        ballot: Ballot,
        update: &Partition,
        now_seconds: i32,
    ) -> Result<(), StorageError> {
        if self.surely_fits(update) {
            return Ok(());
        }
        self.engine.check_mutation_size(table, key, update)?;
        let proposal = Proposal {
            ballot,
            update: update.clone(),
        };
        let mut state = PaxosState {
            promised: Some(proposal.ballot),
            accepted: Some(proposal.clone()),
            committed: None,
        };
        state.commit(proposal.clone());
        let written = Written {
            accepted: Some(proposal.ballot),
            ..Written::default()
        };
        let cells = self.cells(table, &state, written, now_seconds)?;
        self.engine
            .check_mutation_size(self.table, key, &self.row(table, cells)?)
    }

    /// Whether an update is so far below the commitlog's limit that its
    /// entries need not be encoded to know they fit: no range tombstones
    /// (whose bounds the memtable's estimate does not count) and an
    /// estimate under a quarter of the limit. An encoded cell is smaller
    /// than the estimate counts for it (its value and its struct), and
    /// the state's entry adds the ballots and a few columns, so such an
    /// update's entries are far inside the limit; the exact check (two
    /// encodings of the update) is left to the updates that may not fit.
    fn surely_fits(&self, update: &Partition) -> bool {
        let Some(max) = self.engine.max_mutation_bytes() else {
            return true;
        };
        update.range_tombstones.is_empty()
            && (varve_storage::memtable::estimate_bytes(update) as u64) < max / SURELY_FITS_FRACTION
    }

    /// Writes the parts of `state` for `key` in `table` that differ from
    /// what the row held when loaded (`written`). Not yet durable: the
    /// caller makes it so before it answers
    /// ([`varve_storage::Engine::sync_later`], or `sync`).
    pub fn save(
        &self,
        table: u128,
        key: &PartitionKey,
        state: &PaxosState,
        written: Written,
        now_seconds: i32,
    ) -> Result<(), StorageError> {
        let cells = self.cells(table, state, written, now_seconds)?;
        if cells.is_empty() {
            return Ok(());
        }
        self.engine.apply(self.table, key, self.row(table, cells)?)
    }

    /// The row of `table`'s state holding `cells`.
    fn row(&self, table: u128, cells: CellMap) -> Result<Partition, StorageError> {
        let mut update = Partition::default();
        update.rows.insert(
            self.clustering(table)?,
            Row {
                cells,
                ..Row::default()
            },
        );
        Ok(update)
    }

    /// The cells a save of `state` over `written` writes.
    fn cells(
        &self,
        table: u128,
        state: &PaxosState,
        written: Written,
        now_seconds: i32,
    ) -> Result<CellMap, StorageError> {
        let ttl = self.ttl(table)?;
        let timestamp = written.version.saturating_add(1);
        let mut cells = CellMap::new();
        let put = |cells: &mut CellMap, column: u32, _at: &Ballot, value: Bytes| {
            cells.insert(
                (column, None),
                Cell::expiring(timestamp, ttl, now_seconds, value),
            );
        };
        let now = Written::of(state, written.version);
        if let (Some(promised), true) = (&state.promised, now.promised != written.promised) {
            put(
                &mut cells,
                columns::IN_PROGRESS_BALLOT,
                promised,
                ballot_bytes(promised),
            );
        }
        let version = Bytes::copy_from_slice(&i32::from(PARTITION_ENCODING_VERSION).to_be_bytes());
        for (p, changed, [at, update, v]) in [
            (
                &state.accepted,
                now.accepted != written.accepted,
                [
                    columns::PROPOSAL_BALLOT,
                    columns::PROPOSAL,
                    columns::PROPOSAL_VERSION,
                ],
            ),
            (
                &state.committed,
                now.committed != written.committed,
                [
                    columns::MOST_RECENT_COMMIT_AT,
                    columns::MOST_RECENT_COMMIT,
                    columns::MOST_RECENT_COMMIT_VERSION,
                ],
            ),
        ] {
            if !changed {
                continue;
            }
            match p {
                Some(p) => {
                    put(&mut cells, at, &p.ballot, ballot_bytes(&p.ballot));
                    put(&mut cells, update, &p.ballot, encoded(&p.update));
                    put(&mut cells, v, &p.ballot, version.clone());
                }
                None => {
                    // A proposal settled by a commit: gone.
                    for column in [at, update, v] {
                        cells.insert((column, None), Cell::tombstone(timestamp, now_seconds));
                    }
                }
            }
        }
        Ok(cells)
    }
}

/// The state a row's cells hold, updates decoded with the user table's
/// comparator.
fn decode_state(
    cells: &CellMap,
    user: &Arc<ClusteringComparator>,
) -> Result<PaxosState, StorageError> {
    Ok(PaxosState {
        promised: ballot(cells, columns::IN_PROGRESS_BALLOT),
        accepted: proposal(
            cells,
            [
                columns::PROPOSAL_BALLOT,
                columns::PROPOSAL,
                columns::PROPOSAL_VERSION,
            ],
            user,
        )?,
        committed: proposal(
            cells,
            [
                columns::MOST_RECENT_COMMIT_AT,
                columns::MOST_RECENT_COMMIT,
                columns::MOST_RECENT_COMMIT_VERSION,
            ],
            user,
        )?,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use varve_storage::{Storage, TableDescriptor};
    use varve_types::CqlType;

    const USER: u128 = 7;
    const PAXOS: u128 = 9;
    const NOW: i32 = 1_700_000_000;

    fn descriptor(id: u128, clustering: CqlType) -> TableDescriptor {
        TableDescriptor {
            id,
            keyspace: "ks".into(),
            name: format!("t{id}"),
            comparator: ClusteringComparator::new(vec![(clustering, false)]),
            params: varve_storage::sstable::SstableParams::default(),
            durable_writes: true,
            gc_grace_seconds: 864_000,
            compaction: Default::default(),
        }
    }

    fn store() -> (Storage, PaxosStore) {
        let storage = Storage::new();
        let engine = storage.engine();
        engine
            .create_table(descriptor(USER, CqlType::Int))
            .expect("user table");
        engine
            .create_table(descriptor(PAXOS, CqlType::Uuid))
            .expect("paxos table");
        let store = PaxosStore::with_clock(engine, PAXOS, Arc::new(|| NOW));
        (storage, store)
    }

    fn update(value: u8) -> Partition {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        let mut p = Partition::default();
        let mut row = Row::default();
        row.cells
            .insert((1, None), Cell::live(1, Bytes::from(vec![value; 4])));
        p.rows.insert(
            ClusteringKey::row(vec![Bytes::from_static(&[0, 0, 0, 1])], &cmp),
            row,
        );
        p
    }

    /// Two proposals of one micro: the second accepted is the one loaded,
    /// whole (with ballot-micros timestamps the cells tied and storage kept
    /// the larger bytes of each column, mixing the two).
    #[test]
    fn the_last_state_saved_is_loaded_whole_even_at_one_micro() {
        let (_storage, store) = store();
        let key = PartitionKey::new(Bytes::from_static(b"k"));
        let micros = i64::from(NOW) * 1_000_000;
        let first = Proposal {
            ballot: Ballot::new(micros, 0x8000_0000_0000_0001),
            update: update(9),
        };
        let second = Proposal {
            ballot: Ballot::new(micros, 0x8000_0000_0000_0002),
            update: update(1),
        };
        assert!(second.ballot > first.ballot);
        for p in [&first, &second] {
            let loaded = store.load(USER, &key, NOW).expect("load");
            let mut state = loaded.state;
            state.propose(p.clone()).expect("accepted");
            store
                .save(USER, &key, &state, loaded.written, NOW)
                .expect("saved");
        }
        let loaded = store.load(USER, &key, NOW).expect("load");
        assert_eq!(loaded.state.accepted, Some(second.clone()));
        assert_eq!(loaded.state.promised, Some(second.ballot));
        // A commit clears the proposal it covers.
        let mut state = loaded.state;
        assert!(state.commit(second.clone()));
        store
            .save(USER, &key, &state, loaded.written, NOW)
            .expect("saved");
        let loaded = store.load(USER, &key, NOW).expect("load");
        assert_eq!(loaded.state.accepted, None);
        assert_eq!(loaded.state.committed, Some(second));
    }

    /// A save writes only the parts whose ballot changed since the load:
    /// a commit leaves the promise as it was written and clears the
    /// proposal; a later promise leaves the commit. So no entry carries
    /// two updates.
    #[test]
    fn a_save_writes_only_the_parts_that_changed() {
        let (_storage, store) = store();
        let key = PartitionKey::new(Bytes::from_static(b"k"));
        let micros = i64::from(NOW) * 1_000_000;
        let ballot = |n: i64| Ballot::new(micros + n, 0x8000_0000_0000_0001);
        let step = |f: &dyn Fn(&mut PaxosState)| {
            let loaded = store.load(USER, &key, NOW).expect("load");
            let mut state = loaded.state;
            f(&mut state);
            store
                .save(USER, &key, &state, loaded.written, NOW)
                .expect("saved");
        };
        let timestamps = || -> Vec<(u32, i64, bool)> {
            let all = Slice::all(&store.comparator().expect("cmp"));
            let raw = store
                .engine()
                .read_partition(PAXOS, &key, &[all])
                .expect("read")
                .expect("state");
            let row = raw.rows.values().next().expect("the row");
            row.cells
                .iter()
                .map(|((column, _), cell)| (*column, cell.timestamp, cell.is_tombstone()))
                .collect()
        };
        let proposal = Proposal {
            ballot: ballot(1),
            update: update(5),
        };
        step(&|s| {
            s.prepare(ballot(1));
        });
        step(&|s| s.propose(proposal.clone()).expect("accepted"));
        step(&|s| assert!(s.commit(proposal.clone())));
        let after_commit = timestamps();
        let at = |cells: &[(u32, i64, bool)], column: u32| {
            cells
                .iter()
                .find(|c| c.0 == column)
                .map(|c| (c.1, c.2))
                .expect("the column")
        };
        assert_eq!(at(&after_commit, columns::IN_PROGRESS_BALLOT), (1, false));
        assert_eq!(at(&after_commit, columns::PROPOSAL), (3, true));
        assert_eq!(at(&after_commit, columns::MOST_RECENT_COMMIT), (3, false));
        step(&|s| {
            s.prepare(ballot(2));
        });
        let after_promise = timestamps();
        assert_eq!(at(&after_promise, columns::IN_PROGRESS_BALLOT), (4, false));
        assert_eq!(at(&after_promise, columns::MOST_RECENT_COMMIT), (3, false));
        let loaded = store.load(USER, &key, NOW).expect("load");
        assert_eq!(loaded.state.promised, Some(ballot(2)));
        assert_eq!(loaded.state.accepted, None);
        assert_eq!(loaded.state.committed, Some(proposal));
    }

    /// Another replica's state streamed here merges by ballot, though its
    /// cells carry higher timestamps (each replica counts its own): the
    /// promise made here survives, the proposal accepted there arrives.
    #[test]
    fn streamed_state_merges_by_ballot_not_by_cell_timestamp() {
        let (_here_storage, here) = store();
        let (_there_storage, there) = store();
        let key = PartitionKey::new(Bytes::from_static(b"k"));
        let micros = i64::from(NOW) * 1_000_000;
        let low = Ballot::new(micros, 0x8000_0000_0000_0001);
        let high = Ballot::new(micros + 5, 0x8000_0000_0000_0001);
        let mut promised = PaxosState::default();
        promised.prepare(high);
        here.save(USER, &key, &promised, Written::default(), NOW)
            .expect("saved");
        // There: many saves (high cell timestamps), a lower ballot accepted.
        let accepted = Proposal {
            ballot: low,
            update: update(3),
        };
        let mut state = PaxosState::default();
        for n in (1..=5).rev() {
            state.prepare(Ballot::new(micros - n, 0x8000_0000_0000_0001));
            let loaded = there.load(USER, &key, NOW).expect("load");
            there
                .save(USER, &key, &state, loaded.written, NOW)
                .expect("saved");
        }
        state.prepare(low);
        state.propose(accepted.clone()).expect("accepted");
        let loaded = there.load(USER, &key, NOW).expect("load");
        there
            .save(USER, &key, &state, loaded.written, NOW)
            .expect("saved");
        let all = Slice::all(&there.comparator().expect("cmp"));
        let streamed = there
            .engine()
            .read_partition(PAXOS, &key, &[all])
            .expect("read")
            .expect("state there");
        let replica = crate::paxos::PaxosReplica::new_inline(here);
        replica.merge_streamed(&key, &streamed).expect("merged");
        let merged = replica
            .store_for_tests()
            .load(USER, &key, NOW)
            .expect("load");
        assert_eq!(
            merged.state.promised,
            Some(high),
            "the promise made here holds"
        );
        assert_eq!(merged.state.accepted, Some(accepted));
    }

    /// What a repair compares: the same commit gives the same digest on
    /// two replicas whatever their cell timestamps and promises; a
    /// proposal accepted past the commit, or another commit, differs.
    #[test]
    fn the_repair_digest_compares_proposals_not_promises_or_cell_timestamps() {
        let (_here_storage, here) = store();
        let (_there_storage, there) = store();
        let key = PartitionKey::new(Bytes::from_static(b"k"));
        let micros = i64::from(NOW) * 1_000_000;
        let ballot = |n: i64| Ballot::new(micros + n, 0x8000_0000_0000_0001);
        let proposal = |n: i64, v: u8| Proposal {
            ballot: ballot(n),
            update: update(v),
        };
        let digest = |store: &PaxosStore| {
            let all = Slice::all(&store.comparator().expect("cmp"));
            let p = store
                .engine()
                .read_partition(PAXOS, &key, &[all])
                .expect("read")
                .expect("state");
            let mut out = Vec::new();
            store.repair_digest(&p, NOW, &mut out).expect("digest");
            out
        };
        let save = |store: &PaxosStore, state: &PaxosState| {
            let loaded = store.load(USER, &key, NOW).expect("load");
            store
                .save(USER, &key, state, loaded.written, NOW)
                .expect("saved");
        };
        let mut committed = PaxosState::default();
        assert!(committed.commit(proposal(1, 1)));
        save(&here, &committed);
        let mut promised_more = committed.clone();
        for n in 5..=9 {
            promised_more.prepare(ballot(n));
            save(&there, &promised_more);
        }
        assert_eq!(digest(&here), digest(&there));
        let mut open = promised_more.clone();
        open.propose(proposal(9, 2)).expect("accepted");
        save(&there, &open);
        assert_ne!(
            digest(&here),
            digest(&there),
            "an open proposal is compared"
        );
        let mut later = PaxosState::default();
        assert!(later.commit(proposal(2, 3)));
        save(&there, &later);
        assert_ne!(digest(&here), digest(&there), "another commit is compared");
    }

    #[test]
    fn state_past_the_tables_grace_is_ignored() {
        let (_storage, store) = store();
        let key = PartitionKey::new(Bytes::from_static(b"k"));
        let old = Ballot::new(i64::from(NOW - 900_000) * 1_000_000, 0x8000_0000_0000_0001);
        let mut state = PaxosState::default();
        state.prepare(old);
        store
            .save(USER, &key, &state, Written::default(), NOW)
            .expect("saved");
        assert_eq!(
            store.load(USER, &key, NOW).expect("load").state,
            PaxosState::default()
        );
    }
}
