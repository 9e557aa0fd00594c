//! The node's generation: the wall-clock second it started, kept strictly
//! above the last one it used, as Cassandra keeps its generation.
//!
//! Peers take a state with a higher generation as a restart and drop the
//! older one, so a node must never reuse or go back on a generation, even
//! when it restarts within the same second or its clock was set back. The
//! last generation is kept in the file [`GENERATION_FILE`] of a directory
//! the caller gives (the node's data directory), as decimal text,
//! replaced atomically (written beside, synced, renamed, directory
//! synced) before the node uses it. A damaged file stops the node rather
//! than risk a generation its peers would ignore.
//!
//! The file lives outside `Env` for now: it is read once at start, so a
//! simulation that gives each node its own directory still replays. It
//! moves behind `Env::fs` with the first step that stores more cluster
//! state.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::env::Clock;

/// The file name, in the directory the caller gives.
pub const GENERATION_FILE: &str = "generation";

/// Longest generation file read (an i64 in decimal is at most 20 bytes).
pub const GENERATION_FILE_BYTES_MAX: usize = 32;

/// Why no generation could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum GenerationError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not a generation ({reason}); fix or remove the file")]
    Corrupt { path: PathBuf, reason: String },
    #[error("the last generation {0} leaves no higher one")]
    Exhausted(i64),
}

/// The generation to start with, given the last one used and the clock's
/// seconds: `now`, unless that is not above `last`, then `last + 1`;
/// never below 1 (0 means "none" in HELLO).
pub fn choose(last: Option<i64>, now_seconds: i64) -> Result<i64, GenerationError> {
    let floor = match last {
        Some(last) => last
            .checked_add(1)
            .ok_or(GenerationError::Exhausted(last))?,
        None => 1,
    };
    Ok(now_seconds.max(floor).max(1))
}

/// Chooses this start's generation and records it in `dir` (created if
/// missing) before returning it.
pub fn next_generation(dir: &Path, clock: &dyn Clock) -> Result<i64, GenerationError> {
    next_generation_at(dir, clock.wall_micros().div_euclid(1_000_000))
}

/// [`next_generation`] with the clock's seconds given.
pub fn next_generation_at(dir: &Path, now_seconds: i64) -> Result<i64, GenerationError> {
    let last = read(dir)?;
    let generation = choose(last, now_seconds)?;
    write(dir, generation)?;
    Ok(generation)
}

/// The last generation recorded in `dir`, if any.
pub fn read(dir: &Path) -> Result<Option<i64>, GenerationError> {
    let path = dir.join(GENERATION_FILE);
    let io_error = |source| GenerationError::Io {
        path: path.clone(),
        source,
    };
    let file = match fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(e)),
    };
    let mut bytes = Vec::new();
    // One byte more than the limit tells a file that is too long.
    io::Read::read_to_end(
        &mut io::Read::take(file, GENERATION_FILE_BYTES_MAX as u64 + 1),
        &mut bytes,
    )
    .map_err(io_error)?;
    let corrupt = |reason: String| GenerationError::Corrupt {
        path: path.clone(),
        reason,
    };
    if bytes.len() > GENERATION_FILE_BYTES_MAX {
        return Err(corrupt(format!(
            "longer than {GENERATION_FILE_BYTES_MAX} bytes"
        )));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| corrupt("not UTF-8".into()))?;
    let value: i64 = text
        .trim()
        .parse()
        .map_err(|e| corrupt(format!("{e}: {:?}", text.trim())))?;
    if value < 1 {
        return Err(corrupt(format!("{value} is not positive")));
    }
    Ok(Some(value))
}

