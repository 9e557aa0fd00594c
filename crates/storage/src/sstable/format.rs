//! The fixed parts of an sstable file: the header, the footer, the section
//! table and the limits. The byte tables are in docs/format/sstable.md;
//! this module mirrors them with named constants.
//!
//! Invariants checked on open (see [`Footer::decode`] and
//! [`Footer::validate_layout`]): the footer's CRC matches, the version is
//! one this code reads, and the six sections tile the file exactly, in
//! order, from the end of the header to the start of the footer. Any
//! truncation therefore moves the footer and fails open.

use crate::encoding::{DecodeError, Reader};

/// First and last eight bytes of every sstable file.
pub const MAGIC: [u8; 8] = *b"VARVESST";
/// The format version this code writes.
pub const FORMAT_VERSION: u16 = 4;
/// Every format version this code reads.
pub const READABLE_VERSIONS: &[u16] = &[1, 2, 3, 4];

/// Header: magic (8), version (2), six zero bytes reserved.
pub const HEADER_LEN: u64 = 16;
/// Bytes of one section descriptor: offset u64, length u64, crc32 u32.
pub const SECTION_DESCRIPTOR_LEN: usize = 20;
/// Number of sections, in file order.
pub const SECTION_COUNT: usize = 6;
/// Footer bytes covered by the footer CRC.
pub const FOOTER_BODY_LEN: usize = 24 + SECTION_COUNT * SECTION_DESCRIPTOR_LEN;
/// Footer: body, crc32 of the body, magic.
pub const FOOTER_LEN: u64 = FOOTER_BODY_LEN as u64 + 4 + MAGIC.len() as u64;

/// Longest partition key (it is stored with a u16 length).
pub const MAX_KEY_LEN: usize = 65535;
/// Smallest and largest uncompressed chunk.
pub const MIN_CHUNK_LENGTH: usize = 16;
pub const MAX_CHUNK_LENGTH: usize = 16 << 20;
/// Largest `min_index_interval` (partitions per index block).
pub const MAX_INDEX_INTERVAL: usize = 1 << 16;
/// An index block is closed once it holds this many bytes, whatever the
/// interval, so a point read never reads a huge block.
pub const INDEX_BLOCK_TARGET_LEN: usize = 64 << 10;
/// Largest index block on disk (target + one largest entry + CRC, rounded).
pub const MAX_INDEX_BLOCK_LEN: u64 = 256 << 10;
/// Largest sections that are read whole into memory on open.
pub const MAX_CHUNK_OFFSETS_LEN: u64 = 1 << 30;
pub const MAX_SUMMARY_LEN: u64 = 1 << 30;
pub const MAX_BLOOM_LEN: u64 = 1 << 30;
pub const MAX_STATS_LEN: u64 = 1 << 20;
/// Bytes after each chunk: the CRC32 of the chunk's stored bytes.
pub const CHUNK_CRC_LEN: u64 = 4;
/// LZ4 cannot expand data by more than this factor (plus a small
/// constant), so a chunk claiming more is rejected before allocating.
pub const LZ4_MAX_RATIO: u64 = 255;

/// How chunks are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
}

impl Compression {
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
        }
    }

    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }
}

/// Where a section lives and the CRC32 of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Section {
    pub offset: u64,
    pub len: u64,
    pub crc: u32,
}

impl Section {
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// The footer: what a reader needs to find everything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footer {
    pub version: u16,
    pub partition_encoding_version: u8,
    pub compression: Compression,
    pub chunk_length: u32,
    pub uncompressed_len: u64,
    pub partition_count: u64,
    pub data: Section,
    pub chunk_offsets: Section,
    pub index: Section,
    pub summary: Section,
    pub bloom: Section,
    pub stats: Section,
}

/// The header bytes.
pub fn encode_header() -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN as usize);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_be_bytes());
    out.resize(HEADER_LEN as usize, 0);
    out
}

/// Checks the header; returns a reason when it is wrong.
pub fn check_header(bytes: &[u8], footer_version: u16) -> Result<(), &'static str> {
    if bytes.len() != HEADER_LEN as usize || bytes[..8] != MAGIC {
        return Err("bad header magic");
    }
    if u16::from_be_bytes([bytes[8], bytes[9]]) != footer_version {
        return Err("header and footer versions differ");
    }
    if bytes[10..].iter().any(|b| *b != 0) {
        return Err("reserved header bytes are not zero");
    }
    Ok(())
}

