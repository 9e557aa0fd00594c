//! A table's manifest: which sstables are live, and up to where the
//! commitlog is already in them. Rewritten atomically (temporary file,
//! fsync, rename, directory fsync) whenever the live set changes, so a crash
//! never leaves a half-written sstable in use and a replaced one is never
//! resurrected. Format: docs/format/manifest.md.

use crate::error::{Error, Result};
use crate::fs::Fs;
use std::path::{Path, PathBuf};

pub const MANIFEST_FILE: &str = "manifest";
/// The version written when no live sstable carries a repair mark (so a
/// table never repaired incrementally keeps the first format).
pub const MANIFEST_VERSION: u32 = 1;
/// The version written when some live sstable carries a repair mark
/// (`repaired` and `pending` lines); version 1 stays readable.
pub const MANIFEST_VERSION_REPAIR: u32 = 2;

/// Where an sstable stands in incremental repair (docs/design/topology.md,
/// section 6). An sstable without a mark is unrepaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairMark {
    /// Compared with the other replicas by an incremental repair that
    /// succeeded at this time (milliseconds since the epoch).
    Repaired { at_ms: i64 },
    /// Taken into the incremental repair session with this id, which has
    /// not ended yet.
    Pending { session: u128 },
}

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
    /// Repair marks of live sstables, by generation (none: unrepaired).
    pub repair: std::collections::BTreeMap<u64, RepairMark>,
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
        let marks: Vec<(&u64, &RepairMark)> = self
            .repair
            .iter()
            .filter(|(g, _)| self.live.contains(g))
            .collect();
        let version = match marks.is_empty() {
            true => MANIFEST_VERSION,
            false => MANIFEST_VERSION_REPAIR,
        };
        let mut s = format!("varve-manifest {version}\nnext {}\n", self.next_generation);
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
        for (g, mark) in marks {
            match mark {
                RepairMark::Repaired { at_ms } => s.push_str(&format!("repaired {g} {at_ms}\n")),
                RepairMark::Pending { session } => {
                    s.push_str(&format!("pending {g} {session:032x}\n"))
                }
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
        // Exactly `crc <digits>\n`: the line is not under its own CRC, so
        // a cut or changed final newline must not pass either.
        let want: u32 = crc_line
            .strip_prefix("crc ")
            .and_then(|c| c.strip_suffix('\n'))
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|c| c.parse().ok())
            .ok_or((body_end as u64, "bad checksum line".to_string()))?;
        if crc32fast::hash(body.as_bytes()) != want {
            return Err((0, "checksum mismatch".into()));
        }
        let mut m = Manifest::default();
        let mut version = 0u64;
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
                    version = num(1)?;
                    if version != MANIFEST_VERSION as u64
                        && version != MANIFEST_VERSION_REPAIR as u64
                    {
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
                (_, Some(kind @ ("repaired" | "pending")))
                    if version == MANIFEST_VERSION_REPAIR as u64 =>
                {
                    let mark = repair_mark(kind, parts.get(2).copied())
                        .filter(|_| parts.len() == 3)
                        .ok_or((offset, format!("bad line {line:?}")))?;
                    m.repair.insert(num(1)?, mark);
                }
                _ => return Err((offset, format!("unknown line {line:?}"))),
            }
            offset += line.len() as u64 + 1;
        }
        Ok(m)
    }
}

