//! The commitlog (being built).