impl Footer {
    fn sections(&self) -> [&Section; SECTION_COUNT] {
        [
            &self.data,
            &self.chunk_offsets,
            &self.index,
            &self.summary,
            &self.bloom,
            &self.stats,
        ]
    }

    /// The CRC32 of the whole file this footer ends, as it is when every
    /// section matches its CRC: the header (magic, this version, zeros),
    /// each section's CRC combined in file order, then the footer. No
    /// byte is read; whole-sstable streaming sends it with the file, and
    /// the receiver compares it with the CRC of the bytes it got.
    pub fn whole_file_crc(&self) -> u32 {
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&self.version.to_be_bytes());
        header.resize(HEADER_LEN as usize, 0);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        for s in self.sections() {
            crc.combine(&crc32fast::Hasher::new_with_initial_len(s.crc, s.len));
        }
        crc.update(&self.encode());
        crc.finalize()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN as usize);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.push(self.partition_encoding_version);
        out.push(self.compression.id());
        out.extend_from_slice(&self.chunk_length.to_be_bytes());
        out.extend_from_slice(&self.uncompressed_len.to_be_bytes());
        out.extend_from_slice(&self.partition_count.to_be_bytes());
        for s in self.sections() {
            out.extend_from_slice(&s.offset.to_be_bytes());
            out.extend_from_slice(&s.len.to_be_bytes());
            out.extend_from_slice(&s.crc.to_be_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out.extend_from_slice(&MAGIC);
        out
    }

    /// Parses the last [`FOOTER_LEN`] bytes of a file.
    pub fn decode(bytes: &[u8]) -> Result<Footer, &'static str> {
        if bytes.len() != FOOTER_LEN as usize {
            return Err("footer has the wrong length");
        }
        let (body, rest) = bytes.split_at(FOOTER_BODY_LEN);
        if rest[4..] != MAGIC {
            return Err("bad footer magic");
        }
        let stored = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        if crc32fast::hash(body) != stored {
            return Err("footer checksum mismatch");
        }
        let mut r = Reader::new(body);
        let parse = |r: &mut Reader| -> Result<Footer, DecodeError> {
            let version = get_u16(r)?;
            let partition_encoding_version = r.u8()?;
            let compression = r.u8()?;
            let chunk_length = get_u32(r)?;
            let uncompressed_len = get_u64(r)?;
            let partition_count = get_u64(r)?;
            let mut sections = [Section::default(); SECTION_COUNT];
            for s in &mut sections {
                *s = Section {
                    offset: get_u64(r)?,
                    len: get_u64(r)?,
                    crc: get_u32(r)?,
                };
            }
            let [data, chunk_offsets, index, summary, bloom, stats] = sections;
            Ok(Footer {
                version,
                partition_encoding_version,
                compression: Compression::from_id(compression).unwrap_or(Compression::None),
                chunk_length,
                uncompressed_len,
                partition_count,
                data,
                chunk_offsets,
                index,
                summary,
                bloom,
                stats,
            })
        };
        let footer = parse(&mut r).map_err(|_| "truncated footer")?;
        if !READABLE_VERSIONS.contains(&footer.version) {
            return Err("unsupported sstable format version");
        }
        if !crate::encoding::READABLE_PARTITION_ENCODINGS
            .contains(&footer.partition_encoding_version)
        {
            return Err("unsupported partition encoding version");
        }
        // Format 3 and 4 entries hold encoding 3 (a stream of items, no body
        // length); formats 1 and 2 hold encodings 1 and 2.
        if (footer.version >= 3) != (footer.partition_encoding_version >= 3) {
            return Err("partition encoding version does not match the format version");
        }
        if Compression::from_id(body[3]).is_none() {
            return Err("unknown compression");
        }
        let cl = footer.chunk_length as usize;
        if !(MIN_CHUNK_LENGTH..=MAX_CHUNK_LENGTH).contains(&cl) {
            return Err("chunk length out of range");
        }
        Ok(footer)
    }

    /// Checks that the sections tile `[HEADER_LEN, file_len - FOOTER_LEN)`
    /// in order and respect their size limits.
    pub fn validate_layout(&self, file_len: u64) -> Result<(), &'static str> {
        let mut at = HEADER_LEN;
        for s in self.sections() {
            if s.offset != at {
                return Err("sections do not tile the file");
            }
            at = s
                .offset
                .checked_add(s.len)
                .ok_or("section length overflows")?;
        }
        if Some(at) != file_len.checked_sub(FOOTER_LEN) {
            return Err("sections do not end at the footer");
        }
        check_limit(
            self.chunk_offsets.len,
            MAX_CHUNK_OFFSETS_LEN,
            "chunk offset table too large",
        )?;
        check_limit(self.summary.len, MAX_SUMMARY_LEN, "summary too large")?;
        check_limit(self.bloom.len, MAX_BLOOM_LEN, "bloom filter too large")?;
        check_limit(self.stats.len, MAX_STATS_LEN, "statistics too large")?;
        Ok(())
    }
}

