//! Tests of the chunk writer and reader: round trips, CRC checks and
//! their chance, corruption, and reads through the chunk cache.

use super::*;
use crate::sstable::format::MIN_CHUNK_LENGTH;
use proptest::prelude::*;

/// A file in memory.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl WriteFile for Bytes {
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.extend_from_slice(buf);
        Ok(())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

const CHUNK: usize = 64;
const START: u64 = 10;

/// The stream `0, 1, 2, ...` (compressible) or pseudo-random bytes.
fn stream(len: usize, random: bool) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if random {
                x as u8
            } else {
                (i / 7) as u8
            }
        })
        .collect()
}

/// Chunks of `CHUNK` bytes at exactly N - 1, N and N + 1 stream bytes:
/// each stored as the codec's block plus its CRC32, the section CRC
/// covering every stored byte.
#[test]
fn chunk_writer_stores_blocks_and_crcs_at_chunk_boundaries() {
    for compression in [Compression::None, Compression::Lz4] {
        for len in [CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5] {
            for random in [false, true] {
                let data = stream(len, random);
                let mut file = Bytes::default();
                let mut w = ChunkWriter::new(compression, CHUNK, START);
                // Odd-sized writes cross chunk boundaries.
                for part in data.chunks(13) {
                    w.write(&mut file, Path::new("t"), part).unwrap();
                }
                let (section, table, n) = w.finish(&mut file, Path::new("t")).unwrap();
                assert_eq!(n, len as u64);
                assert_eq!(section.len, file.0.len() as u64);
                assert_eq!(
                    section.crc,
                    crc32fast::hash(&file.0),
                    "{compression:?} {len}"
                );
                let mut expected = Vec::new();
                let mut offsets = Vec::new();
                for chunk in data.chunks(CHUNK) {
                    offsets.push(START + expected.len() as u64);
                    let stored = match compression {
                        Compression::None => chunk.to_vec(),
                        Compression::Lz4 => lz4_flex::block::compress(chunk),
                    };
                    expected.extend_from_slice(&stored);
                    expected.extend_from_slice(&crc32fast::hash(&stored).to_be_bytes());
                }
                assert_eq!(file.0, expected, "{compression:?} {len} {random}");
                assert_eq!(table.len(), 8 + 8 * offsets.len());
                assert_eq!(table[..8], (offsets.len() as u64).to_be_bytes());
            }
        }
    }
}

/// Every range of a stream of 3 chunks and 5 bytes, within a chunk,
/// across chunks, ending in the short last chunk, empty: `read_range`
/// and the sequential `read_range_cached` return exactly those bytes;
/// one byte past the end is a corruption error.
#[test]
fn read_range_returns_every_range_across_chunks() {
    for compression in [Compression::None, Compression::Lz4] {
        let data = stream(3 * CHUNK + 5, true);
        let mut file = Bytes(vec![0; START as usize]);
        let mut w = ChunkWriter::new(compression, CHUNK, START);
        w.write(&mut file, Path::new("t"), &data).unwrap();
        let (section, table, n) = w.finish(&mut file, Path::new("t")).unwrap();
        let shared = Arc::new(Shared(std::sync::Mutex::new(file.0)));
        let reader = ChunkReader::new(
            shared,
            Path::new("t"),
            compression,
            CHUNK as u64,
            n,
            section,
            &table,
            1.0,
        )
        .unwrap();
        let mut cache = None;
        for pos in 0..=data.len() {
            for len in 0..=data.len() - pos {
                let want = &data[pos..pos + len];
                let (p, l) = (pos as u64, len as u64);
                assert_eq!(reader.read_range(p, l).unwrap(), want, "{pos}+{len}");
                let cached = reader.read_range_cached(&mut cache, None, p, l).unwrap();
                assert_eq!(cached, want, "cached {pos}+{len}");
            }
            let past = (data.len() - pos + 1) as u64;
            let err = reader.read_range(pos as u64, past).unwrap_err();
            assert!(err.to_string().contains("past the end"), "{err}");
        }
    }
}

