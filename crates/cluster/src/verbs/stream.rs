//! STREAM_PULL: a node that gains a token range asks a replica of it for
//! the range's partitions, one page at a time (docs/design/topology.md,
//! section 4; docs/format/internode.md, section 6). STREAM_PUSH sends the
//! same pages the other way (a leaving node to the nodes that take its
//! ranges): table id u128, then a page; the response is empty.
//!
//! Request: table id u128; start and end token bounds (the next page
//! starts `AfterKey` the last key received); `max_bytes` varint
//! (1 ..= [`MAX_STREAM_PAGE_BYTES`]); the generations of the source's
//! sstables the page leaves out, because they came whole (`count` varint,
//! 0 ..= [`MAX_STREAM_FILES`], × u64; see [`super::stream_file`]).
//! Response: `encoding` u8; `count` varint (0 ..=
//! [`MAX_PARTITIONS_PER_PAGE`]); `count` × (`len` varint,
//! table update of `len` bytes, as in MUTATION); `more` u8 (1: the source
//! stopped at the budget; ask again after the last key).
//!
//! Partitions come whole, in token order, tombstones included. The source
//! stops once the page holds `max_bytes` or more, so a page is at most
//! one partition over the budget; a partition that alone would not fit a
//! frame fails the pull with a message saying so.

use bytes::Bytes;
use varve_storage::encoding::PARTITION_ENCODING_VERSION;
use varve_storage::Engine;
use varve_types::data::{PartitionKey, Slice, TokenBound};

use super::codec::{
    count, put_key, put_partition, put_table, put_token_bound, read_encoding, read_table,
    read_token_bound, Comparators, PayloadError,
};
use super::mutation::{decode_update, TableUpdate};
use super::stream_file::{put_generations, read_generations, MAX_STREAM_FILES};
use crate::net::limits::MAX_FRAME_PAYLOAD_BYTES;
use crate::net::wire::{put_varint, Reader};
use std::collections::BTreeSet;

/// Largest byte budget a pull may ask for: a page then stays well inside
/// a frame (one partition over the budget at most).
pub const MAX_STREAM_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Most partitions one page carries.
pub const MAX_PARTITIONS_PER_PAGE: usize = 10_000;

/// A pull as the source receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct PullRequest {
    pub table: u128,
    pub start: TokenBound,
    pub end: TokenBound,
    pub max_bytes: usize,
    /// The source's sstables left out (sent whole before the pages).
    pub skip: Vec<u64>,
}

pub fn encode_request(req: &PullRequest) -> Bytes {
    let mut out = Vec::with_capacity(64);
    put_table(&mut out, req.table);
    put_token_bound(&mut out, &req.start);
    put_token_bound(&mut out, &req.end);
    put_varint(
        &mut out,
        req.max_bytes.clamp(1, MAX_STREAM_PAGE_BYTES) as u64,
    );
    put_generations(&mut out, &req.skip[..req.skip.len().min(MAX_STREAM_FILES)]);
    Bytes::from(out)
}

pub fn decode_request(payload: &Bytes) -> Result<PullRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let start = read_token_bound(&mut r, payload)?;
    let end = read_token_bound(&mut r, payload)?;
    let max_bytes = count(&mut r, "page bytes", MAX_STREAM_PAGE_BYTES)?;
    if max_bytes == 0 {
        return Err(PayloadError::Malformed("a pull of no bytes".into()));
    }
    let skip = read_generations(&mut r)?;
    r.finish()?;
    Ok(PullRequest {
        table,
        start,
        end,
        max_bytes,
        skip,
    })
}

/// A page being filled by the source.
#[derive(Debug)]
pub struct PageWriter {
    entries: Vec<u8>,
    count: usize,
    budget: usize,
    one: Vec<u8>,
}

impl PageWriter {
    pub fn new(budget: usize) -> PageWriter {
        PageWriter {
            entries: Vec::with_capacity(budget.min(1 << 20)),
            count: 0,
            budget,
            one: Vec::new(),
        }
    }

