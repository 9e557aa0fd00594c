//! Byte layouts of HELLO, HELLO_ACK and HELLO_REJECT (fixed forever).

use super::{ClusterId, ConnectionKind, Hello, HelloAck, HelloReject, HostId, RejectReason};
use crate::net::limits::{MAX_CLUSTER_NAME_BYTES, MAX_FAILURE_MESSAGE_BYTES, MAX_RELEASE_BYTES};
use crate::net::wire::{
    lossy_utf8, put_address, put_bytes, read_address, truncate_utf8, Reader, WireError,
};

impl Hello {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        out.push(self.min_version);
        out.push(self.max_version);
        out.push(self.kind as u8);
        put_bytes(
            &mut out,
            truncate_utf8(&self.cluster_name, MAX_CLUSTER_NAME_BYTES).as_bytes(),
        );
        out.extend_from_slice(&self.cluster_id.0);
        out.extend_from_slice(&self.host_id.0);
        out.extend_from_slice(&self.generation.to_be_bytes());
        put_address(&mut out, self.address);
        put_bytes(
            &mut out,
            truncate_utf8(&self.release, MAX_RELEASE_BYTES).as_bytes(),
        );
        out
    }

    pub fn decode(payload: &[u8]) -> Result<Hello, WireError> {
        let mut r = Reader::new(payload);
        let min_version = r.u8()?;
        let max_version = r.u8()?;
        if min_version > max_version {
            return Err(WireError::BadValue("version range"));
        }
        let kind = match r.u8()? {
            0 => ConnectionKind::Small,
            1 => ConnectionKind::Bulk,
            _ => return Err(WireError::BadValue("connection kind")),
        };
        let name = r.bytes("cluster name", MAX_CLUSTER_NAME_BYTES)?;
        let cluster_name = std::str::from_utf8(name)
            .map_err(|_| WireError::BadValue("cluster name"))?
            .to_string();
        let hello = Hello {
            min_version,
            max_version,
            kind,
            cluster_name,
            cluster_id: ClusterId(r.array()?),
            host_id: HostId(r.array()?),
            generation: r.i64()?,
            address: read_address(&mut r)?,
            release: lossy_utf8(r.bytes("release", MAX_RELEASE_BYTES)?, MAX_RELEASE_BYTES),
        };
        r.finish()?;
        Ok(hello)
    }
}

impl HelloAck {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(41);
        out.push(self.version);
        out.extend_from_slice(&self.host_id.0);
        out.extend_from_slice(&self.cluster_id.0);
        out.extend_from_slice(&self.generation.to_be_bytes());
        out
    }

    pub fn decode(payload: &[u8]) -> Result<HelloAck, WireError> {
        let mut r = Reader::new(payload);
        let ack = HelloAck {
            version: r.u8()?,
            host_id: HostId(r.array()?),
            cluster_id: ClusterId(r.array()?),
            generation: r.i64()?,
        };
        r.finish()?;
        Ok(ack)
    }
}

impl HelloReject {
    pub fn encode(&self) -> Vec<u8> {
        let message = truncate_utf8(&self.message, MAX_FAILURE_MESSAGE_BYTES);
        let mut out = Vec::with_capacity(3 + message.len());
        out.push(self.reason.0);
        put_bytes(&mut out, message.as_bytes());
        out
    }

    pub fn decode(payload: &[u8]) -> Result<HelloReject, WireError> {
        let mut r = Reader::new(payload);
        let reason = RejectReason(r.u8()?);
        let message = r.bytes("reject message", MAX_FAILURE_MESSAGE_BYTES)?;
        r.finish()?;
        Ok(HelloReject {
            reason,
            message: lossy_utf8(message, MAX_FAILURE_MESSAGE_BYTES),
        })
    }
}