/// A file read through `read_exact_at` whose bytes a test can change.
struct Shared(std::sync::Mutex<Vec<u8>>);

impl ReadFile for Shared {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let data = self.0.lock().unwrap();
        buf.copy_from_slice(&data[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().unwrap().len() as u64
    }
}

/// Each epoch holds `budget / TRUST_GENERATIONS` bytes, N and not
/// N + 1; an epoch is trusted for `TRUST_GENERATIONS` epochs, not one
/// more.
#[test]
fn trust_epochs_hold_their_share_and_last_the_generations() {
    let trust = ChunkTrust::new(100 * TRUST_GENERATIONS as u64);
    let first = trust.epoch();
    assert_ne!(first, 0);
    assert!(!trust.trusts(0), "0 marks never verified");
    assert_eq!(trust.admit(60), first);
    assert_eq!(trust.admit(40), first, "exactly the share: same epoch");
    assert_eq!(trust.admit(1), first + 1, "one byte over: a new epoch");
    assert_eq!(trust.epoch(), first + 1);
    assert_eq!(trust.admit(99), first + 1, "the new epoch holds 1 + 99");
    for _ in 2..TRUST_GENERATIONS {
        trust.admit(100);
    }
    assert_eq!(trust.epoch(), first + TRUST_GENERATIONS - 1);
    assert!(trust.trusts(first), "the last generation still trusted");
    trust.admit(100);
    assert!(!trust.trusts(first), "one generation more: no longer");
    assert!(trust.trusts(first + 1));
}

/// A verified chunk is trusted until the whole budget has been verified
/// after it; one chunk more and its next read checks the CRC again and
/// finds a flipped byte.
#[test]
fn a_verified_chunk_is_checked_again_once_the_budget_moves_on() {
    let g = TRUST_GENERATIONS as usize;
    let chunks = 2 * g + 1;
    let data = stream(chunks * CHUNK, true);
    let mut file = Bytes(vec![0; START as usize]);
    let mut w = ChunkWriter::new(Compression::None, CHUNK, START);
    w.write(&mut file, Path::new("t"), &data).unwrap();
    let (section, table, n) = w.finish(&mut file, Path::new("t")).unwrap();
    let stored = CHUNK as u64 + CHUNK_CRC_LEN;
    // Room for exactly two chunks per epoch.
    let budget = 2 * stored * TRUST_GENERATIONS as u64;
    let trust = Arc::new(ChunkTrust::new(budget));
    let shared = Arc::new(Shared(std::sync::Mutex::new(file.0)));
    let reader = ChunkReader::new(
        shared.clone(),
        Path::new("t"),
        Compression::None,
        CHUNK as u64,
        n,
        section,
        &table,
        1.0,
    )
    .unwrap()
    .with_trust(trust);
    let read = |i: usize| reader.with_chunk(i as u64, |c| c.to_vec());
    let want = |i: usize| data[i * CHUNK..(i + 1) * CHUNK].to_vec();
    assert_eq!(read(0).unwrap(), want(0));
    // Chunk 0 is trusted now: a byte flipped under it goes unseen.
    shared.0.lock().unwrap()[START as usize + 3] ^= 0x5a;
    assert_ne!(read(0).unwrap(), want(0));
    for i in 1..2 * g {
        assert_eq!(read(i).unwrap(), want(i));
    }
    assert!(read(0).is_ok(), "the whole budget verified: still trusted");
    // One chunk past the budget: a new epoch, chunk 0 is checked.
    assert_eq!(read(2 * g).unwrap(), want(2 * g));
    let err = read(0).unwrap_err().to_string();
    assert!(err.contains("checksum mismatch in chunk 0"), "{err}");
}

/// One written data section: the stream, the file (`START` zero bytes,
/// then the chunks), the section, the chunk offset table, and the
/// file offset of every chunk as the format doc defines it (each
/// chunk's codec block plus its 4-byte CRC, back to back from `START`).
struct Written {
    data: Vec<u8>,
    file: Vec<u8>,
    section: Section,
    table: Vec<u8>,
    offsets: Vec<u64>,
}

/// Writes `data` through a [`ChunkWriter`] in writes of `write_len`
/// bytes.
fn write_stream(
    compression: Compression,
    chunk_length: usize,
    data: Vec<u8>,
    write_len: usize,
) -> Written {
    let mut file = Bytes(vec![0; START as usize]);
    let mut w = ChunkWriter::new(compression, chunk_length, START);
    for part in data.chunks(write_len) {
        w.write(&mut file, Path::new("t"), part).unwrap();
    }
    let (section, table, n) = w.finish(&mut file, Path::new("t")).unwrap();
    assert_eq!(n, data.len() as u64);
    let mut offsets = Vec::new();
    let mut at = START;
    for chunk in data.chunks(chunk_length) {
        offsets.push(at);
        at += match compression {
            Compression::None => chunk.len(),
            Compression::Lz4 => lz4_flex::block::compress(chunk).len(),
        } as u64;
        at += CHUNK_CRC_LEN;
    }
    assert_eq!(at, section.end());
    Written {
        data,
        file: file.0,
        section,
        table,
        offsets,
    }
}

/// A stream to write: either compression, a chunk length from the
/// minimum up, random or compressible bytes, and the size of each
/// write (any, so writes cross chunk boundaries).
fn arb_stream() -> impl Strategy<Value = (Compression, usize, Vec<u8>, usize)> {
    let data = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..1500),
        // Compressible: runs of one byte.
        proptest::collection::vec((any::<u8>(), 1usize..40), 0..60).prop_map(|runs| runs
            .into_iter()
            .flat_map(|(b, n)| std::iter::repeat_n(b, n))
            .collect()),
    ];
    (
        any::<bool>(),
        prop_oneof![Just(MIN_CHUNK_LENGTH), MIN_CHUNK_LENGTH..300],
        data,
        1usize..200,
    )
        .prop_map(|(lz4, chunk_length, data, write_len)| {
            let compression = if lz4 {
                Compression::Lz4
            } else {
                Compression::None
            };
            (compression, chunk_length, data, write_len)
        })
}

