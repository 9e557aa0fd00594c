//! Partition encoding version 3 (docs/format/partition-encoding.md,
//! "Version 3"): a partition as a stream of items, so that it can be
//! written as it comes and read from the middle.
//!
//! After the header (flags, the bases of version 2, the partition deletion
//! and the static row) come items in clustering order, each a kind byte and
//! its body: a row (clustering, then a version 2 row body), or a range
//! tombstone *marker*: a bound and the deletion that covers every row from
//! that bound on (`LIVE`: none), until the next marker. Then an end byte.
//! Rows and cells are version 2's; only the frame around them is new.
//!
//! Range tombstones are written as markers, as Cassandra writes them, so a
//! reader starting at any item needs only the deletion open there (the row
//! index records it per block) and a writer never holds the whole
//! partition. A partition's range tombstones may overlap; the markers say,
//! between each two bounds, the strongest deletion covering them, which is
//! what reads and compaction act on.

use super::v2::read::{read_deletion, read_header, read_row};
use super::v2::write::{put_deletion, put_header, put_row, BaseFinder};
use super::v2::{Bases, PARTITION_HAS_DELETION, PARTITION_HAS_LDT_BASE, PARTITION_HAS_STATIC};
use super::{put_bound, put_values, DecodeError, Reader};
use crate::cell::DeletionTime;
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Header flag: a row index follows the items (see `sstable::row_index`).
pub const PARTITION_HAS_ROW_INDEX: u8 = 0x08;
const HEADER_FLAGS: u8 = PARTITION_HAS_DELETION
    | PARTITION_HAS_STATIC
    | PARTITION_HAS_LDT_BASE
    | PARTITION_HAS_ROW_INDEX;

/// Item kinds.
pub const ITEM_END: u8 = 0x00;
pub const ITEM_ROW: u8 = 0x01;
pub const ITEM_MARKER: u8 = 0x02;

/// What comes before a partition's items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub bases: Bases,
    pub deletion: DeletionTime,
    pub static_row: Option<Row>,
    /// Whether a row index follows the items.
    pub row_index: bool,
}

impl Header {
    /// The header of `p`, with bases that cover everything in it.
    pub fn of(p: &Partition, row_index: bool) -> Header {
        Header {
            bases: bases_of(p),
            deletion: p.deletion,
            static_row: p.static_row.clone(),
            row_index,
        }
    }
}

/// Bases below every timestamp and deletion time of `p`.
pub fn bases_of(p: &Partition) -> Bases {
    let mut finder = BaseFinder::default();
    if p.deletion != DeletionTime::LIVE {
        finder.deletion(&p.deletion);
    }
    if let Some(s) = &p.static_row {
        finder.row(s);
    }
    for row in p.rows.values() {
        finder.row(row);
    }
    for rt in &p.range_tombstones {
        finder.deletion(&rt.deletion);
    }
    finder.bases()
}

/// Bases below every value of any of `parts` (a compaction's inputs): the
/// smallest of their own.
pub fn min_bases(parts: impl IntoIterator<Item = Bases>) -> Bases {
    let mut out: Option<Bases> = None;
    for b in parts {
        out = Some(match out {
            None => b,
            Some(o) => Bases {
                timestamp: o.timestamp.min(b.timestamp),
                ldt: match (o.has_ldt, b.has_ldt) {
                    (true, true) => o.ldt.min(b.ldt),
                    (true, false) => o.ldt,
                    (false, _) => b.ldt,
                },
                has_ldt: o.has_ldt || b.has_ldt,
            },
        });
    }
    out.unwrap_or_default()
}

/// Whether every value of `row` lies at or above the bases (what the
/// version 2 row body can encode). A writer given its bases in advance (a
/// compaction writing as it merges) checks this before writing a row.
pub fn row_fits(b: &Bases, row: &Row) -> bool {
    let mut finder = BaseFinder::default();
    finder.row(row);
    finder.fits(b)
}

/// Whether a deletion lies at or above the bases.
pub fn deletion_fits(b: &Bases, d: &DeletionTime) -> bool {
    let mut finder = BaseFinder::default();
    finder.deletion(d);
    finder.fits(b)
}

