//! The engines of a movement run (`sim/movement.rs`): each keeps sstables
//! on a simulated file system of its own (`varve_storage::fs_sim`, in
//! memory, where every file operation is done at once, so runs of one
//! seed stay the same), so that the movement streams whole sstables where one
//! lies inside a range it fetches (docs/design/topology.md, section 4).
//!
//! Sstables come from the sources' listings (which flush first), and, in
//! a run whose throughput leaves room for the files' bytes, from a few
//! flushes on each node but the joiner of a memtable that holds a single
//! partition: an sstable of one token, which lies inside a range.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use varve_storage::commitlog::CommitLogConfig;
use varve_storage::fs_sim::SimFs;
use varve_storage::{Clock as StorageClock, Storage, StorageOptions, TableDescriptor};

use super::data::{NodeData, NOW_SECONDS, TABLE};
use super::movement::{Movement, POLL};
use super::movement_event::MovementEvent;
use crate::coordinator::Coordinator;

/// The least throughput (bytes a second) of a run whose nodes flush
/// sstables of one partition: a whole sstable of one key is some 600
/// bytes, against some 50 in a page; under this, the files would keep
/// the join past its slack.
const NARROW_FLUSH_MIN_THROUGHPUT: u64 = 150;

/// How many sstables of one partition each node but the joiner flushes
/// (in a run that flushes them), and the least time between two.
const NARROW_FLUSHES: usize = 3;
const NARROW_FLUSH_GAP: Duration = Duration::from_secs(2);

/// A durable engine with `table` on a simulated file system of its own.
/// The table's writes skip the commitlog: the engine outlives every
/// restart of its node, so nothing needs replaying.
pub fn storage_on_sim_fs(table: TableDescriptor) -> Storage {
    let options = StorageOptions {
        data_dir: "/data".into(),
        commitlog_dir: "/commitlog".into(),
        commitlog: CommitLogConfig::default(),
        memtable_space_bytes: 1 << 30,
        commitlog_total_space_bytes: 1 << 30,
        compaction_throughput_mib_per_sec: 0,
        concurrent_compactors: 1,
        sstable_writes: Default::default(),
        fs: Arc::new(SimFs::new()),
        clock: StorageClock::from_fn(|| NOW_SECONDS),
    };
    let table = TableDescriptor {
        durable_writes: false,
        ..table
    };
    match Storage::open(options, vec![table]) {
        Ok(storage) => storage,
        Err(e) => panic!("a simulated engine on its file system: {e}"),
    }
}

/// Whether the nodes of a run flush sstables of one partition, and how
/// many each did.
pub struct NarrowFlushes {
    on: bool,
    done: RefCell<Vec<usize>>,
}

impl NarrowFlushes {
    /// For a run of `nodes` whose joiner takes `throughput` bytes a
    /// second (0: no limit).
    pub fn new(throughput: u64, nodes: usize) -> NarrowFlushes {
        NarrowFlushes {
            on: throughput == 0 || throughput >= NARROW_FLUSH_MIN_THROUGHPUT,
            done: RefCell::new(vec![0; nodes]),
        }
    }

    pub fn on(&self) -> bool {
        self.on
    }
}

/// [`NARROW_FLUSHES`] times in the run: flushes this node's memtable,
/// then flushes it again once it holds a single partition.
pub(super) async fn narrow_flush(
    m: Rc<Movement>,
    data: Rc<NodeData>,
    coordinator: Arc<Coordinator>,
) {
    let (_, engine, clock) = coordinator.parts();
    let flush = || {
        if let Err(e) = engine.flush(TABLE) {
            panic!("flushing a simulated engine: {e}");
        }
    };
    while m.narrow.done.borrow()[data.index] < NARROW_FLUSHES {
        clock.sleep(NARROW_FLUSH_GAP).await;
        flush();
        loop {
            clock.sleep(POLL).await;
            match engine.table_stats(TABLE).map(|s| s.memtable_partitions) {
                Ok(1) => break,
                Ok(0) => {}
                _ => flush(),
            }
        }
        flush();
        m.narrow.done.borrow_mut()[data.index] += 1;
        m.record(MovementEvent::NarrowFlush { node: data.index });
    }
}
