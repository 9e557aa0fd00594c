use bytes::Bytes;

use super::*;
use crate::paxos::state::Proposal;
use crate::paxos::test_support::{cmp, key, row, OneTable};

fn b(micros: i64) -> Ballot {
    Ballot::new(micros, 0x8000_0000_0000_0001)
}

fn checked(ballot: i64, based_on: Option<i64>, digest: [u8; 16]) -> Checked {
    Checked {
        read: Prepare {
            ballot: b(ballot),
            table: 7,
            key: key(),
            now_seconds: 1_700_000_000,
            slices: vec![Slice::all(&cmp())],
        },
        based_on: based_on.map(b),
        digest,
        update: Some(row(4, ballot)),
    }
}

/// A replica that holds commit 10 and promised 12: a proposal at 20 based
/// on commit 10 with its data's digest passes; each check fails alone.
#[test]
fn each_check_refuses_alone_and_all_pass_together() {
    let data = row(1, 10);
    let slices = vec![Slice::all(&cmp())];
    let digest = data_digest(Some(&data), &slices, 1_700_000_000);
    let state = PaxosState {
        promised: Some(b(12)),
        accepted: None,
        committed: Some(Proposal {
            ballot: b(10),
            update: data.clone(),
        }),
    };
    assert_eq!(
        check(&state, &checked(20, Some(10), digest), &digest),
        Ok(())
    );
    // Promise: equal is allowed (the coordinator's own), newer is not.
    assert_eq!(
        check(&state, &checked(12, Some(10), digest), &digest),
        Ok(())
    );
    assert_eq!(
        check(&state, &checked(11, Some(10), digest), &digest),
        Err(Refusal::Promise(b(12)))
    );
    // An accepted proposal past the commit: unfinished.
    let mut open = state.clone();
    open.accepted = Some(Proposal {
        ballot: b(11),
        update: row(2, 11),
    });
    assert_eq!(
        check(&open, &checked(20, Some(10), digest), &digest),
        Err(Refusal::Unfinished)
    );
    // One the commit settled is not.
    open.accepted = Some(Proposal {
        ballot: b(9),
        update: row(2, 9),
    });
    assert_eq!(
        check(&open, &checked(20, Some(10), digest), &digest),
        Ok(())
    );
    // Another latest commit, or none where one was seen.
    assert_eq!(
        check(&state, &checked(20, Some(9), digest), &digest),
        Err(Refusal::Commit(Some(b(10))))
    );
    assert_eq!(
        check(
            &PaxosState::default(),
            &checked(20, Some(10), digest),
            &digest
        ),
        Err(Refusal::Commit(None))
    );
    assert_eq!(
        check(&state, &checked(20, None, digest), &digest),
        Err(Refusal::Commit(Some(b(10))))
    );
    // Other data.
    let other = data_digest(Some(&row(1, 11)), &slices, 1_700_000_000);
    assert_eq!(
        check(&state, &checked(20, Some(10), digest), &other),
        Err(Refusal::Data)
    );
    // Nothing anywhere: passes against the empty state.
    let empty = data_digest(None, &slices, 1_700_000_000);
    assert_eq!(
        check(&PaxosState::default(), &checked(20, None, empty), &empty),
        Ok(())
    );
}

#[test]
fn the_digest_sees_live_cells_and_not_what_they_shadow() {
    let slices = vec![Slice::all(&cmp())];
    let now = 1_700_000_000;
    let one = data_digest(Some(&row(1, 10)), &slices, now);
    assert_eq!(one, data_digest(Some(&row(1, 10)), &slices, now));
    assert_ne!(
        one,
        data_digest(Some(&row(1, 11)), &slices, now),
        "timestamp"
    );
    assert_ne!(one, data_digest(Some(&row(2, 10)), &slices, now), "value");
    assert_ne!(one, data_digest(None, &slices, now), "absent");
    // An older value the live one shadows, merged in: the same live rows.
    let mut shadowed = row(1, 10);
    shadowed.merge(row(9, 5));
    assert_eq!(one, data_digest(Some(&shadowed), &slices, now));
    // A partition deletion older than the row hides nothing.
    let mut deleted_before = row(1, 10);
    deleted_before.deletion = varve_types::data::DeletionTime {
        marked_for_delete_at: 3,
        local_deletion_time: now - 10,
    };
    assert_eq!(one, data_digest(Some(&deleted_before), &slices, now));
    // One newer than it hides the row: the empty partition's digest.
    let mut deleted_after = row(1, 10);
    deleted_after.deletion = varve_types::data::DeletionTime {
        marked_for_delete_at: 30,
        local_deletion_time: now - 10,
    };
    assert_eq!(
        data_digest(Some(&deleted_after), &slices, now),
        data_digest(None, &slices, now)
    );
}

#[test]
fn payloads_round_trip_and_every_cut_is_refused() {
    let tables = OneTable(cmp());
    let digest = [7u8; 16];
    let mut check_only = checked(20, None, digest);
    check_only.update = None;
    for c in [checked(20, Some(10), digest), check_only] {
        let bytes = encode_checked(&c);
        assert_eq!(decode_checked(&bytes, &tables).expect("decodes"), c);
        for cut in 0..bytes.len() {
            assert!(
                decode_checked(&bytes.slice(..cut), &tables).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(decode_checked(&Bytes::from(longer), &tables).is_err());
    }
    let mut unknown = checked(20, None, digest);
    unknown.read.table = 8;
    assert!(matches!(
        decode_checked(&encode_checked(&unknown), &tables),
        Err(PayloadError::UnknownTable(8))
    ));
    for answer in [
        Ok(()),
        Err(Refusal::Promise(b(3))),
        Err(Refusal::Unfinished),
        Err(Refusal::Commit(Some(b(4)))),
        Err(Refusal::Commit(None)),
        Err(Refusal::Data),
    ] {
        let bytes = encode_check_answer(answer);
        assert_eq!(decode_check_answer(&bytes).expect("decodes"), answer);
        for cut in 0..bytes.len() {
            assert!(
                decode_check_answer(&bytes.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
    }
    assert!(decode_check_answer(&Bytes::from_static(&[5])).is_err());
    assert!(
        decode_check_answer(&Bytes::from_static(&[3, 2])).is_err(),
        "presence 2"
    );
}