/// [`ChunkReader::new`] on `table` for the stream of `w`.
fn reader_for(
    w: &Written,
    compression: Compression,
    chunk_length: usize,
    table: &[u8],
) -> std::result::Result<ChunkReader, &'static str> {
    ChunkReader::new(
        Arc::new(Shared(std::sync::Mutex::new(w.file.clone()))),
        Path::new("t"),
        compression,
        chunk_length as u64,
        w.data.len() as u64,
        w.section,
        table,
        1.0,
    )
}

/// A chunk offset table of `count` and `offsets`.
fn table_of(count: u64, offsets: &[u64]) -> Vec<u8> {
    let mut t = count.to_be_bytes().to_vec();
    for o in offsets {
        t.extend_from_slice(&o.to_be_bytes());
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// What the writer encodes is `ceil(len / chunk_length)` then each
    /// chunk's file offset; [`ChunkReader::new`] parses it back to
    /// those offsets followed by the end of the data section, and the
    /// whole stream reads back from it.
    #[test]
    fn the_chunk_offset_table_parses_back_to_the_written_bounds(
        (compression, chunk_length, data, write_len) in arb_stream(),
    ) {
        let w = write_stream(compression, chunk_length, data, write_len);
        let count = w.data.len().div_ceil(chunk_length) as u64;
        prop_assert_eq!(&w.table, &table_of(count, &w.offsets));
        let reader = reader_for(&w, compression, chunk_length, &w.table).unwrap();
        let mut bounds = w.offsets.clone();
        bounds.push(w.section.end());
        prop_assert_eq!(&reader.bounds, &bounds);
        for (i, o) in w.offsets.iter().enumerate() {
            prop_assert_eq!(reader.chunk_offset(i as u64), *o);
        }
        prop_assert_eq!(reader.read_range(0, w.data.len() as u64).unwrap(), w.data.clone());
    }

    /// A table whose count, or number of offsets, is not the one the
    /// stream length gives is refused: the count field changed alone,
    /// an offset dropped or added with the count following, or the
    /// table read against another stream length.
    #[test]
    fn a_table_with_the_wrong_count_is_refused(
        (compression, chunk_length, data, write_len) in arb_stream(),
        change in 0..4usize,
        delta in 1u64..4,
    ) {
        let w = write_stream(compression, chunk_length, data, write_len);
        let count = w.offsets.len() as u64;
        let mut offsets = w.offsets.clone();
        let table = match change {
            0 => table_of(count.wrapping_add(delta), &offsets),
            1 => table_of(count.wrapping_sub(delta), &offsets),
            2 => {
                if offsets.pop().is_none() {
                    return Ok(());
                }
                table_of(count - 1, &offsets)
            }
            _ => {
                offsets.push(w.section.end().saturating_sub(CHUNK_CRC_LEN + 1));
                table_of(count + 1, &offsets)
            }
        };
        prop_assert!(reader_for(&w, compression, chunk_length, &table).is_err());
        // The written table against a stream `delta` chunks longer.
        let mut longer = w;
        let len = longer.data.len() + delta as usize * chunk_length;
        longer.data.resize(len, 0);
        prop_assert!(reader_for(&longer, compression, chunk_length, &longer.table).is_err());
    }

    /// With one offset replaced by any value, the table is accepted
    /// exactly when the format's rule still holds: the first chunk at
    /// the start of the data section, each chunk starting where the
    /// previous ends, in order, at least 5 bytes (one stored byte and
    /// the CRC). Out-of-order offsets are refused, not a panic.
    #[test]
    fn a_table_is_accepted_only_with_ordered_chunks_of_five_bytes(
        (compression, chunk_length, data, write_len) in arb_stream(),
        which in any::<prop::sample::Index>(),
        near_previous in any::<bool>(),
        shift in -8i64..8,
        anything in any::<u64>(),
        use_anything in proptest::bool::weighted(0.1),
    ) {
        let w = write_stream(compression, chunk_length, data, write_len);
        if w.offsets.is_empty() {
            return Ok(());
        }
        let mut bounds = w.offsets.clone();
        bounds.push(w.section.end());
        let i = which.index(w.offsets.len());
        let previous = if i == 0 { w.section.offset } else { bounds[i - 1] };
        let around = if near_previous { previous } else { bounds[i + 1] };
        let v = if use_anything { anything } else { around.saturating_add_signed(shift) };
        let mut offsets = w.offsets.clone();
        offsets[i] = v;
        let table = table_of(offsets.len() as u64, &offsets);
        // The shortest chunk: one stored byte and its CRC.
        let shortest = CHUNK_CRC_LEN + 1;
        let next_ok = v.checked_add(shortest).is_some_and(|e| e <= bounds[i + 1]);
        let valid = if i == 0 {
            v == w.section.offset && next_ok
        } else {
            bounds[i - 1] + shortest <= v && next_ok
        };
        let got = reader_for(&w, compression, chunk_length, &table);
        prop_assert_eq!(got.is_ok(), valid, "offset {} of {:?} set to {}", i, bounds, v);
        if let Ok(reader) = got {
            prop_assert_eq!(reader.chunk_offset(i as u64), v);
        }
    }

    /// Any table bytes, stream length, chunk length and data section:
    /// an answer, never a panic.
    #[test]
    fn any_chunk_offset_table_is_parsed_without_a_panic(
        table in proptest::collection::vec(any::<u8>(), 0..80),
        words in proptest::collection::vec(any::<u64>(), 0..6),
        use_words in any::<bool>(),
        uncompressed_len in prop_oneof![0u64..200, any::<u64>()],
        chunk_length in prop_oneof![0u64..64, any::<u64>()],
        offset in prop_oneof![0u64..200, any::<u64>()],
        len in prop_oneof![0u64..200, any::<u64>()],
    ) {
        // Tables of whole words, with a count that may match.
        let table = if use_words {
            table_of(words.len() as u64, &words)
        } else {
            table
        };
        let data = Section { offset, len, crc: 0 };
        let _ = ChunkReader::new(
            Arc::new(Shared(std::sync::Mutex::new(Vec::new()))),
            Path::new("t"),
            Compression::Lz4,
            chunk_length,
            uncompressed_len,
            data,
            &table,
            1.0,
        );
    }
}

/// A file that records what it is asked to prefetch.
struct Prefetches {
    data: Vec<u8>,
    asked: std::sync::Mutex<Vec<(u64, u64)>>,
}

impl ReadFile for Prefetches {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        buf.copy_from_slice(&self.data[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn prefetch(&self, offset: u64, len: u64) {
        self.asked.lock().unwrap().push((offset, len));
    }
}

/// A reader of `w`'s stream over a file that records what it is asked to
/// prefetch.
fn prefetching_reader(w: &Written) -> (Arc<Prefetches>, ChunkReader) {
    let file = Arc::new(Prefetches {
        data: w.file.clone(),
        asked: std::sync::Mutex::new(Vec::new()),
    });
    let reader = ChunkReader::new(
        file.clone(),
        Path::new("t"),
        Compression::None,
        CHUNK as u64,
        w.data.len() as u64,
        w.section,
        &w.table,
        1.0,
    )
    .unwrap();
    (file, reader)
}

#[test]
fn a_read_across_chunks_asks_for_all_of_them_at_once_where_it_may_wait() {
    let w = write_stream(Compression::None, CHUNK, stream(4 * CHUNK, true), CHUNK);
    let (file, reader) = prefetching_reader(&w);
    let asked = || std::mem::take(&mut *file.asked.lock().unwrap());
    // Within one chunk: nothing to gather.
    reader.read_range(1, CHUNK as u64 - 2).unwrap();
    assert_eq!(asked(), vec![]);
    // From inside chunk 1 to inside chunk 3: the stored bytes of 1..=3.
    let got = reader
        .read_range(CHUNK as u64 + 5, 2 * CHUNK as u64)
        .unwrap();
    assert_eq!(got, &w.data[CHUNK + 5..3 * CHUNK + 5]);
    let (from, to) = (w.offsets[1], w.section.end());
    assert_eq!(asked(), vec![(from, to - from)]);
    // Where a read may not wait (the event loop) or leaves no trace (a
    // compaction's), it does not ask.
    {
        let _scope = crate::io_mode::NonBlocking::enter();
        reader.read_range(0, 2 * CHUNK as u64).unwrap();
    }
    {
        let _scope = crate::io_mode::BackgroundReads::enter();
        reader.read_range(0, 2 * CHUNK as u64).unwrap();
    }
    assert_eq!(asked(), vec![]);
}

#[test]
fn a_sequential_reader_asks_for_two_stretches_ahead_at_each_stretch_boundary() {
    // Stretches of SEQUENTIAL_PREFETCH_BYTES of chunks: the first chunk read
    // asks for its stretch and the next; the chunk before the next stretch
    // (N - 1) asks for nothing; the first of the next stretch (N) asks again.
    let per = (SEQUENTIAL_PREFETCH_BYTES / CHUNK as u64) as usize;
    let w = write_stream(
        Compression::None,
        CHUNK,
        stream(4 * per * CHUNK, true),
        4096,
    );
    let (file, reader) = prefetching_reader(&w);
    let asked = || std::mem::take(&mut *file.asked.lock().unwrap());
    let mut last = None;
    let mut read_chunk = |i: usize| {
        let got = reader
            .read_range_cached(&mut last, None, (i * CHUNK) as u64, CHUNK as u64)
            .unwrap();
        assert_eq!(got, &w.data[i * CHUNK..(i + 1) * CHUNK]);
    };
    read_chunk(0);
    assert_eq!(
        asked(),
        vec![(w.offsets[0], w.offsets[2 * per] - w.offsets[0])]
    );
    read_chunk(per - 1);
    assert_eq!(asked(), vec![]);
    read_chunk(per);
    assert_eq!(
        asked(),
        vec![(w.offsets[per], w.offsets[3 * per] - w.offsets[per])]
    );
    // The last stretch asks only up to the end of the data.
    read_chunk(3 * per);
    assert_eq!(
        asked(),
        vec![(w.offsets[3 * per], w.section.end() - w.offsets[3 * per])]
    );
}