/// Appends the header.
pub fn put_partition_header(out: &mut Vec<u8>, h: &Header) {
    let mut flags = 0;
    if h.deletion != DeletionTime::LIVE {
        flags |= PARTITION_HAS_DELETION;
    }
    if h.static_row.is_some() {
        flags |= PARTITION_HAS_STATIC;
    }
    if h.row_index {
        flags |= PARTITION_HAS_ROW_INDEX;
    }
    put_header(out, &h.bases, flags);
    if h.deletion != DeletionTime::LIVE {
        put_deletion(out, &h.bases, &h.deletion);
    }
    if let Some(s) = &h.static_row {
        put_row(out, &h.bases, s);
    }
}

/// Reads a header.
pub fn read_partition_header(r: &mut Reader) -> Result<Header, DecodeError> {
    let (flags, bases) = read_header(r, HEADER_FLAGS)?;
    let deletion = if flags & PARTITION_HAS_DELETION != 0 {
        read_deletion(r, &bases)?
    } else {
        DeletionTime::LIVE
    };
    let static_row = if flags & PARTITION_HAS_STATIC != 0 {
        Some(read_row(r, &bases)?)
    } else {
        None
    };
    Ok(Header {
        bases,
        deletion,
        static_row,
        row_index: flags & PARTITION_HAS_ROW_INDEX != 0,
    })
}

/// Appends a row item.
pub fn put_row_item(out: &mut Vec<u8>, b: &Bases, key: &ClusteringKey, row: &Row) {
    out.push(ITEM_ROW);
    put_values(out, &key.values);
    put_row(out, b, row);
}

/// Appends a marker: from `bound` on, `deletion` covers the rows (`LIVE`:
/// nothing does).
pub fn put_marker_item(
    out: &mut Vec<u8>,
    b: &Bases,
    bound: &ClusteringKey,
    deletion: &DeletionTime,
) {
    out.push(ITEM_MARKER);
    put_bound(out, bound);
    put_deletion(out, b, deletion);
}

/// Appends the end of the items.
pub fn put_end(out: &mut Vec<u8>) {
    out.push(ITEM_END);
}

/// One item of a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Row(ClusteringKey, Row),
    /// From this bound on, this deletion covers the rows (`LIVE`: none).
    Marker(ClusteringKey, DeletionTime),
    End,
}

impl Item {
    /// Where the item sorts: a row's clustering or a marker's bound.
    pub fn clustering(&self) -> Option<&ClusteringKey> {
        match self {
            Item::Row(k, _) | Item::Marker(k, _) => Some(k),
            Item::End => None,
        }
    }
}

