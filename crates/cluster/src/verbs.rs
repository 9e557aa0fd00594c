//! The data verbs: their payload codecs (docs/format/internode.md, section
//! 6) and what a replica does with each ([`replica`]).
//!
//! [`mutation`] (MUTATION), [`read`] (READ and its data response),
//! [`range`] (RANGE_READ of keys), [`range_rows`] (RANGE_READ of rows,
//! which a replica answers with [`replica_range`]), [`stream`] (STREAM_PULL pages),
//! [`stream_file`] (STREAM_FILE and STREAM_FILE_OFFER: whole sstables),
//! and [`codec`], the pieces they share.
//! TRUNCATE's payload is a table id alone.

pub mod batch;
pub mod codec;
pub mod mutation;
pub mod range;
pub mod range_rows;
pub mod read;
pub mod replica;
pub mod replica_range;
pub mod stream;
pub mod stream_file;

pub use replica::Replica;

#[cfg(test)]
mod range_rows_tests;
#[cfg(test)]
mod tests;
