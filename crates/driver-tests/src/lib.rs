//! `varve-driver-tests`: this crate exists only for its integration tests.
//!
//! It holds no library code. Its tests (`tests/*.rs`) start the real `varve`
//! binary over TCP and drive it with third-party CQL drivers from crates.io
//! (today the `scylla` crate), proving that an application written for
//! Cassandra talks to Varve unchanged: connect, schema metadata, prepared
//! statements with token-aware routing, paging, batches and LWT.
//!
//! The tests need the binary first: `cargo build -p varve` (or set
//! `VARVE_BIN` to its path). Nothing in the workspace depends on this crate,
//! and it depends on no Varve crate: it sees Varve only as a driver does.