/// Reads one item.
pub fn read_item(
    r: &mut Reader,
    b: &Bases,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Item, DecodeError> {
    match r.u8()? {
        ITEM_END => Ok(Item::End),
        ITEM_ROW => {
            let key = ClusteringKey::row(r.values()?, cmp);
            Ok(Item::Row(key, read_row(r, b)?))
        }
        ITEM_MARKER => {
            let bound = r.bound(cmp)?;
            Ok(Item::Marker(bound, read_deletion(r, b)?))
        }
        _ => Err(r.err("unknown item kind")),
    }
}

/// The range tombstones of a partition as markers: at each bound where
/// the strongest deletion covering the rows changes, the new one (`LIVE`
/// where none covers them). Overlapping tombstones become the strongest
/// of them between each two bounds.
pub fn markers(tombstones: &[RangeTombstone]) -> Vec<(ClusteringKey, DeletionTime)> {
    // Every bound with what starts and what ends there.
    let mut events: Vec<(&ClusteringKey, bool, DeletionTime)> = Vec::new();
    for rt in tombstones {
        if rt.slice.start < rt.slice.end && !rt.deletion.is_live() {
            events.push((&rt.slice.start, true, rt.deletion));
            events.push((&rt.slice.end, false, rt.deletion));
        }
    }
    events.sort_by(|a, b| a.0.cmp(b.0));
    let mut open: BTreeMap<(i64, i32), usize> = BTreeMap::new();
    let mut out: Vec<(ClusteringKey, DeletionTime)> = Vec::new();
    let mut current = DeletionTime::LIVE;
    let mut i = 0;
    while i < events.len() {
        let bound = events[i].0;
        while i < events.len() && events[i].0 == bound {
            let (_, starts, d) = events[i];
            let k = (d.marked_for_delete_at, d.local_deletion_time);
            if starts {
                *open.entry(k).or_insert(0) += 1;
            } else if let Some(n) = open.get_mut(&k) {
                *n -= 1;
                if *n == 0 {
                    open.remove(&k);
                }
            }
            i += 1;
        }
        let strongest = open
            .keys()
            .next_back()
            .map_or(DeletionTime::LIVE, |&(t, l)| DeletionTime::new(t, l));
        if strongest != current {
            out.push((bound.clone(), strongest));
            current = strongest;
        }
    }
    out
}

/// The range tombstones as an sstable of format 3 gives them back: the
/// strongest deletion between each two bounds, as disjoint tombstones
/// (adjacent ones with the same deletion joined). The same rows are
/// deleted by the same deletions.
pub fn normalize(tombstones: &[RangeTombstone]) -> Vec<RangeTombstone> {
    let mut folder = MarkerFolder::new(None, DeletionTime::LIVE);
    for (bound, d) in markers(tombstones) {
        folder.marker(bound, d);
    }
    folder.finish(None).unwrap_or_default()
}

/// `p` with its range tombstones normalized ([`normalize`]): the partition
/// as an sstable of format 3 gives it back. (A free function rather than a
/// method: `Partition` lives in `varve_types::data`, which knows nothing of
/// encodings.)
pub fn with_normalized_tombstones(mut p: Partition) -> Partition {
    p.range_tombstones = normalize(&p.range_tombstones);
    p
}

/// Turns markers read in order back into range tombstones; `open` is the
/// deletion open before the first (from a row index, or `LIVE` at the
/// start of a partition) from `start`. Returns the tombstones and what is
/// still open after the last marker (from which bound).
pub struct MarkerFolder {
    open: Option<(ClusteringKey, DeletionTime)>,
    pub tombstones: Vec<RangeTombstone>,
}

impl MarkerFolder {
    /// A folder starting with `open` covering from `start` (ignored when
    /// `open` is `LIVE`).
    pub fn new(start: Option<ClusteringKey>, open: DeletionTime) -> Self {
        MarkerFolder {
            open: start.filter(|_| !open.is_live()).map(|s| (s, open)),
            tombstones: Vec::new(),
        }
    }

    pub fn marker(&mut self, bound: ClusteringKey, deletion: DeletionTime) {
        if let Some((start, d)) = self.open.take() {
            if start < bound {
                self.tombstones.push(RangeTombstone {
                    slice: Slice {
                        start,
                        end: bound.clone(),
                    },
                    deletion: d,
                });
            }
        }
        if !deletion.is_live() {
            self.open = Some((bound, deletion));
        }
    }

    /// Closes what is open at `end` (the end of a window); `None` when
    /// something was open and there is no end to close it at.
    pub fn finish(mut self, end: Option<ClusteringKey>) -> Option<Vec<RangeTombstone>> {
        match (self.open.take(), end) {
            (None, _) => Some(self.tombstones),
            (Some((start, d)), Some(end)) => {
                if start < end {
                    self.tombstones.push(RangeTombstone {
                        slice: Slice { start, end },
                        deletion: d,
                    });
                }
                Some(self.tombstones)
            }
            (Some(_), None) => None,
        }
    }
}

/// Appends the items of `p` (rows and markers interleaved in clustering
/// order) and the end byte, calling `before_item` with each item's
/// clustering, the deletion open before it and the output's length before
/// it is written (where a row index may start a block).
pub fn put_items(
    out: &mut Vec<u8>,
    b: &Bases,
    p: &Partition,
    mut before_item: impl FnMut(&mut Vec<u8>, &ClusteringKey, &DeletionTime),
) -> Option<ClusteringKey> {
    let marks = markers(&p.range_tombstones);
    let mut marks = marks.iter().peekable();
    let mut open = DeletionTime::LIVE;
    let mut last: Option<&ClusteringKey> = None;
    for (key, row) in &p.rows {
        while let Some((bound, d)) = marks.next_if(|(bound, _)| bound < key) {
            before_item(out, bound, &open);
            put_marker_item(out, b, bound, d);
            open = *d;
        }
        before_item(out, key, &open);
        put_row_item(out, b, key, row);
        last = Some(key);
    }
    let last = match marks.len() {
        0 => last.cloned(),
        _ => marks.clone().last().map(|(bound, _)| bound.clone()),
    };
    for (bound, d) in marks {
        before_item(out, bound, &open);
        put_marker_item(out, b, bound, d);
        open = *d;
    }
    put_end(out);
    last
}

/// Appends a whole partition without a row index (the header, the items,
/// the end).
pub fn encode_partition(out: &mut Vec<u8>, p: &Partition) {
    let h = Header::of(p, false);
    put_partition_header(out, &h);
    put_items(out, &h.bases, p, |_, _, _| {});
}

/// Reads items until the end byte into `p` (rows, and range tombstones
/// from the markers, starting with `open` from `start`).
pub fn read_items_into(
    r: &mut Reader,
    b: &Bases,
    cmp: &Arc<ClusteringComparator>,
    p: &mut Partition,
    folder: MarkerFolder,
    end: Option<ClusteringKey>,
) -> Result<(), DecodeError> {
    let mut folder = folder;
    let mut last: Option<ClusteringKey> = None;
    loop {
        let at = r.position();
        let item = read_item(r, b, cmp)?;
        if let Some(k) = item.clustering() {
            if last.as_ref().is_some_and(|l| l >= k) {
                return Err(DecodeError {
                    what: "partition items out of order",
                    offset: at,
                });
            }
            last = Some(k.clone());
        }
        match item {
            Item::End => break,
            Item::Row(k, row) => {
                p.rows.insert(k, row);
            }
            Item::Marker(bound, d) => folder.marker(bound, d),
        }
    }
    p.range_tombstones = folder.finish(end).ok_or(DecodeError {
        what: "range tombstone left open at the end of the partition",
        offset: r.position(),
    })?;
    Ok(())
}

/// Decodes a whole version 3 partition (stopping at the end byte: a row
/// index after it is the container's to skip).
pub fn decode_partition(
    r: &mut Reader,
    cmp: &Arc<ClusteringComparator>,
) -> Result<Partition, DecodeError> {
    let h = read_partition_header(r)?;
    let mut p = Partition {
        deletion: h.deletion,
        static_row: h.static_row,
        ..Partition::default()
    };
    read_items_into(
        r,
        &h.bases,
        cmp,
        &mut p,
        MarkerFolder::new(None, DeletionTime::LIVE),
        None,
    )?;
    Ok(p)
}

/// Appends one row index entry: the block's first clustering (a row's, or
/// a marker's bound: weight, then values), the block's offset in the
/// partition's entry, and the deletion open at the block's start.
pub fn put_index_entry(
    out: &mut Vec<u8>,
    b: &Bases,
    first: &ClusteringKey,
    offset: u64,
    open: &DeletionTime,
) {
    out.push(first.weight as u8);
    put_values(out, &first.values);
    super::put_varint(out, offset);
    put_deletion(out, b, open);
}

/// One entry of a row index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The first item's clustering (a row) or bound (a marker).
    pub first: ClusteringKey,
    /// Where the block starts, from the start of the partition's entry.
    pub offset: u64,
    /// The range tombstone deletion open before the block's first item.
    pub open: DeletionTime,
}

