//! STREAM_FILE and STREAM_FILE_OFFER: whole sstables sent as files
//! (docs/design/topology.md, section 4; docs/format/internode.md,
//! section 6).
//!
//! STREAM_FILE is asked of the node that sends, by the node that
//! receives; its first byte is the `kind`:
//! - 0 LIST: table id u128; `count` varint (1 ..= [`MAX_STREAM_FILE_RANGES`])
//!   × range (start i64, end i64: `(start, end]`, the whole ring when
//!   equal). The source flushes the table, holds every live sstable whose
//!   token span lies inside one of the ranges (at most
//!   [`MAX_STREAM_FILES`]) and answers `kind`, session u64 (0: nothing
//!   held), `count` varint × file ([`FileInfo`]).
//! - 1 CHUNK: session u64; table id u128; generation u64; offset u64;
//!   `max_bytes` varint (1 ..= [`MAX_STREAM_FILE_CHUNK_BYTES`]). Answer:
//!   `kind`, the bytes from the offset (`bytes`, `max_bytes` of them or
//!   what is left of the file), their CRC32 u32.
//! - 2 RELEASE: session u64. Answer: `kind` alone. The source lets the
//!   session's files go.
//!
//! STREAM_FILE_OFFER is sent by a node that gives ranges away (a
//! decommission) to the node that takes them: table id u128; session u64
//! (held by the sender); the sender's host id (16 bytes) and address (as
//! in HELLO); the ranges, as in LIST; `count` varint (1 ..=
//! [`MAX_STREAM_FILES`]) × file. The receiver fetches the files with
//! STREAM_FILE CHUNK from the sender and answers with the generations
//! (the sender's) it installed: `count` varint × u64.
//!
//! A file is: generation u64, size u64, first and last token i64 (first
//! at most last), partitions u64, whole-file CRC32 u32; a list's
//! generations are strictly increasing.

use bytes::Bytes;

use super::codec::{count, put_table, read_table, PayloadError};
use crate::net::wire::{put_address, put_bytes, put_varint, read_address, Reader};
use crate::net::HostId;

/// Largest chunk a CHUNK request may ask for.
pub const MAX_STREAM_FILE_CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// Most files one LIST answer or one OFFER names, and most generations a
/// STREAM_PULL leaves out.
pub const MAX_STREAM_FILES: usize = 4096;

/// Most ranges one LIST or OFFER names.
pub const MAX_STREAM_FILE_RANGES: usize = 4096;

const KIND_LIST: u8 = 0;
const KIND_CHUNK: u8 = 1;
const KIND_RELEASE: u8 = 2;

/// One sstable a source offers whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    pub generation: u64,
    pub size: u64,
    pub first_token: i64,
    pub last_token: i64,
    pub partitions: u64,
    /// The CRC32 of the whole file.
    pub crc: u32,
}

impl FileInfo {
    /// The span storage knows it by.
    pub fn span(&self) -> varve_storage::SstableSpan {
        varve_storage::SstableSpan {
            generation: self.generation,
            first_token: self.first_token,
            last_token: self.last_token,
            size_bytes: self.size,
            partitions: self.partitions,
        }
    }
}

/// A STREAM_FILE request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRequest {
    List {
        table: u128,
        ranges: Vec<(i64, i64)>,
    },
    Chunk {
        session: u64,
        table: u128,
        generation: u64,
        offset: u64,
        max_bytes: usize,
    },
    Release {
        session: u64,
    },
}

/// A STREAM_FILE answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileResponse {
    Listed { session: u64, files: Vec<FileInfo> },
    Chunk { bytes: Bytes, crc: u32 },
    Released,
}

/// A STREAM_FILE_OFFER.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub table: u128,
    pub session: u64,
    pub source: HostId,
    pub address: std::net::SocketAddr,
    pub ranges: Vec<(i64, i64)>,
    pub files: Vec<FileInfo>,
}

