//! The batch size thresholds (`query::batch_size`), at their limits: a
//! batch over two partitions of exactly 5 KiB of data passes silently, one
//! byte more warns, exactly 50 KiB passes with a warning, one byte more is
//! refused and writes nothing; a batch of one partition is never checked.

mod common;

use common::Db;
use varve_query::batch_size::{BATCH_SIZE_FAIL_THRESHOLD, BATCH_SIZE_WARN_THRESHOLD};
use varve_query::QueryError;

/// What an INSERT of a `len`-byte text adds: the value, the clustering
/// int (4), the cell's timestamp (8) and the row marker's (8).
const ROW_OVERHEAD: u64 = 4 + 8 + 8;

/// A batch of rows of the given value lengths, one partition each unless
/// `one_partition`.
fn batch(lens: &[u64], one_partition: bool) -> String {
    let inserts: Vec<String> = lens
        .iter()
        .enumerate()
        .map(|(i, len)| {
            let p = if one_partition { 0 } else { i };
            format!(
                "INSERT INTO t (p, c, v) VALUES ({p}, {i}, '{}');",
                "a".repeat(*len as usize)
            )
        })
        .collect();
    format!("BEGIN BATCH {} APPLY BATCH", inserts.join(" "))
}

/// Two rows whose data adds up to `total` bytes.
fn two_rows(total: u64) -> [u64; 2] {
    let first = total / 2 - ROW_OVERHEAD;
    [first, total - 2 * ROW_OVERHEAD - first]
}

#[test]
fn batches_warn_past_5_kib_and_fail_past_50_kib() {
    let mut db = Db::new();
    db.ok("CREATE TABLE t (p int, c int, v text, PRIMARY KEY (p, c))");
    let warned = |db: &mut Db, total: u64| db.ok(&batch(&two_rows(total), false)).warnings;
    assert!(
        warned(&mut db, BATCH_SIZE_WARN_THRESHOLD).is_empty(),
        "N passes silently"
    );
    let w = warned(&mut db, BATCH_SIZE_WARN_THRESHOLD + 1);
    assert_eq!(
        w,
        [format!(
            "Batch for [ks.t] is of size {}, exceeding specified threshold of {} by 1.",
            BATCH_SIZE_WARN_THRESHOLD + 1,
            BATCH_SIZE_WARN_THRESHOLD
        )]
    );
    assert_eq!(
        warned(&mut db, BATCH_SIZE_FAIL_THRESHOLD).len(),
        1,
        "N passes, with the warning"
    );
    db.ok("TRUNCATE t");
    let over = batch(&two_rows(BATCH_SIZE_FAIL_THRESHOLD + 1), false);
    assert!(matches!(db.err(&over), QueryError::Invalid(m) if m == "Batch too large"));
    assert!(
        db.rows("SELECT p FROM t").is_empty(),
        "a refused batch writes nothing"
    );
    // One partition: never checked, whatever its size.
    let one = db.ok(&batch(&two_rows(BATCH_SIZE_FAIL_THRESHOLD + 1), true));
    assert!(one.warnings.is_empty());
}
