//! The sizes that choose how partitions are laid out and read: which
//! entries are read whole or through their index, which are compacted
//! window by window, and the block sizes of the row index and the point
//! index that sstables are written with. Production keeps the defaults;
//! tests lower them to reach each path with little data.

use super::Engine;
use crate::sstable::point_index::PointIndexParams;

impl Engine {
    /// Reads of partitions longer than `whole_max` go through their row
    /// index; compactions merge partitions of at least `large` bytes window
    /// by window; sstables written from now on index `block` bytes of
    /// items per row index block. For sstables open now and opened later.
    /// The defaults suit production; tests lower them to reach those paths
    /// with little data.
    pub fn set_large_partition_bytes(&self, whole_max: u64, large: u64, block: u64) {
        *self.large_partition_bytes.lock() = (whole_max, large, block);
        for t in self.tables.read().values() {
            for s in &t.state.read().sstables {
                s.set_whole_entry_max_bytes(whole_max);
                s.set_large_entry_bytes(large);
            }
        }
    }

    /// The row index block size of sstables written now.
    pub(crate) fn row_index_block_bytes(&self) -> u64 {
        self.large_partition_bytes.lock().2
    }

    /// Sstables written from now on give entries up to `entry_max` bytes a
    /// point index of `block` bytes per block (0: none; see
    /// [`crate::sstable::point_index`]). The defaults suit production;
    /// tests change them to reach either index with little data.
    pub fn set_point_index(&self, block: u64, entry_max: u64) {
        *self.point_index.lock() = PointIndexParams {
            block_bytes: block,
            entry_max_bytes: entry_max,
        };
    }

    /// The point index of sstables written now.
    pub(crate) fn point_index(&self) -> PointIndexParams {
        *self.point_index.lock()
    }
}
