//! A simulated file system for crash tests (being built).