/// `Err(reason)` when `len > max`.
pub fn check_limit(len: u64, max: u64, reason: &'static str) -> Result<(), &'static str> {
    if len > max {
        Err(reason)
    } else {
        Ok(())
    }
}

pub fn get_u16(r: &mut Reader) -> Result<u16, DecodeError> {
    let b = r.take(2)?;
    Ok(u16::from_be_bytes([b[0], b[1]]))
}

pub fn get_u32(r: &mut Reader) -> Result<u32, DecodeError> {
    let b = r.take(4)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

pub fn get_u64(r: &mut Reader) -> Result<u64, DecodeError> {
    let b = r.take(8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_be_bytes(a))
}

/// A partition key with its u16 length: token i64, length u16, bytes.
pub fn put_key(out: &mut Vec<u8>, token: i64, key: &[u8]) {
    out.extend_from_slice(&token.to_be_bytes());
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.extend_from_slice(key);
}

/// Reads what [`put_key`] wrote, borrowing the key bytes.
pub fn get_key<'a>(r: &mut Reader<'a>) -> Result<(i64, &'a [u8]), DecodeError> {
    let token = r.i64()?;
    let len = get_u16(r)? as usize;
    Ok((token, r.take(len)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::READABLE_PARTITION_ENCODINGS;
    use proptest::prelude::*;

    fn sample(file_len: u64) -> Footer {
        let mut at = HEADER_LEN;
        let mut next = |len: u64| {
            let s = Section {
                offset: at,
                len,
                crc: len as u32,
            };
            at += len;
            s
        };
        let data = next(100);
        let chunk_offsets = next(16);
        let index = next(40);
        let summary = next(30);
        let bloom = next(20);
        let stats = next(file_len - FOOTER_LEN - HEADER_LEN - 206);
        Footer {
            version: FORMAT_VERSION,
            partition_encoding_version: crate::encoding::PARTITION_ENCODING_VERSION,
            compression: Compression::Lz4,
            chunk_length: 4096,
            uncompressed_len: 300,
            partition_count: 3,
            data,
            chunk_offsets,
            index,
            summary,
            bloom,
            stats,
        }
    }

    #[test]
    fn footer_round_trips_and_rejects_every_flip() {
        let f = sample(1000);
        let bytes = f.encode();
        assert_eq!(bytes.len() as u64, FOOTER_LEN);
        assert_eq!(Footer::decode(&bytes).unwrap(), f);
        f.validate_layout(1000).unwrap();
        assert!(f.validate_layout(999).is_err());
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(Footer::decode(&bad).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn section_limits_hold_at_n_and_fail_at_n_plus_one() {
        let stats_len = MAX_STATS_LEN;
        let file_len = HEADER_LEN + 206 + stats_len + FOOTER_LEN;
        assert!(sample(file_len).validate_layout(file_len).is_ok());
        let file_len = file_len + 1;
        assert_eq!(
            sample(file_len).validate_layout(file_len),
            Err("statistics too large")
        );
        assert!(check_limit(MAX_BLOOM_LEN, MAX_BLOOM_LEN, "x").is_ok());
        assert!(check_limit(MAX_BLOOM_LEN + 1, MAX_BLOOM_LEN, "x").is_err());
    }

    #[test]
    fn header_checks_magic_version_and_reserved_bytes() {
        let h = encode_header();
        assert!(check_header(&h, FORMAT_VERSION).is_ok());
        assert!(check_header(&h, FORMAT_VERSION + 1).is_err());
        for i in 0..h.len() {
            let mut bad = h.clone();
            bad[i] ^= 0x80;
            assert!(check_header(&bad, FORMAT_VERSION).is_err(), "flip at {i}");
        }
    }

    /// A section length up to `max`, its ends included.
    fn len_up_to(max: u64) -> BoxedStrategy<u64> {
        prop_oneof![Just(0), Just(max), 0..=max].boxed()
    }

    /// A footer this code reads: a readable version and partition
    /// encoding, either compression, a chunk length in range, any counts,
    /// and six sections of random lengths (within their limits) and CRCs
    /// that tile a file from the header to the footer. Returned with the
    /// length of that file.
    fn arb_footer() -> impl Strategy<Value = (Footer, u64)> {
        let fields = (
            prop::sample::select(READABLE_VERSIONS),
            prop::sample::select(READABLE_PARTITION_ENCODINGS),
            prop_oneof![Just(Compression::None), Just(Compression::Lz4)],
            prop_oneof![
                Just(MIN_CHUNK_LENGTH as u32),
                Just(MAX_CHUNK_LENGTH as u32),
                MIN_CHUNK_LENGTH as u32..=MAX_CHUNK_LENGTH as u32,
            ],
            any::<u64>(),
            any::<u64>(),
        );
        let lens = (
            len_up_to(1 << 40),
            len_up_to(MAX_CHUNK_OFFSETS_LEN),
            len_up_to(1 << 40),
            len_up_to(MAX_SUMMARY_LEN),
            len_up_to(MAX_BLOOM_LEN),
            len_up_to(MAX_STATS_LEN),
        );
        let crcs = prop::array::uniform6(any::<u32>());
        (fields, lens, crcs).prop_map(|(fields, lens, crcs)| {
            let (version, encoding, compression, chunk_length, uncompressed_len, partitions) =
                fields;
            // Format 3 holds encoding 3, formats 1 and 2 the older ones.
            let encoding = match (version >= 3, encoding >= 3) {
                (true, false) => 3,
                (false, true) => 2,
                _ => encoding,
            };
            let lens = [lens.0, lens.1, lens.2, lens.3, lens.4, lens.5];
            let mut at = HEADER_LEN;
            let mut sections = [Section::default(); SECTION_COUNT];
            for ((s, len), crc) in sections.iter_mut().zip(lens).zip(crcs) {
                *s = Section {
                    offset: at,
                    len,
                    crc,
                };
                at += len;
            }
            let [data, chunk_offsets, index, summary, bloom, stats] = sections;
            let footer = Footer {
                version,
                partition_encoding_version: encoding,
                compression,
                chunk_length,
                uncompressed_len,
                partition_count: partitions,
                data,
                chunk_offsets,
                index,
                summary,
                bloom,
                stats,
            };
            (footer, at + FOOTER_LEN)
        })
    }

    /// Section `i` of `f`, in file order.
    fn section_mut(f: &mut Footer, i: usize) -> &mut Section {
        match i {
            0 => &mut f.data,
            1 => &mut f.chunk_offsets,
            2 => &mut f.index,
            3 => &mut f.summary,
            4 => &mut f.bloom,
            _ => &mut f.stats,
        }
    }

    /// `bytes` (an encoded footer) with its CRC recomputed, so that only
    /// the field checks can reject it.
    fn with_crc_fixed(mut bytes: Vec<u8>) -> Vec<u8> {
        let crc = crc32fast::hash(&bytes[..FOOTER_BODY_LEN]);
        bytes[FOOTER_BODY_LEN..FOOTER_BODY_LEN + 4].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    proptest! {
        /// Any footer this code reads encodes to [`FOOTER_LEN`] bytes
        /// ending in the magic and decodes to itself; its sections pass the
        /// layout check for exactly the file they tile (not one byte
        /// shorter or longer); a footer one byte short or long is refused.
        #[test]
        fn any_valid_footer_round_trips_and_fits_only_its_file((f, file_len) in arb_footer()) {
            let bytes = f.encode();
            prop_assert_eq!(bytes.len() as u64, FOOTER_LEN);
            prop_assert_eq!(&bytes[bytes.len() - MAGIC.len()..], &MAGIC[..]);
            prop_assert_eq!(Footer::decode(&bytes), Ok(f.clone()));
            prop_assert_eq!(f.validate_layout(file_len), Ok(()));
            prop_assert!(f.validate_layout(file_len - 1).is_err());
            prop_assert!(f.validate_layout(file_len + 1).is_err());
            prop_assert!(Footer::decode(&bytes[..bytes.len() - 1]).is_err());
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(Footer::decode(&longer).is_err());
        }

        /// Moving one section's offset, or changing its length, by a few
        /// bytes breaks the tiling: the layout check fails whichever
        /// section it is.
        #[test]
        fn a_section_moved_or_resized_fails_the_layout_check(
            (f, file_len) in arb_footer(),
            which in 0..SECTION_COUNT,
            move_offset in any::<bool>(),
            delta in prop_oneof![-3i64..0, 1i64..4],
        ) {
            let mut bad = f.clone();
            let s = section_mut(&mut bad, which);
            let field = if move_offset { &mut s.offset } else { &mut s.len };
            let Some(changed) = field.checked_add_signed(delta) else {
                return Ok(());
            };
            *field = changed;
            prop_assert!(bad.validate_layout(file_len).is_err(), "{:?}", bad);
        }

        /// Every byte of the footer is checked, so any change to one byte
        /// (any bit pattern) fails decoding: bytes 0..144 are under the
        /// footer CRC, and CRC32 detects every error confined to 32
        /// consecutive bits, hence every single-byte change; bytes 144..148
        /// are that CRC, which then no longer matches the body; bytes
        /// 148..156 are the magic, compared exactly. No byte is left
        /// without a check, so no flip can decode to a different footer.
        #[test]
        fn every_changed_footer_byte_is_detected(
            (f, _) in arb_footer(),
            at in 0..FOOTER_LEN as usize,
            mask in 1u8..,
        ) {
            let mut bad = f.encode();
            bad[at] ^= mask;
            prop_assert!(Footer::decode(&bad).is_err(), "byte {} ^ {:#x}", at, mask);
        }

        /// A footer with a correct CRC but a version, partition encoding,
        /// compression id or chunk length this code does not read is
        /// refused.
        #[test]
        fn footer_fields_outside_what_is_read_are_refused(
            (f, _) in arb_footer(),
            which in 0..4usize,
            version in any::<u16>().prop_filter("unreadable", |v| !READABLE_VERSIONS.contains(v)),
            encoding in any::<u8>()
                .prop_filter("unreadable", |v| !READABLE_PARTITION_ENCODINGS.contains(v)),
            compression in 2u8..,
            chunk_length in prop_oneof![
                0..MIN_CHUNK_LENGTH as u32,
                MAX_CHUNK_LENGTH as u32 + 1..,
            ],
        ) {
            let mut bytes = f.encode();
            match which {
                0 => bytes[0..2].copy_from_slice(&version.to_be_bytes()),
                1 => bytes[2] = encoding,
                2 => bytes[3] = compression,
                _ => bytes[4..8].copy_from_slice(&chunk_length.to_be_bytes()),
            }
            prop_assert!(Footer::decode(&with_crc_fixed(bytes)).is_err());
        }

        /// The header passes only for the footer version it was written
        /// with, and any change to one of its bytes fails it: it has no
        /// CRC, but every byte is checked exactly (magic, version against
        /// the footer's, reserved bytes zero).
        #[test]
        fn the_header_matches_only_its_version_and_detects_any_changed_byte(
            footer_version in prop_oneof![Just(FORMAT_VERSION), any::<u16>()],
            at in 0..HEADER_LEN as usize,
            mask in 1u8..,
        ) {
            let h = encode_header();
            let ok = check_header(&h, footer_version).is_ok();
            prop_assert_eq!(ok, footer_version == FORMAT_VERSION);
            let mut bad = h.clone();
            bad[at] ^= mask;
            prop_assert!(check_header(&bad, FORMAT_VERSION).is_err(), "byte {} ^ {:#x}", at, mask);
        }
    }
}