fn write(dir: &Path, generation: i64) -> Result<(), GenerationError> {
    let path = dir.join(GENERATION_FILE);
    let temp = dir.join(format!("{GENERATION_FILE}.tmp"));
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GenerationError::Io { path, source }
    };
    fs::create_dir_all(dir).map_err(io_error(dir))?;
    let mut file = fs::File::create(&temp).map_err(io_error(&temp))?;
    file.write_all(format!("{generation}\n").as_bytes())
        .map_err(io_error(&temp))?;
    file.sync_all().map_err(io_error(&temp))?;
    drop(file);
    fs::rename(&temp, &path).map_err(io_error(&path))?;
    // The rename is durable once the directory is synced.
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("varve-generation-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_rule() {
        assert_eq!(choose(None, 1_700_000_000).ok(), Some(1_700_000_000));
        // Same second as last time: N + 1.
        assert_eq!(
            choose(Some(1_700_000_000), 1_700_000_000).ok(),
            Some(1_700_000_001)
        );
        // Clock set back: still above the last.
        assert_eq!(
            choose(Some(1_700_000_000), 1_600_000_000).ok(),
            Some(1_700_000_001)
        );
        // Clock moved on: the clock.
        assert_eq!(
            choose(Some(1_700_000_000), 1_700_000_005).ok(),
            Some(1_700_000_005)
        );
        // A clock before 1970 still gives a positive generation.
        assert_eq!(choose(None, -5).ok(), Some(1));
        assert!(matches!(
            choose(Some(i64::MAX), 0),
            Err(GenerationError::Exhausted(i64::MAX))
        ));
        assert_eq!(choose(Some(i64::MAX - 1), 0).ok(), Some(i64::MAX));
    }

    #[test]
    fn generations_are_recorded_and_strictly_increase() {
        let dir = TempDir::new("increase");
        let path = &dir.0;
        assert_eq!(read(path).ok(), Some(None));
        assert_eq!(next_generation_at(path, 1_000).ok(), Some(1_000));
        assert_eq!(read(path).ok(), Some(Some(1_000)));
        assert_eq!(next_generation_at(path, 1_000).ok(), Some(1_001));
        assert_eq!(next_generation_at(path, 900).ok(), Some(1_002));
        assert_eq!(next_generation_at(path, 2_000).ok(), Some(2_000));
        assert_eq!(
            fs::read_to_string(path.join(GENERATION_FILE))
                .ok()
                .as_deref(),
            Some("2000\n")
        );
        assert!(!path.join("generation.tmp").exists());
    }

    #[test]
    fn the_system_clock_gives_seconds_since_1970() {
        let dir = TempDir::new("clock");
        let g = next_generation(&dir.0, &crate::env::SystemClock).expect("chosen");
        // After 2020-01-01, and in seconds, not micros.
        assert!(g > 1_577_836_800 && g < 100_000_000_000, "{g}");
    }

    #[test]
    fn damaged_files_stop_the_node() {
        let dir = TempDir::new("damaged");
        fs::create_dir_all(&dir.0).expect("mkdir");
        let file = dir.0.join(GENERATION_FILE);
        for bad in ["", "abc", "12x", "-4", "0", "99999999999999999999999"] {
            fs::write(&file, bad).expect("write");
            assert!(
                matches!(read(&dir.0), Err(GenerationError::Corrupt { .. })),
                "{bad:?}"
            );
            assert!(next_generation_at(&dir.0, 5).is_err());
        }
        fs::write(&file, [0xff, 0xfe]).expect("write");
        assert!(matches!(read(&dir.0), Err(GenerationError::Corrupt { .. })));
    }

    #[test]
    fn file_length_at_n_and_n_plus_one() {
        let dir = TempDir::new("length");
        fs::create_dir_all(&dir.0).expect("mkdir");
        let file = dir.0.join(GENERATION_FILE);
        let padded = |len: usize| format!("{:>width$}", "77", width = len);
        fs::write(&file, padded(GENERATION_FILE_BYTES_MAX)).expect("write");
        assert_eq!(read(&dir.0).ok(), Some(Some(77)));
        fs::write(&file, padded(GENERATION_FILE_BYTES_MAX + 1)).expect("write");
        assert!(matches!(read(&dir.0), Err(GenerationError::Corrupt { .. })));
    }
}
