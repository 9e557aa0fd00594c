//! A small least-recently-used memo, kept per thread by the statement
//! compilers (SELECT projections, prepared INSERTs).
//!
//! Entries are found by a predicate over their keys, so a key can be
//! compared in full (a table's `Arc` by identity, an AST by equality)
//! without hashing it. A hit moves to the back; inserting past the
//! capacity drops the front, the least recently used.

use std::sync::Arc;

pub struct Lru<K, V> {
    entries: Vec<(K, Arc<V>)>,
    capacity: usize,
}

impl<K, V> Lru<K, V> {
    pub const fn new(capacity: usize) -> Self {
        Lru {
            entries: Vec::new(),
            capacity,
        }
    }

    /// The value of the first entry whose key `hit` accepts, now the most
    /// recently used.
    pub fn find(&mut self, hit: impl Fn(&K) -> bool) -> Option<Arc<V>> {
        let at = self.entries.iter().position(|(k, _)| hit(k))?;
        let entry = self.entries.remove(at);
        let value = Arc::clone(&entry.1);
        self.entries.push(entry);
        Some(value)
    }

    /// The value of the entry `hit` accepts; else `make`'s, remembered
    /// under `key()` (an error is returned, not remembered).
    pub fn get_or_try_insert_with<E>(
        &mut self,
        hit: impl Fn(&K) -> bool,
        key: impl FnOnce() -> K,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<Arc<V>, E> {
        if let Some(v) = self.find(hit) {
            return Ok(v);
        }
        let v = Arc::new(make()?);
        self.insert(key(), Arc::clone(&v));
        Ok(v)
    }

    /// Remembers `value` under `key`, dropping the least recently used
    /// entry when full.
    pub fn insert(&mut self, key: K, value: Arc<V>) {
        if self.entries.len() >= self.capacity {
            self.entries.remove(0);
        }
        self.entries.push((key, value));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