    /// Whether the page is full (its budget spent, or its count reached).
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.budget || self.count >= MAX_PARTITIONS_PER_PAGE
    }

    /// Adds one partition; an error when it alone would not fit a frame.
    pub fn push(&mut self, u: &TableUpdate) -> Result<(), String> {
        self.one.clear();
        put_table(&mut self.one, u.table);
        put_key(&mut self.one, &u.key);
        put_partition(&mut self.one, &u.update);
        if self.entries.len() + self.one.len() + 32 > MAX_FRAME_PAYLOAD_BYTES {
            return Err(format!(
                "a partition of {} bytes does not fit a stream page (frames carry {} bytes); \
                 streaming partitions this large is not built yet",
                self.one.len(),
                MAX_FRAME_PAYLOAD_BYTES
            ));
        }
        put_varint(&mut self.entries, self.one.len() as u64);
        self.entries.extend_from_slice(&self.one);
        self.count += 1;
        Ok(())
    }

    /// The response payload.
    pub fn finish(self, more: bool) -> Bytes {
        let mut out = Vec::with_capacity(self.entries.len() + 16);
        out.push(PARTITION_ENCODING_VERSION);
        put_varint(&mut out, self.count as u64);
        out.extend_from_slice(&self.entries);
        out.push(u8::from(more));
        Bytes::from(out)
    }
}

/// A page read from this node's engine, ready to send.
#[derive(Debug)]
pub struct BuiltPage {
    pub bytes: Bytes,
    /// Partitions the page holds.
    pub partitions: usize,
    /// The last key the page holds (the next page starts after it).
    pub last: Option<PartitionKey>,
    pub more: bool,
}

/// Why a page could not be read.
#[derive(Debug)]
pub enum PageError {
    Storage(varve_storage::Error),
    /// A partition too large for a frame.
    TooLarge(String),
}

/// Reads the page `req` asks for from `engine`: the range's partitions,
/// whole, in token order, until the budget is spent.
pub fn read_page(engine: &Engine, req: &PullRequest) -> Result<BuiltPage, PageError> {
    let limit = MAX_PARTITIONS_PER_PAGE;
    let skip: BTreeSet<u64> = req.skip.iter().copied().collect();
    let keys = engine
        .scan_keys_skipping(req.table, &req.start, &req.end, limit + 1, &skip)
        .map_err(PageError::Storage)?;
    let cmp = engine.comparator(req.table).map_err(PageError::Storage)?;
    let all = [Slice::all(&cmp)];
    let mut page = PageWriter::new(req.max_bytes);
    let mut taken = 0;
    let mut last = None;
    for key in keys.iter().take(limit) {
        if page.is_full() {
            break;
        }
        taken += 1;
        let read = engine.read_partition_skipping(req.table, key, &all, &skip);
        if let Some(update) = read.map_err(PageError::Storage)? {
            let one = TableUpdate {
                table: req.table,
                key: key.clone(),
                update,
            };
            page.push(&one).map_err(PageError::TooLarge)?;
            last = Some(key.clone());
        }
    }
    let more = taken < keys.len();
    // A page that skipped only vanished keys goes on after the last seen.
    if more && last.is_none() {
        last = keys.get(taken.saturating_sub(1)).cloned();
    }
    Ok(BuiltPage {
        partitions: page.count,
        bytes: page.finish(more),
        last,
        more,
    })
}

/// A STREAM_PUSH payload: the table id, then a page.
pub fn encode_push(table: u128, page: &Bytes) -> Bytes {
    let mut out = Vec::with_capacity(page.len() + 16);
    put_table(&mut out, table);
    out.extend_from_slice(page);
    Bytes::from(out)
}

/// The partitions of a STREAM_PUSH payload.
pub fn decode_push(
    payload: &Bytes,
    tables: &dyn Comparators,
) -> Result<Vec<TableUpdate>, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let at = payload.len() - r.remaining();
    Ok(decode_page(&payload.slice(at..), table, tables)?.partitions)
}

/// A STREAM_REQUEST: pull range `(start, end]` of `table` from `source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub table: u128,
    pub start: i64,
    pub end: i64,
    pub source: crate::net::HostId,
    pub address: std::net::SocketAddr,
}

