//! What the compaction executor asks of a table's state besides the merge
//! itself: the strategy's view of the live sstables, whether an sstable
//! may hold a key, and which members of a `DropExpired` task really purge
//! to nothing.

use crate::compaction::SstableView;
use crate::engine::{PartitionKey, TableStore};
use crate::error::Result;
use crate::sstable::Sstable;

use super::generation_of;

/// Whether `s` may hold `key`: inside its key range, and its bloom filter
/// says maybe. Found by the garbagecollect model test: with the bloom filter
/// alone, a false positive made the purge rule keep what the policy (which
/// looks at token ranges) had declared fully expired, and the same
/// `DropExpired` task was chosen again and again.
pub(super) fn may_hold(s: &Sstable, key: &PartitionKey) -> bool {
    let st = s.stats();
    let inside = st.first_key.as_ref().is_none_or(|f| f <= key)
        && st.last_key.as_ref().is_none_or(|l| key <= l);
    inside && s.may_contain(key)
}

/// The members of a `DropExpired` task the purge rule will really rewrite to
/// nothing: those whose max timestamp is below the min timestamp of every
/// overlapping sstable outside the task (expired or not) and of the
/// memtables, which the policy cannot see. Found by the garbagecollect
/// model test: an expired sstable overlapping another expired one that the
/// policy kept (it shadowed a third) was rewritten unchanged, forever.
pub(super) fn purgeable_whole(
    table: &TableStore,
    views: &[SstableView],
    mut inputs: Vec<u64>,
) -> Vec<u64> {
    let memtable_min = memtable_min_timestamp(table);
    loop {
        let before = inputs.len();
        let snapshot = inputs.clone();
        inputs.retain(|id| {
            let Some(c) = views.iter().find(|v| v.id == *id) else {
                return false;
            };
            let others_min = views
                .iter()
                .filter(|o| !snapshot.contains(&o.id) && o.overlaps(c))
                .map(|o| o.min_timestamp)
                .fold(memtable_min, i64::min);
            c.max_timestamp < others_min
        });
        if inputs.len() == before {
            return inputs;
        }
    }
}

/// The smallest timestamp any memtable of the table holds (`i64::MAX` when
/// they are empty).
fn memtable_min_timestamp(table: &TableStore) -> i64 {
    let memtables = {
        let state = table.state.read();
        let mut m = vec![state.memtable.clone()];
        m.extend(state.flushing.iter().cloned());
        m
    };
    let mut min = i64::MAX;
    for m in memtables {
        let _ = m.try_for_each(|_, p| -> Result<()> {
            min = min.min(p.min_timestamp());
            Ok(())
        });
    }
    min
}

/// Views of the table's live sstables, `compacting` marking the claimed ones.
pub(super) fn views_of(
    table: &TableStore,
    now_seconds: i32,
    compacting: &std::collections::BTreeSet<u64>,
) -> Vec<SstableView> {
    let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
    let state = table.state.read();
    state
        .sstables
        .iter()
        .filter_map(|s| {
            let g = generation_of(s)?;
            let st = s.stats();
            let values = (st.cell_count + st.tombstone_count).max(1) as f64;
            Some(SstableView {
                id: g,
                size_bytes: s.size_on_disk(),
                level: state.manifest.levels.get(&g).copied().unwrap_or(0),
                min_timestamp: st.min_timestamp,
                max_timestamp: st.max_timestamp,
                max_local_deletion_time: st.max_local_deletion_time,
                first_token: st.first_key.as_ref().map_or(i64::MIN, |k| k.token),
                last_token: st.last_key.as_ref().map_or(i64::MAX, |k| k.token),
                created_at_seconds: s.created_at_seconds().unwrap_or(i64::from(now_seconds)),
                droppable_tombstone_ratio: st.droppable_tombstones(gc_before) / values,
                reads_per_key: 0.0,
                compacting: compacting.contains(&g),
            })
        })
        .collect()
}