/// The mark of a `repaired <gen> <ms>` or `pending <gen> <hex>` line,
/// from its kind and third field.
fn repair_mark(kind: &str, value: Option<&str>) -> Option<RepairMark> {
    let value = value?;
    match kind {
        "repaired" => Some(RepairMark::Repaired {
            at_ms: value.parse().ok()?,
        }),
        _ if value.len() == 32 && value.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(RepairMark::Pending {
                session: u128::from_str_radix(value, 16).ok()?,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

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
            assert!(Manifest::decode(&bad).is_err(), "flip at {i}");
        }
        for cut in 0..bytes.len() {
            assert!(Manifest::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// A generation: small, or anything up to `u64::MAX`.
    fn arb_generation() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..50, any::<u64>()]
    }

    /// Any manifest: live generations (repeats included), levels for
    /// some of them (0 among them) and for generations not live, any
    /// replay position and next generation.
    fn arb_manifest() -> impl Strategy<Value = Manifest> {
        let live = proptest::collection::vec(arb_generation(), 0..20);
        let live_levels = proptest::collection::vec(
            proptest::option::of(prop_oneof![Just(0u32), 1u32..8, any::<u32>()]),
            20,
        );
        let other_levels = proptest::collection::btree_map(arb_generation(), any::<u32>(), 0..4);
        let replayed = proptest::option::of((any::<u64>(), any::<u64>()));
        let marks = proptest::collection::vec(proptest::option::of(arb_mark()), 20);
        (
            live,
            live_levels,
            other_levels,
            replayed,
            any::<u64>(),
            marks,
        )
            .prop_map(
                |(live, live_levels, mut levels, replayed_up_to, next_generation, marks)| {
                    for (g, l) in live.iter().zip(live_levels) {
                        if let Some(l) = l {
                            levels.insert(*g, l);
                        }
                    }
                    let mut repair = BTreeMap::new();
                    for (g, mark) in live.iter().zip(marks) {
                        if let Some(mark) = mark {
                            repair.insert(*g, mark);
                        }
                    }
                    // A mark of a generation that is not live is never stored.
                    repair.insert(u64::MAX - 1, RepairMark::Repaired { at_ms: 1 });
                    Manifest {
                        live,
                        replayed_up_to,
                        next_generation,
                        levels,
                        repair,
                    }
                },
            )
    }

    /// Any repair mark.
    fn arb_mark() -> impl Strategy<Value = RepairMark> {
        prop_oneof![
            any::<i64>().prop_map(|at_ms| RepairMark::Repaired { at_ms }),
            any::<u128>().prop_map(|session| RepairMark::Pending { session }),
        ]
    }

    /// What a manifest reads back as: only the levels above 0 of live
    /// sstables are stored (level 0 is the default, and a level of an
    /// sstable no longer live means nothing).
    fn stored(m: &Manifest) -> Manifest {
        let levels: BTreeMap<u64, u32> = m
            .levels
            .iter()
            .filter(|(g, l)| **l > 0 && m.live.contains(g))
            .map(|(g, l)| (*g, *l))
            .collect();
        let repair = m
            .repair
            .iter()
            .filter(|(g, _)| m.live.contains(g))
            .map(|(g, r)| (*g, *r))
            .collect();
        Manifest {
            levels,
            repair,
            ..m.clone()
        }
    }

    proptest! {
        /// Any live set, levels, replay position and next generation
        /// read back as written (levels as [`stored`] says), and the
        /// manifest as read back encodes to the same bytes.
        #[test]
        fn any_manifest_round_trips(m in arb_manifest()) {
            let bytes = m.encode();
            let decoded = Manifest::decode(&bytes).unwrap();
            prop_assert_eq!(&decoded, &stored(&m));
            prop_assert_eq!(decoded.encode(), bytes);
        }

        /// Any change to one byte is detected. Every byte before the `crc`
        /// line is under the CRC32, which detects any single byte change;
        /// a changed byte of the `crc` line (its final newline included)
        /// makes the checksum line unreadable or names another number.
        #[test]
        fn a_changed_byte_is_detected(
            m in arb_manifest(),
            at in any::<prop::sample::Index>(),
            last in proptest::bool::weighted(0.2),
            mask in prop_oneof![1u8.., Just(b'\n' ^ b' '), Just(b'\n' ^ b'\r')],
        ) {
            let mut bad = m.encode();
            let i = if last { bad.len() - 1 } else { at.index(bad.len()) };
            bad[i] ^= mask;
            let got = Manifest::decode(&bad);
            prop_assert!(got.is_err(), "byte {} ^ {:#x} read as {:?}", i, mask, got);
        }

        /// Every truncation is detected, the cut of the final newline
        /// alone included.
        #[test]
        fn a_truncated_manifest_is_detected(m in arb_manifest()) {
            let bytes = m.encode();
            for cut in 0..bytes.len() {
                prop_assert!(Manifest::decode(&bytes[..cut]).is_err(), "cut at {}", cut);
            }
        }
    }

    /// A manifest without repair marks is written as version 1, as before
    /// incremental repair, and one with marks as version 2; a version 1
    /// manifest with a repair line is refused.
    #[test]
    fn repair_marks_make_version_two_and_only_there() {
        let mut m = Manifest {
            live: vec![1, 2],
            next_generation: 3,
            ..Manifest::default()
        };
        let plain = String::from_utf8(m.encode()).unwrap();
        assert!(plain.starts_with("varve-manifest 1\n"), "{plain}");
        m.repair.insert(
            1,
            RepairMark::Repaired {
                at_ms: 1_700_000_000_000,
            },
        );
        m.repair.insert(2, RepairMark::Pending { session: 0xab });
        let marked = String::from_utf8(m.encode()).unwrap();
        assert!(marked.starts_with("varve-manifest 2\n"), "{marked}");
        assert!(marked.contains("\nrepaired 1 1700000000000\n"), "{marked}");
        assert!(
            marked.contains(&format!("\npending 2 {:032x}\n", 0xab)),
            "{marked}"
        );
        assert_eq!(Manifest::decode(marked.as_bytes()).unwrap(), m);
        let body = marked.replacen("varve-manifest 2", "varve-manifest 1", 1);
        let body = &body[..body.rfind("crc ").unwrap()];
        let v1 = format!("{body}crc {}\n", crc32fast::hash(body.as_bytes()));
        assert!(Manifest::decode(v1.as_bytes()).is_err());
        for bad in ["pending 2 ab", "repaired 1 x", "repaired 1 5 6"] {
            let body = format!("varve-manifest 2\nnext 3\nlive 1\nlive 2\n{bad}\n");
            let text = format!("{body}crc {}\n", crc32fast::hash(body.as_bytes()));
            assert!(Manifest::decode(text.as_bytes()).is_err(), "{bad}");
        }
    }

    /// docs/format/manifest.md: lines are `\n`-terminated, and a damaged
    /// or truncated manifest stops the table from opening. Found by
    /// property testing: the `crc` line was trimmed before it was parsed,
    /// so a manifest cut by its final newline, or with that newline
    /// changed to other whitespace, was accepted.
    #[test]
    fn the_crc_line_must_end_in_its_newline() {
        let m = Manifest {
            live: vec![1],
            next_generation: 2,
            ..Manifest::default()
        };
        let bytes = m.encode();
        assert_eq!(bytes.last(), Some(&b'\n'));
        assert!(Manifest::decode(&bytes[..bytes.len() - 1]).is_err(), "cut");
        let mut changed = bytes.clone();
        *changed.last_mut().unwrap() = b' ';
        assert!(Manifest::decode(&changed).is_err(), "changed");
    }
}
