//! Round trips of the metadata codec, its limits at N and N+1, and
//! decoding arbitrary bytes without a panic.

use proptest::prelude::*;

use super::*;
use crate::metadata::state::tests::node;
use crate::metadata::state::{apply, Entry};

fn sample() -> ClusterMetadata {
    let mut m = ClusterMetadata::default();
    let create = Command::CreateCluster {
        cluster_name: "Test Cluster".to_string(),
        cluster_id: ClusterId([7; 16]),
        node: node(1, &[-5, 10]),
    };
    apply(&mut m, 1, &Entry::Command(create));
    let mut second = node(2, &[20]);
    second.rpc_addr = None;
    let join = Command::Join {
        node: second,
        expected_epoch: 1,
    };
    apply(&mut m, 2, &Entry::Command(join));
    let schema = Command::SchemaChange {
        schema: Bytes::from_static(b"schema"),
        expected_epoch: 2,
    };
    apply(&mut m, 3, &Entry::Command(schema));
    apply(&mut m, 4, &Entry::Voters([HostId([1; 16])].into()));
    m
}

#[test]
fn metadata_round_trips() {
    let m = sample();
    assert_eq!(decode_metadata(&encode_metadata(&m)), Ok(m));
    let empty = ClusterMetadata::default();
    assert_eq!(decode_metadata(&encode_metadata(&empty)), Ok(empty));
}

#[test]
fn every_command_round_trips() {
    let commands = [
        Command::CreateCluster {
            cluster_name: "c".to_string(),
            cluster_id: ClusterId([1; 16]),
            node: node(1, &[1, 2]),
        },
        Command::Join {
            node: node(3, &[]),
            expected_epoch: u64::MAX,
        },
        Command::SchemaChange {
            schema: Bytes::from_static(&[0, 1, 2]),
            expected_epoch: 9,
        },
        Command::SetVoters {
            voters: [HostId([1; 16]), HostId([4; 16])].into(),
        },
        Command::Leave {
            host: HostId([7; 16]),
            expected_epoch: 12,
        },
    ];
    for command in commands {
        assert_eq!(decode_command(&encode_command(&command)), Ok(command));
    }
}

#[test]
fn a_tampered_schema_version_is_refused() {
    let mut bytes = encode_metadata(&sample());
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert_eq!(
        decode_metadata(&bytes),
        Err(WireError::BadValue("schema version"))
    );
}

#[test]
fn tokens_per_node_at_the_limit_and_over() {
    let tokens: Vec<i64> = (0..MAX_TOKENS_PER_NODE as i64).collect();
    let at = Command::Join {
        node: node(1, &tokens),
        expected_epoch: 0,
    };
    assert_eq!(decode_command(&encode_command(&at)), Ok(at));
    let over: Vec<i64> = (0..=MAX_TOKENS_PER_NODE as i64).collect();
    let over = Command::Join {
        node: node(1, &over),
        expected_epoch: 0,
    };
    assert!(matches!(
        decode_command(&encode_command(&over)),
        Err(WireError::TooLong { what: "tokens", .. })
    ));
}

#[test]
fn schema_at_the_limit_and_over() {
    let at = Command::SchemaChange {
        schema: Bytes::from(vec![b'x'; MAX_SCHEMA_BYTES]),
        expected_epoch: 0,
    };
    assert_eq!(decode_command(&encode_command(&at)), Ok(at));
    let over = Command::SchemaChange {
        schema: Bytes::from(vec![b'x'; MAX_SCHEMA_BYTES + 1]),
        expected_epoch: 0,
    };
    assert!(matches!(
        decode_command(&encode_command(&over)),
        Err(WireError::TooLong { what: "schema", .. })
    ));
}

#[test]
fn location_names_at_the_limit_and_over() {
    let mut at = node(1, &[]);
    at.dc = "d".repeat(MAX_LOCATION_NAME_BYTES);
    let mut out = Vec::new();
    put_node(&mut out, &at);
    assert_eq!(read_node(&mut Reader::new(&out)), Ok(at.clone()));
    at.dc.push('d');
    out.clear();
    put_node(&mut out, &at);
    assert!(read_node(&mut Reader::new(&out)).is_err());
}

#[test]
fn nodes_at_the_limit_and_over() {
    let hosts = |n: usize| -> BTreeSet<HostId> {
        (0..n)
            .map(|i| {
                let mut id = [0u8; 16];
                id[..8].copy_from_slice(&(i as u64).to_be_bytes());
                HostId(id)
            })
            .collect()
    };
    let at = Command::SetVoters {
        voters: hosts(MAX_NODES),
    };
    assert_eq!(decode_command(&encode_command(&at)), Ok(at));
    let over = Command::SetVoters {
        voters: hosts(MAX_NODES + 1),
    };
    assert!(decode_command(&encode_command(&over)).is_err());
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_metadata(&bytes);
        let _ = decode_command(&bytes);
    }

    #[test]
    fn every_truncation_of_metadata_fails(cut in 0usize..200) {
        let bytes = encode_metadata(&sample());
        let cut = cut.min(bytes.len() - 1);
        prop_assert!(decode_metadata(&bytes[..cut]).is_err());
    }
}