/// Reads what [`put_index_entry`] wrote.
pub fn read_index_entry(
    r: &mut Reader,
    b: &Bases,
    cmp: &Arc<ClusteringComparator>,
) -> Result<IndexEntry, DecodeError> {
    let weight = r.u8()? as i8;
    let values = r.values()?;
    let first = match weight {
        0 => ClusteringKey::row(values, cmp),
        -1 => ClusteringKey::before(values, cmp),
        1 => ClusteringKey::after(values, cmp),
        _ => return Err(r.err("row index entry with an impossible weight")),
    };
    let offset = r.varint()?;
    let open = read_deletion(r, b)?;
    Ok(IndexEntry {
        first,
        offset,
        open,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;
    use bytes::Bytes;
    use varve_types::CqlType;

    fn cmp() -> Arc<ClusteringComparator> {
        ClusteringComparator::new(vec![(CqlType::Int, false)])
    }

    fn int(v: i32) -> Bytes {
        Bytes::copy_from_slice(&v.to_be_bytes())
    }

    fn rt(c: &Arc<ClusteringComparator>, from: i32, to: i32, ts: i64) -> RangeTombstone {
        RangeTombstone {
            slice: Slice {
                start: ClusteringKey::before(vec![int(from)], c),
                end: ClusteringKey::after(vec![int(to)], c),
            },
            deletion: DeletionTime::new(ts, 100),
        }
    }

    /// The deletion covering row `i` according to a list of tombstones.
    fn covering(list: &[RangeTombstone], c: &Arc<ClusteringComparator>, i: i32) -> DeletionTime {
        let key = ClusteringKey::row(vec![int(i)], c);
        list.iter()
            .filter(|rt| rt.slice.contains(&key))
            .fold(DeletionTime::LIVE, |a, rt| a.max(rt.deletion))
    }

    #[test]
    fn overlapping_tombstones_become_the_strongest_between_bounds() {
        let c = cmp();
        let list = vec![rt(&c, 0, 10, 5), rt(&c, 3, 6, 9), rt(&c, 8, 12, 2)];
        let marks = markers(&list);
        let mut folder = MarkerFolder::new(None, DeletionTime::LIVE);
        for (b, d) in marks.clone() {
            folder.marker(b, d);
        }
        let back = folder.finish(None).unwrap();
        for i in -2..15 {
            assert_eq!(covering(&list, &c, i), covering(&back, &c, i), "row {i}");
        }
        // Markers change the deletion at every step, and end closed.
        assert!(marks
            .windows(2)
            .all(|w| w[0].1 != w[1].1 && w[0].0 < w[1].0));
        assert!(marks.last().unwrap().1.is_live());
    }

    #[test]
    fn a_partition_round_trips_with_its_tombstones_as_markers() {
        let c = cmp();
        let mut p = Partition {
            deletion: DeletionTime::new(3, 50),
            ..Partition::default()
        };
        for i in 0..20 {
            let mut row = Row::default();
            row.cells
                .insert((1, None), Cell::live(10 + i as i64, int(i)));
            p.rows.insert(ClusteringKey::row(vec![int(i)], &c), row);
        }
        p.range_tombstones = vec![rt(&c, 2, 4, 20), rt(&c, 15, 30, 21)];
        let mut out = Vec::new();
        encode_partition(&mut out, &p);
        let back = decode_partition(&mut Reader::new(&out), &c).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn items_out_of_order_and_open_tombstones_are_errors() {
        let c = cmp();
        let h = Header::of(&Partition::default(), false);
        let mut out = Vec::new();
        put_partition_header(&mut out, &h);
        put_row_item(
            &mut out,
            &h.bases,
            &ClusteringKey::row(vec![int(2)], &c),
            &Row::default(),
        );
        put_row_item(
            &mut out,
            &h.bases,
            &ClusteringKey::row(vec![int(1)], &c),
            &Row::default(),
        );
        put_end(&mut out);
        let e = decode_partition(&mut Reader::new(&out), &c).unwrap_err();
        assert_eq!(e.what, "partition items out of order");

        let d = DeletionTime::new(1, 1);
        let with_deletion = Partition {
            deletion: d,
            ..Partition::default()
        };
        let h = Header::of(&with_deletion, false);
        let mut out = Vec::new();
        put_partition_header(&mut out, &h);
        put_marker_item(
            &mut out,
            &h.bases,
            &ClusteringKey::before(vec![int(1)], &c),
            &d,
        );
        put_end(&mut out);
        let e = decode_partition(&mut Reader::new(&out), &c).unwrap_err();
        assert_eq!(
            e.what,
            "range tombstone left open at the end of the partition"
        );
    }

    #[test]
    fn min_bases_cover_every_input() {
        let a = Bases {
            timestamp: 10,
            ldt: 0,
            has_ldt: false,
        };
        let b = Bases {
            timestamp: 5,
            ldt: 7,
            has_ldt: true,
        };
        let m = min_bases([a, b]);
        assert_eq!((m.timestamp, m.ldt, m.has_ldt), (5, 7, true));
        let mut row = Row::default();
        row.cells.insert((1, None), Cell::live(5, int(1)));
        assert!(row_fits(&m, &row));
        row.cells.insert((2, None), Cell::live(4, int(1)));
        assert!(!row_fits(&m, &row));
    }
}