pub fn encode_fetch(req: &FetchRequest) -> Bytes {
    let mut out = Vec::with_capacity(64);
    put_table(&mut out, req.table);
    out.extend_from_slice(&req.start.to_be_bytes());
    out.extend_from_slice(&req.end.to_be_bytes());
    out.extend_from_slice(&req.source.0);
    crate::net::wire::put_address(&mut out, req.address);
    Bytes::from(out)
}

pub fn decode_fetch(payload: &Bytes) -> Result<FetchRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let table = read_table(&mut r)?;
    let start = r.i64()?;
    let end = r.i64()?;
    let source = crate::net::HostId(r.array::<16>()?);
    let address = crate::net::wire::read_address(&mut r)?;
    r.finish()?;
    Ok(FetchRequest {
        table,
        start,
        end,
        source,
        address,
    })
}

/// A page as the puller receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub partitions: Vec<TableUpdate>,
    pub more: bool,
}

/// Decodes a page; every partition must be of `table`, inside the range
/// asked, and in token order.
pub fn decode_page(
    payload: &Bytes,
    table: u128,
    tables: &dyn Comparators,
) -> Result<Page, PayloadError> {
    let mut r = Reader::new(payload);
    let version = read_encoding(&mut r)?;
    let n = count(&mut r, "partitions", MAX_PARTITIONS_PER_PAGE)?;
    let mut partitions: Vec<TableUpdate> = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        let len = count(&mut r, "partition bytes", MAX_FRAME_PAYLOAD_BYTES)?;
        let at = payload.len() - r.remaining();
        let one = payload.slice(at..at + len.min(r.remaining()));
        r.take(len)?;
        let update = decode_update(&one, version, tables)?;
        if update.table != table {
            return Err(PayloadError::Malformed(format!(
                "a page of table {table:032x} holds table {:032x}",
                update.table
            )));
        }
        if partitions.last().is_some_and(|p| p.key >= update.key) {
            return Err(PayloadError::Malformed(
                "a page's partitions are out of order".into(),
            ));
        }
        partitions.push(update);
    }
    let more = match r.u8()? {
        0 => false,
        1 => true,
        other => return Err(PayloadError::Malformed(format!("page `more` {other}"))),
    };
    r.finish()?;
    Ok(Page { partitions, more })
}

/// For the internode fuzz target (`crate::net::fuzz`): a request that
/// decodes encodes back to itself; a page never panics, and one that
/// decodes is in order.
pub fn fuzz_decode(payload: &[u8]) {
    let bytes = Bytes::copy_from_slice(payload);
    if let Ok(req) = decode_request(&bytes) {
        assert_eq!(decode_request(&encode_request(&req)), Ok(req));
    }
    if let Ok(page) = decode_page(&bytes, 0, &AnyTable) {
        assert!(page.partitions.windows(2).all(|w| w[0].key < w[1].key));
    }
    let _ = decode_push(&bytes, &AnyTable);
    if let Ok(fetch) = decode_fetch(&bytes) {
        assert_eq!(decode_fetch(&encode_fetch(&fetch)), Ok(fetch));
    }
}

/// Every table id, with one int clustering column (fuzzing).
pub(super) struct AnyTable;

