use super::*;
use crate::paxos::test_support::{key, row, tables};

fn forward(decider: Bytes) -> Forward {
    Forward {
        table: 7,
        key: key(),
        serial: Consistency::LocalSerial,
        commit: Consistency::Quorum,
        now_seconds: 1_700_000_000,
        decider,
    }
}

fn every_answer() -> Vec<ForwardAnswer> {
    let wt = WriteTimeout {
        consistency: Consistency::Serial,
        received: 1,
        block_for: 2,
        write_type: WriteType::Cas,
    };
    vec![
        ForwardAnswer::Done {
            current: row(3, 1_000),
            applied: true,
            contention: 4,
        },
        ForwardAnswer::Done {
            current: Partition::default(),
            applied: false,
            contention: 0,
        },
        ForwardAnswer::Failed(DataError::Unavailable(Unavailable {
            consistency: Consistency::LocalSerial,
            required: 2,
            alive: 1,
            dc: None,
        })),
        ForwardAnswer::Failed(DataError::Unavailable(Unavailable {
            consistency: Consistency::EachQuorum,
            required: 2,
            alive: 1,
            dc: Some("dc2".into()),
        })),
        ForwardAnswer::Failed(DataError::WriteTimeout(WriteTimeout {
            consistency: Consistency::Quorum,
            write_type: WriteType::Simple,
            ..wt.clone()
        })),
        ForwardAnswer::Failed(DataError::CasWriteUnknown(wt)),
        ForwardAnswer::Failed(DataError::ReadTimeout(ReadTimeout {
            consistency: Consistency::Serial,
            received: 1,
            block_for: 2,
            data_present: true,
        })),
        ForwardAnswer::Failed(DataError::ReadFailure("bad file".into())),
        ForwardAnswer::Failed(DataError::WriteFailure("disk full".into())),
        ForwardAnswer::Failed(DataError::Overloaded("memtables full".into())),
        ForwardAnswer::Failed(DataError::Conflict("schema moved".into())),
        ForwardAnswer::Failed(DataError::UnknownTable("ks.t".into())),
        ForwardAnswer::Failed(DataError::Server("bug".into())),
        ForwardAnswer::Declined("unknown column v2".into()),
    ]
}

#[test]
fn a_forward_round_trips() {
    let f = forward(Bytes::from_static(b"conditions and update"));
    assert_eq!(decode_forward(&encode_forward(&f)), Ok(f));
}

#[test]
fn every_answer_round_trips() {
    for a in every_answer() {
        let decoded = decode_answer(&encode_answer(&a), 7, &tables());
        assert_eq!(decoded, Ok(a));
    }
}

/// Every cut of every payload is refused, never a panic or a wrong value.
#[test]
fn every_cut_is_refused() {
    let mut payloads = vec![encode_forward(&forward(Bytes::from_static(b"d")))];
    payloads.extend(every_answer().iter().map(encode_answer));
    for payload in payloads {
        for n in 0..payload.len() {
            let cut = payload.slice(..n);
            assert!(decode_forward(&cut).is_err() || n == payload.len());
            assert!(decode_answer(&cut, 7, &tables()).is_err(), "cut at {n}");
        }
    }
}

/// The decider's limit, at N and N + 1.
#[test]
fn a_decider_of_max_forwarded_decider_bytes_passes_and_one_more_is_refused() {
    let at = forward(Bytes::from(vec![1u8; MAX_FORWARDED_DECIDER_BYTES]));
    assert_eq!(decode_forward(&encode_forward(&at)).as_ref(), Ok(&at));
    let over = forward(Bytes::from(vec![1u8; MAX_FORWARDED_DECIDER_BYTES + 1]));
    assert!(matches!(
        decode_forward(&encode_forward(&over)),
        Err(PayloadError::Malformed(_))
    ));
}

#[test]
fn a_forward_with_a_serial_level_that_is_not_serial_is_refused() {
    let mut f = forward(Bytes::new());
    f.serial = Consistency::Quorum;
    assert!(matches!(
        decode_forward(&encode_forward(&f)),
        Err(PayloadError::Malformed(m)) if m.contains("QUORUM")
    ));
}

#[test]
fn an_answer_for_a_table_this_node_does_not_know_is_refused() {
    let done = encode_answer(&every_answer()[0]);
    assert_eq!(
        decode_answer(&done, 8, &tables()),
        Err(PayloadError::UnknownTable(8))
    );
}

#[test]
fn an_unknown_answer_or_error_kind_is_refused() {
    assert!(decode_answer(&Bytes::from_static(&[9]), 7, &tables()).is_err());
    assert!(decode_answer(&Bytes::from_static(&[FAILED, 42]), 7, &tables()).is_err());
}
