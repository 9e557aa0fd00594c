//! varve-schema (being built).