pub fn encode_request(req: &FileRequest) -> Bytes {
    let mut out = Vec::with_capacity(64);
    match req {
        FileRequest::List { table, ranges } => {
            out.push(KIND_LIST);
            put_table(&mut out, *table);
            put_ranges(&mut out, ranges);
        }
        FileRequest::Chunk {
            session,
            table,
            generation,
            offset,
            max_bytes,
        } => {
            out.push(KIND_CHUNK);
            out.extend_from_slice(&session.to_be_bytes());
            put_table(&mut out, *table);
            out.extend_from_slice(&generation.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
            put_varint(
                &mut out,
                (*max_bytes).clamp(1, MAX_STREAM_FILE_CHUNK_BYTES) as u64,
            );
        }
        FileRequest::Release { session } => {
            out.push(KIND_RELEASE);
            out.extend_from_slice(&session.to_be_bytes());
        }
    }
    Bytes::from(out)
}

pub fn decode_request(payload: &Bytes) -> Result<FileRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let req = match r.u8()? {
        KIND_LIST => FileRequest::List {
            table: read_table(&mut r)?,
            ranges: read_ranges(&mut r)?,
        },
        KIND_CHUNK => {
            let session = r.u64()?;
            let table = read_table(&mut r)?;
            let generation = r.u64()?;
            let offset = r.u64()?;
            let max_bytes = count(&mut r, "chunk bytes", MAX_STREAM_FILE_CHUNK_BYTES)?;
            if max_bytes == 0 {
                return Err(PayloadError::Malformed("a chunk of no bytes".into()));
            }
            FileRequest::Chunk {
                session,
                table,
                generation,
                offset,
                max_bytes,
            }
        }
        KIND_RELEASE => FileRequest::Release { session: r.u64()? },
        k => return Err(PayloadError::Malformed(format!("stream file kind {k}"))),
    };
    r.finish()?;
    Ok(req)
}

pub fn encode_response(rsp: &FileResponse) -> Bytes {
    let mut out = Vec::with_capacity(64);
    match rsp {
        FileResponse::Listed { session, files } => {
            out.push(KIND_LIST);
            out.extend_from_slice(&session.to_be_bytes());
            put_files(&mut out, files);
        }
        FileResponse::Chunk { bytes, crc } => {
            out.reserve(bytes.len() + 16);
            out.push(KIND_CHUNK);
            put_bytes(&mut out, bytes);
            out.extend_from_slice(&crc.to_be_bytes());
        }
        FileResponse::Released => out.push(KIND_RELEASE),
    }
    Bytes::from(out)
}

pub fn decode_response(payload: &Bytes) -> Result<FileResponse, PayloadError> {
    let mut r = Reader::new(payload);
    let rsp = match r.u8()? {
        KIND_LIST => FileResponse::Listed {
            session: r.u64()?,
            files: read_files(&mut r, 0)?,
        },
        KIND_CHUNK => {
            let data = r.bytes("chunk", MAX_STREAM_FILE_CHUNK_BYTES)?;
            FileResponse::Chunk {
                bytes: payload.slice_ref(data),
                crc: r.u32()?,
            }
        }
        KIND_RELEASE => FileResponse::Released,
        k => return Err(PayloadError::Malformed(format!("stream file kind {k}"))),
    };
    r.finish()?;
    Ok(rsp)
}

pub fn encode_offer(offer: &Offer) -> Bytes {
    let mut out = Vec::with_capacity(64 + offer.files.len() * 44);
    put_table(&mut out, offer.table);
    out.extend_from_slice(&offer.session.to_be_bytes());
    out.extend_from_slice(&offer.source.0);
    put_address(&mut out, offer.address);
    put_ranges(&mut out, &offer.ranges);
    put_files(&mut out, &offer.files);
    Bytes::from(out)
}

pub fn decode_offer(payload: &Bytes) -> Result<Offer, PayloadError> {
    let mut r = Reader::new(payload);
    let offer = Offer {
        table: read_table(&mut r)?,
        session: r.u64()?,
        source: HostId(r.array::<16>()?),
        address: read_address(&mut r)?,
        ranges: read_ranges(&mut r)?,
        files: read_files(&mut r, 1)?,
    };
    r.finish()?;
    Ok(offer)
}

/// The answer to an offer: the offered generations installed.
pub fn encode_installed(generations: &[u64]) -> Bytes {
    let mut out = Vec::with_capacity(8 + generations.len() * 8);
    put_generations(&mut out, generations);
    Bytes::from(out)
}

