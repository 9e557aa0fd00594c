//! What every sstable of one node shares: the chunk cache, the key cache's
//! byte budget and the trust of verified chunks. The engine owns one
//! [`NodeCaches`] and hands it to each sstable it opens, so two engines in
//! one process (the cluster simulation runs several nodes in one) never
//! share a budget. An sstable opened on its own (tools, tests) gets caches
//! of its own.

use crate::sstable::block_cache::BlockCache;
use crate::sstable::chunks::{ChunkTrust, TRUSTED_CHUNK_BYTES_MAX};
use crate::sstable::key_cache::{KeyCacheBudget, DEFAULT_KEY_CACHE_BYTES};
use std::sync::Arc;

/// One node's caches over its sstables.
#[derive(Clone)]
pub struct NodeCaches {
    /// Data chunks and index spans (`file_cache_size`).
    pub blocks: Arc<BlockCache>,
    /// The key cache's bytes over all sstables (`key_cache_size`).
    pub keys: Arc<KeyCacheBudget>,
    /// Which verified chunks skip their CRC check.
    pub trust: Arc<ChunkTrust>,
}

impl Default for NodeCaches {
    /// The defaults: an unsized chunk cache (the node sets
    /// `file_cache_size`), Cassandra's default key cache budget, and
    /// [`TRUSTED_CHUNK_BYTES_MAX`] of trust.
    fn default() -> Self {
        NodeCaches {
            blocks: Arc::default(),
            keys: Arc::new(KeyCacheBudget::new(DEFAULT_KEY_CACHE_BYTES)),
            trust: Arc::new(ChunkTrust::new(TRUSTED_CHUNK_BYTES_MAX)),
        }
    }
}
