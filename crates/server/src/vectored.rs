//! Writes [`Spliced`] socket bytes with vectored writes (`writev`): the
//! frame bytes and the long values between them go out in one system call
//! per round, without first being copied into one buffer. The standard
//! library passes at most the system's `IOV_MAX` pieces (1024 on Linux)
//! to one call; the loop here sends the rest in later rounds, as it does
//! the remainder of a short write.

use std::io::IoSlice;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use varve_protocol::Spliced;

/// Writes every byte of `frames` to `socket`, in order, and flushes it:
/// a TLS stream may still hold encrypted bytes once it took the last
/// plain ones (the socket was full), and they must not wait for the next
/// response (a plain socket's flush does nothing).
pub async fn write_spliced<W: AsyncWrite + Unpin>(
    socket: &mut W,
    frames: &Spliced,
) -> std::io::Result<()> {
    write_all_pieces(socket, frames).await?;
    socket.flush().await
}

async fn write_all_pieces<W: AsyncWrite + Unpin>(
    socket: &mut W,
    frames: &Spliced,
) -> std::io::Result<()> {
    if frames.values.is_empty() {
        return socket.write_all(&frames.bytes).await;
    }
    let mut slices = frames.io_slices();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = socket.write_vectored(rest).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    /// Frame bytes with `n` values spliced between them, each value and
    /// each gap distinct, so a piece sent twice, dropped or out of order
    /// changes what arrives.
    fn frames(n: usize, value_len: usize) -> Spliced {
        let mut out = Spliced::default();
        for i in 0..n {
            out.bytes.extend_from_slice(&(i as u32).to_be_bytes());
            let value = vec![(i % 251) as u8; value_len + i % 7];
            out.values.push((out.bytes.len(), Bytes::from(value)));
        }
        out.bytes.extend_from_slice(b"end");
        out
    }

    /// Over a real TCP connection, every byte arrives in order: with more
    /// pieces than one `writev` takes (`IOV_MAX` is 1024: 511, 512 and 513
    /// values make 1023, 1025 and 1027 pieces), with values large enough
    /// that the socket buffer fills and writes come back short, and with
    /// no value at all.
    #[tokio::test]
    async fn every_byte_arrives_in_order_over_tcp() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        for (n, value_len) in [(0, 0), (511, 3), (512, 3), (513, 3), (64, 256 * 1024)] {
            let frames = frames(n, value_len);
            let want = frames.to_vec();
            let (sent, received) = tokio::join!(
                async {
                    let mut socket = TcpStream::connect(addr).await.unwrap();
                    write_spliced(&mut socket, &frames).await.unwrap();
                },
                async {
                    let (mut socket, _) = listener.accept().await.unwrap();
                    let mut got = vec![0; want.len()];
                    socket.read_exact(&mut got).await.unwrap();
                    got
                }
            );
            let () = sent;
            assert_eq!(received.len(), want.len(), "{n} values");
            assert!(received == want, "{n} values of {value_len} bytes");
        }
    }
}