pub fn decode_installed(payload: &Bytes) -> Result<Vec<u64>, PayloadError> {
    let mut r = Reader::new(payload);
    let gens = read_generations(&mut r)?;
    r.finish()?;
    Ok(gens)
}

/// Appends a list of generations (STREAM_PULL's sstables to leave out,
/// an offer's answer).
pub fn put_generations(out: &mut Vec<u8>, generations: &[u64]) {
    put_varint(out, generations.len() as u64);
    for g in generations {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

/// Reads at most [`MAX_STREAM_FILES`] generations.
pub fn read_generations(r: &mut Reader<'_>) -> Result<Vec<u64>, PayloadError> {
    let n = count(r, "generations", MAX_STREAM_FILES)?;
    let mut out = Vec::with_capacity(n.min(r.remaining() / 8));
    for _ in 0..n {
        out.push(r.u64()?);
    }
    Ok(out)
}

fn put_ranges(out: &mut Vec<u8>, ranges: &[(i64, i64)]) {
    put_varint(out, ranges.len() as u64);
    for (start, end) in ranges {
        out.extend_from_slice(&start.to_be_bytes());
        out.extend_from_slice(&end.to_be_bytes());
    }
}

fn read_ranges(r: &mut Reader<'_>) -> Result<Vec<(i64, i64)>, PayloadError> {
    let n = count(r, "ranges", MAX_STREAM_FILE_RANGES)?;
    if n == 0 {
        return Err(PayloadError::Malformed("no ranges".into()));
    }
    let mut out = Vec::with_capacity(n.min(r.remaining() / 16));
    for _ in 0..n {
        out.push((r.i64()?, r.i64()?));
    }
    Ok(out)
}

fn put_files(out: &mut Vec<u8>, files: &[FileInfo]) {
    put_varint(out, files.len() as u64);
    for f in files {
        out.extend_from_slice(&f.generation.to_be_bytes());
        out.extend_from_slice(&f.size.to_be_bytes());
        out.extend_from_slice(&f.first_token.to_be_bytes());
        out.extend_from_slice(&f.last_token.to_be_bytes());
        out.extend_from_slice(&f.partitions.to_be_bytes());
        out.extend_from_slice(&f.crc.to_be_bytes());
    }
}

/// Reads `min ..= MAX_STREAM_FILES` files, in strictly increasing
/// generation order, each with its first token at most its last.
fn read_files(r: &mut Reader<'_>, min: usize) -> Result<Vec<FileInfo>, PayloadError> {
    let n = count(r, "files", MAX_STREAM_FILES)?;
    if n < min {
        return Err(PayloadError::Malformed("no files".into()));
    }
    let mut out: Vec<FileInfo> = Vec::with_capacity(n.min(r.remaining() / 44));
    for _ in 0..n {
        let f = FileInfo {
            generation: r.u64()?,
            size: r.u64()?,
            first_token: r.i64()?,
            last_token: r.i64()?,
            partitions: r.u64()?,
            crc: r.u32()?,
        };
        if f.first_token > f.last_token {
            return Err(PayloadError::Malformed(format!(
                "file {} ends before it starts",
                f.generation
            )));
        }
        if out.last().is_some_and(|p| p.generation >= f.generation) {
            return Err(PayloadError::Malformed(
                "files out of generation order".into(),
            ));
        }
        out.push(f);
    }
    Ok(out)
}

/// For the internode fuzz target (`crate::net::fuzz`): whatever decodes
/// encodes back to itself.
pub fn fuzz_decode(payload: &[u8]) {
    let bytes = Bytes::copy_from_slice(payload);
    if let Ok(req) = decode_request(&bytes) {
        assert_eq!(decode_request(&encode_request(&req)), Ok(req));
    }
    if let Ok(rsp) = decode_response(&bytes) {
        assert_eq!(decode_response(&encode_response(&rsp)), Ok(rsp));
    }
    if let Ok(offer) = decode_offer(&bytes) {
        assert_eq!(decode_offer(&encode_offer(&offer)), Ok(offer));
    }
    if let Ok(gens) = decode_installed(&bytes) {
        assert_eq!(decode_installed(&encode_installed(&gens)), Ok(gens));
    }
}

#[cfg(test)]
#[path = "stream_file_tests.rs"]
mod tests;