impl Comparators for AnyTable {
    fn comparator(
        &self,
        _table: u128,
    ) -> Option<std::sync::Arc<varve_types::data::ClusteringComparator>> {
        Some(varve_types::data::ClusteringComparator::new(vec![(
            varve_types::CqlType::Int,
            false,
        )]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::tests::{comparators, sample_update};

    #[test]
    fn a_request_round_trips_and_its_budget_is_bounded() {
        let req = PullRequest {
            table: 7,
            start: TokenBound::TokenExclusive(-5),
            end: TokenBound::TokenInclusive(90),
            max_bytes: MAX_STREAM_PAGE_BYTES,
            skip: vec![3, 9],
        };
        assert_eq!(decode_request(&encode_request(&req)).unwrap(), req);
        let mut over = Vec::new();
        put_table(&mut over, 7);
        put_token_bound(&mut over, &TokenBound::Unbounded);
        put_token_bound(&mut over, &TokenBound::Unbounded);
        put_varint(&mut over, MAX_STREAM_PAGE_BYTES as u64 + 1);
        put_varint(&mut over, 0);
        assert!(decode_request(&Bytes::from(over)).is_err());
        let plain = PullRequest {
            skip: vec![],
            ..req.clone()
        };
        let mut zero = encode_request(&plain).to_vec();
        zero.truncate(zero.len() - 5);
        zero.extend_from_slice(&[0, 0]);
        assert!(decode_request(&Bytes::from(zero)).is_err());
        let bytes = encode_request(&req);
        for cut in 0..bytes.len() {
            assert!(decode_request(&bytes.slice(..cut)).is_err());
        }
    }

    #[test]
    fn a_request_leaves_out_at_most_max_stream_files() {
        let with = |n: usize| {
            let mut out = Vec::new();
            put_table(&mut out, 7);
            put_token_bound(&mut out, &TokenBound::Unbounded);
            put_token_bound(&mut out, &TokenBound::Unbounded);
            put_varint(&mut out, 100);
            put_generations(&mut out, &(0..n as u64).collect::<Vec<_>>());
            decode_request(&Bytes::from(out))
        };
        assert_eq!(with(MAX_STREAM_FILES).unwrap().skip.len(), MAX_STREAM_FILES);
        assert!(with(MAX_STREAM_FILES + 1).is_err());
    }

    #[test]
    fn a_page_holds_at_most_max_partitions() {
        let tables = comparators();
        let one = sample_update(b"a");
        let mut page = PageWriter::new(MAX_STREAM_PAGE_BYTES);
        for _ in 0..MAX_PARTITIONS_PER_PAGE - 1 {
            page.count += 1;
        }
        assert!(!page.is_full(), "N - 1 partitions: room for one more");
        page.push(&one).unwrap();
        assert!(page.is_full(), "N partitions: full");
        // A count of N + 1 is refused before anything is read.
        let mut over = vec![PARTITION_ENCODING_VERSION];
        put_varint(&mut over, MAX_PARTITIONS_PER_PAGE as u64 + 1);
        let err = decode_page(&Bytes::from(over), one.table, &tables).unwrap_err();
        assert!(err.to_string().contains("partitions"), "{err}");
        // N is a count the decoder takes (then finds the bytes missing).
        let mut at = vec![PARTITION_ENCODING_VERSION];
        put_varint(&mut at, MAX_PARTITIONS_PER_PAGE as u64);
        let err = decode_page(&Bytes::from(at), one.table, &tables).unwrap_err();
        assert!(!err.to_string().contains("partitions"), "{err}");
    }

    #[test]
    fn a_fetch_request_round_trips_and_truncations_are_refused() {
        let req = FetchRequest {
            table: 9,
            start: i64::MIN + 1,
            end: 77,
            source: crate::net::HostId([5; 16]),
            address: ([127, 0, 0, 3], 7000).into(),
        };
        let bytes = encode_fetch(&req);
        assert_eq!(decode_fetch(&bytes), Ok(req));
        for cut in 0..bytes.len() {
            assert!(decode_fetch(&bytes.slice(..cut)).is_err());
        }
    }

    #[test]
    fn a_page_round_trips_in_order_and_refuses_disorder() {
        let tables = comparators();
        let mut a = sample_update(b"a");
        let mut b = sample_update(b"b");
        if a.key > b.key {
            std::mem::swap(&mut a, &mut b);
        }
        let mut page = PageWriter::new(1);
        page.push(&a).unwrap();
        assert!(page.is_full());
        page.push(&b).unwrap();
        let bytes = page.finish(true);
        let decoded = decode_page(&bytes, a.table, &tables).unwrap();
        assert_eq!(decoded.partitions, vec![a.clone(), b.clone()]);
        assert!(decoded.more);
        let mut wrong = PageWriter::new(100);
        wrong.push(&b).unwrap();
        wrong.push(&a).unwrap();
        assert!(decode_page(&wrong.finish(false), a.table, &tables).is_err());
        assert!(decode_page(&bytes, a.table + 1, &tables).is_err());
        let empty = PageWriter::new(100).finish(false);
        let none = decode_page(&empty, a.table, &tables).unwrap();
        assert!(none.partitions.is_empty() && !none.more);
        // Every truncation is refused.
        for cut in 0..bytes.len() {
            assert!(decode_page(&bytes.slice(..cut), a.table, &tables).is_err());
        }
    }
}
