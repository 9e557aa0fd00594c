//! A table's manifest: which sstables are live, and up to where the
//! commitlog is already in them. Rewritten atomically (temporary file,
//! fsync, rename, directory fsync) whenever the live set changes, so a crash
//! never leaves a half-written sstable in use and a replaced one is never
//! resurrected. Format: docs/format/manifest.md.

use crate::error::{Error, Result};
use crate::fs::Fs;
use std::path::{Path, PathBuf};

pub const MANIFEST_FILE: &str = "manifest";
pub const MANIFEST_VERSION: u32 = 1;

/// A commitlog position as the manifest stores it: (segment id, offset).
pub type LogPosition = (u64, u64);

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Generations of the live sstables (file `<generation>.sst`).
    pub live: Vec<u64>,
    /// Commitlog entries of this table at or before this position are in
    /// the live sstables (or were truncated away): replay skips them.
    pub replayed_up_to: Option<LogPosition>,
    /// The next generation number to use.
    pub next_generation: u64,
    /// Level of live sstables above level 0 (LCS / UCS), by generation.
    pub levels: std::collections::BTreeMap<u64, u32>,
}

impl Manifest {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(MANIFEST_FILE)
    }

    /// Reads the manifest of a table directory (empty if there is none).
    pub fn load(fs: &dyn Fs, dir: &Path) -> Result<Manifest> {
        let path = Manifest::path(dir);
        if !fs.exists(&path) {
            return Ok(Manifest {
                next_generation: 1,
                ..Manifest::default()
            });
        }
        let bytes = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
        Manifest::decode(&bytes)
            .map_err(|(offset, reason)| Error::corruption(&path, offset, reason))
    }

    /// Writes it durably.
    pub fn store(&self, fs: &dyn Fs, dir: &Path) -> Result<()> {
        let path = Manifest::path(dir);
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let mut f = fs.create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(&self.encode())
            .map_err(|e| Error::io(&tmp, e))?;
        f.sync().map_err(|e| Error::io(&tmp, e))?;
        drop(f);
        fs.rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
    }

    /// Text lines: `varve-manifest <version>`, `next <gen>`, `replayed <seg> <off>`,
    /// `live <gen>`..., then `crc <crc32 of the lines above>`.
    fn encode(&self) -> Vec<u8> {
        let mut s = format!(
            "varve-manifest {MANIFEST_VERSION}\nnext {}\n",
            self.next_generation
        );
        if let Some((seg, off)) = self.replayed_up_to {
            s.push_str(&format!("replayed {seg} {off}\n"));
        }
        for g in &self.live {
            s.push_str(&format!("live {g}\n"));
        }
        for (g, l) in &self.levels {
            if *l > 0 && self.live.contains(g) {
                s.push_str(&format!("level {g} {l}\n"));
            }
        }
        let crc = crc32fast::hash(s.as_bytes());
        s.push_str(&format!("crc {crc}\n"));
        s.into_bytes()
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Manifest, (u64, String)> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| (e.valid_up_to() as u64, "not UTF-8".to_string()))?;
        let body_end = text
            .rfind("crc ")
            .ok_or((0, "no checksum line".to_string()))?;
        let (body, crc_line) = text.split_at(body_end);
        let want: u32 = crc_line
            .trim()
            .strip_prefix("crc ")
            .and_then(|c| c.parse().ok())
            .ok_or((body_end as u64, "bad checksum line".to_string()))?;
        if crc32fast::hash(body.as_bytes()) != want {
            return Err((0, "checksum mismatch".into()));
        }
        let mut m = Manifest::default();
        let mut offset = 0u64;
        for (i, line) in body.lines().enumerate() {
            let parts: Vec<&str> = line.split(' ').collect();
            let num = |k: usize| -> std::result::Result<u64, (u64, String)> {
                parts
                    .get(k)
                    .and_then(|p| p.parse().ok())
                    .ok_or((offset, format!("bad line {line:?}")))
            };
            match (i, parts.first().copied()) {
                (0, Some("varve-manifest")) => {
                    if num(1)? != MANIFEST_VERSION as u64 {
                        return Err((offset, format!("unsupported manifest version in {line:?}")));
                    }
                }
                (0, _) => return Err((0, "not a manifest".into())),
                (_, Some("next")) => m.next_generation = num(1)?,
                (_, Some("replayed")) => m.replayed_up_to = Some((num(1)?, num(2)?)),
                (_, Some("live")) => m.live.push(num(1)?),
                (_, Some("level")) => {
                    let level = u32::try_from(num(2)?)
                        .map_err(|_| (offset, format!("bad level in {line:?}")))?;
                    m.levels.insert(num(1)?, level);
                }
                _ => return Err((offset, format!("unknown line {line:?}"))),
            }
            offset += line.len() as u64 + 1;
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_detects_damage() {
        let mut m = Manifest {
            live: vec![3, 7],
            replayed_up_to: Some((2, 4096)),
            next_generation: 8,
            ..Manifest::default()
        };
        m.levels.insert(7, 2);
        let bytes = m.encode();
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(
                Manifest::decode(&bad).is_err() || Manifest::decode(&bad).unwrap() == m,
                "flip at {i}"
            );
        }
        for cut in 0..bytes.len() - 1 {
            assert!(Manifest::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
